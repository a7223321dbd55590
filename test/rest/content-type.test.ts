// Content-Type sniffing of stored values (src/rest/content-type.ts), as bob
// does with the infer crate: the first signature in its list that matches wins.
import t from 'tap';
import { sniffContentType } from '../../src/rest/content-type';

const bytes = (offset: number, sig: number[], size = 32, fill = 0xaa) => {
  const b = Buffer.alloc(Math.max(size, offset + sig.length), fill);
  b.set(sig, offset);
  return b;
};

t.test('each signature, at its offset, names its type', async (t) => {
  const cases: Array<[string, number, number[]]> = [
    ['image/png', 0, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]],
    ['image/jpeg', 0, [0xff, 0xd8, 0xff]],
    ['image/gif', 0, [0x47, 0x49, 0x46, 0x38]],
    ['image/webp', 8, [0x57, 0x45, 0x42, 0x50]],
    ['image/bmp', 0, [0x42, 0x4d]],
    ['image/tiff', 0, [0x49, 0x49, 0x2a, 0x00]],
    ['image/tiff', 0, [0x4d, 0x4d, 0x00, 0x2a]],
    ['image/x-icon', 0, [0x00, 0x00, 0x01, 0x00]],
    ['application/pdf', 0, [0x25, 0x50, 0x44, 0x46]],
    ['application/zip', 0, [0x50, 0x4b, 0x03, 0x04]],
    ['application/gzip', 0, [0x1f, 0x8b]],
    ['application/x-bzip2', 0, [0x42, 0x5a, 0x68]],
    ['application/x-xz', 0, [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]],
    ['application/zstd', 0, [0x28, 0xb5, 0x2f, 0xfd]],
    ['application/x-7z-compressed', 0, [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c]],
    ['application/wasm', 0, [0x00, 0x61, 0x73, 0x6d]],
    ['application/x-executable', 0, [0x7f, 0x45, 0x4c, 0x46]],
    ['audio/mpeg', 0, [0x49, 0x44, 0x33]],
    ['audio/ogg', 0, [0x4f, 0x67, 0x67, 0x53]],
    ['audio/x-flac', 0, [0x66, 0x4c, 0x61, 0x43]],
    ['audio/x-wav', 8, [0x57, 0x41, 0x56, 0x45]],
    ['video/mp4', 4, [0x66, 0x74, 0x79, 0x70]],
    ['video/webm', 0, [0x1a, 0x45, 0xdf, 0xa3]],
  ];
  for (const [type, offset, sig] of cases) {
    t.equal(sniffContentType(bytes(offset, sig)), type, `${type} at ${offset}`);
    t.equal(sniffContentType(bytes(offset, sig).subarray(0, offset + sig.length)), type, `${type}, nothing after it`);
    t.equal(sniffContentType(bytes(offset, sig).subarray(0, offset + sig.length - 1)), 'application/octet-stream', `${type} cut short`);
    const broken = bytes(offset, sig);
    broken[offset + sig.length - 1] ^= 0x01;
    t.equal(sniffContentType(broken), 'application/octet-stream', `${type} with its last byte changed`);
  }
});

t.test('the first matching signature in the list wins', async (t) => {
  // "BM" (bmp, offset 0) and "WEBP" at 8: webp comes first in the list.
  const both = bytes(8, [0x57, 0x45, 0x42, 0x50]);
  both.set([0x42, 0x4d], 0);
  t.equal(sniffContentType(both), 'image/webp');
  // "BM" and "GIF8" cannot both be at 0; "BM" with "ftyp" at 4: bmp comes first.
  const bmp = bytes(4, [0x66, 0x74, 0x79, 0x70]);
  bmp.set([0x42, 0x4d], 0);
  t.equal(sniffContentType(bmp), 'image/bmp');
  // "ftyp" at 4 (mp4) and "WAVE" at 8 (wav): wav comes first.
  const av = bytes(8, [0x57, 0x41, 0x56, 0x45]);
  av.set([0x66, 0x74, 0x79, 0x70], 4);
  t.equal(sniffContentType(av), 'audio/x-wav');
});

t.test('values that match nothing are octet streams', async (t) => {
  t.equal(sniffContentType(Buffer.alloc(0)), 'application/octet-stream', 'empty');
  t.equal(sniffContentType(Buffer.from([0x89])), 'application/octet-stream', 'one byte of a signature');
  for (let b = 0; b < 256; b++) t.equal(sniffContentType(Buffer.alloc(1024, b)), 'application/octet-stream', `1 KiB of 0x${b.toString(16)}`);
});
