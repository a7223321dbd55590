// The owner hash in partition and blob names (`<ts>_<hash>`,
// `bob_<hash>.0.blob`). It has to be bit-for-bit bob's so
// that bob-tools can copy partitions between bob and Oyster nodes: SHA-256 of
// the owner identifier (the node name, or "a" + the storing node's name for
// alien partitions), encoded with bob's base64-like scheme, truncated.
import { createHash } from 'node:crypto';

// 64 symbols in ASCII order: '+', '-', digits, upper case, lower case.
const ALPHABET = '+-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** The first `chars` characters (pearl.hash_chars_count) of the owner hash. */
export function ownerHash(identifier: string, chars = 10): string {
  const digest = createHash('sha256').update(identifier, 'utf8').digest();
  let out = '';
  for (let i = 0; i < digest.length && out.length < chars; i += 3) {
    const b0 = digest[i];
    const b1 = i + 1 < digest.length ? digest[i + 1] : undefined;
    const b2 = i + 2 < digest.length ? digest[i + 2] : undefined;
    out += ALPHABET[b0 >> 2];
    out += ALPHABET[((b0 << 4) & 0x30) | ((b1 ?? 0) >> 4)];
    // Not standard base64: bob takes the low nibble of b1 and bits 7..6 of b2
    // shifted into bits 5..4, and this must be reproduced exactly.
    if (b1 !== undefined) out += ALPHABET[(b1 & 0x0f) | (((b2 ?? 0) >> 2) & 0x30)];
    if (b2 !== undefined) out += ALPHABET[b2 & 0x3f];
  }
  return out.slice(0, chars);
}
