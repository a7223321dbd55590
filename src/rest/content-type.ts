// Content-Type of a stored value, guessed from its first bytes as bob does
// with the `infer` crate; values that match nothing are octet streams.
interface Signature {
  type: string;
  offset?: number;
  bytes: number[];
}

const SIGNATURES: Signature[] = [
  { type: 'image/png', bytes: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] },
  { type: 'image/jpeg', bytes: [0xff, 0xd8, 0xff] },
  { type: 'image/gif', bytes: [0x47, 0x49, 0x46, 0x38] },
  { type: 'image/webp', offset: 8, bytes: [0x57, 0x45, 0x42, 0x50] },
  { type: 'image/bmp', bytes: [0x42, 0x4d] },
  { type: 'image/tiff', bytes: [0x49, 0x49, 0x2a, 0x00] },
  { type: 'image/tiff', bytes: [0x4d, 0x4d, 0x00, 0x2a] },
  { type: 'image/x-icon', bytes: [0x00, 0x00, 0x01, 0x00] },
  { type: 'application/pdf', bytes: [0x25, 0x50, 0x44, 0x46] },
  { type: 'application/zip', bytes: [0x50, 0x4b, 0x03, 0x04] },
  { type: 'application/gzip', bytes: [0x1f, 0x8b] },
  { type: 'application/x-bzip2', bytes: [0x42, 0x5a, 0x68] },
  { type: 'application/x-xz', bytes: [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00] },
  { type: 'application/zstd', bytes: [0x28, 0xb5, 0x2f, 0xfd] },
  { type: 'application/x-7z-compressed', bytes: [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c] },
  { type: 'application/wasm', bytes: [0x00, 0x61, 0x73, 0x6d] },
  { type: 'application/x-executable', bytes: [0x7f, 0x45, 0x4c, 0x46] },
  { type: 'audio/mpeg', bytes: [0x49, 0x44, 0x33] },
  { type: 'audio/ogg', bytes: [0x4f, 0x67, 0x67, 0x53] },
  { type: 'audio/x-flac', bytes: [0x66, 0x4c, 0x61, 0x43] },
  { type: 'audio/x-wav', offset: 8, bytes: [0x57, 0x41, 0x56, 0x45] },
  { type: 'video/mp4', offset: 4, bytes: [0x66, 0x74, 0x79, 0x70] },
  { type: 'video/webm', bytes: [0x1a, 0x45, 0xdf, 0xa3] },
];

// Signatures by the byte at their offset: a value is compared only with the
// few whose first byte it has (every GET answer is sniffed).
const BY_OFFSET_BYTE = new Map<number, Array<Array<{ index: number; s: Signature }>>>();
SIGNATURES.forEach((s, index) => {
  const off = s.offset ?? 0;
  let table = BY_OFFSET_BYTE.get(off);
  if (!table) BY_OFFSET_BYTE.set(off, (table = Array.from({ length: 256 }, () => [])));
  table[s.bytes[0]].push({ index, s });
});

export function sniffContentType(value: Buffer): string {
  let best: Signature | null = null;
  let bestIndex = SIGNATURES.length;
  for (const [off, table] of BY_OFFSET_BYTE) {
    if (value.length <= off) continue;
    for (const { index, s } of table[value[off]]) {
      if (index >= bestIndex || value.length < off + s.bytes.length) continue;
      let match = true;
      for (let i = 1; i < s.bytes.length && match; i++) match = value[off + i] === s.bytes[i];
      if (match) {
        best = s;
        bestIndex = index;
      }
    }
  }
  return best?.type ?? 'application/octet-stream';
}
