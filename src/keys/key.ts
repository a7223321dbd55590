// Keys are fixed-size byte strings. REST paths spell them as a
// GUID, a 0x hex byte string or a decimal integer; gRPC
// sends raw bytes. Either way a shorter key is zero-padded on the right and a
// longer one is accepted only if its extra bytes are all zero.

/** A key that cannot be used; the message is bob's, for the 400 response. */
export class KeyError extends Error {
  override readonly name = 'KeyError';
}

const GUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const SIMPLE_GUID = /^[0-9a-fA-F]{32}$/;
const HEX = /^[0-9a-fA-F]*$/;
const DECIMAL = /^[0-9]+$/;

/** Parses a REST `{key}`, in bob's order of precedence, into keySize bytes. */
export function parseRestKey(text: string, keySize: number): Buffer {
  if (text.length <= 15 && DECIMAL.test(text)) return smallDecimalKey(Number(text), keySize);
  if (text.length >= 2 && text.startsWith('{') && text.endsWith('}')) {
    return normalizeKey(guidBytes(text.slice(1, -1)), keySize);
  }
  if (text.includes('-')) return normalizeKey(guidBytes(text), keySize);
  if (text.startsWith('0x')) return normalizeKey(hexBytes(text.slice(2)), keySize);
  if (DECIMAL.test(text)) return normalizeKey(decimalBytes(text), keySize);
  throw new KeyError('Invalid key format');
}

/** Pads or trims raw key bytes to keySize; extra bytes must be zero. */
export function normalizeKey(bytes: Uint8Array, keySize: number): Buffer {
  if (!Number.isInteger(keySize) || keySize <= 0) throw new RangeError(`invalid key size ${keySize}`);
  for (let i = keySize; i < bytes.length; i++) {
    if (bytes[i] !== 0) throw new KeyError('Key overflow');
  }
  const key = Buffer.alloc(keySize);
  key.set(bytes.subarray(0, keySize));
  return key;
}

/** Uppercase hex of the bytes in storage order, as bob displays keys (`KeyNotFound E803000000000000`). */
export function keyToHex(key: Uint8Array): string {
  return Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('hex').toUpperCase();
}

/** The key as an unsigned little-endian integer in decimal: the REST form of integer keys. */
export function keyToDecimal(key: Uint8Array): string {
  let n = 0n;
  for (let i = key.length - 1; i >= 0; i--) n = (n << 8n) | BigInt(key[i]);
  return n.toString();
}

// The 16 bytes in the order they are written (as the uuid crate's as_bytes()).
function guidBytes(text: string): Buffer {
  if (GUID.test(text)) return Buffer.from(text.replaceAll('-', ''), 'hex');
  // Only reachable through braces: `{0100…00}` without hyphens.
  if (SIMPLE_GUID.test(text)) return Buffer.from(text, 'hex');
  throw new KeyError(`GUID parse error: "${text}" is not xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx in hexadecimal digits`);
}

// A byte string in written order; with an odd number of digits the leading
// digit alone is the first byte (`0x123` is 01 23). `0x` alone is the zero key.
function hexBytes(digits: string): Buffer {
  if (!HEX.test(digits)) throw new KeyError('Hex parse error: non hexadecimal symbol in parameter');
  return Buffer.from(digits.length % 2 === 1 ? `0${digits}` : digits, 'hex');
}

// Up to 15 digits, below 2^53: the usual integer key, without a BigInt.
function smallDecimalKey(n: number, keySize: number): Buffer {
  if (!Number.isInteger(keySize) || keySize <= 0) throw new RangeError(`invalid key size ${keySize}`);
  const key = Buffer.allocUnsafe(keySize).fill(0);
  for (let i = 0; n > 0; i++) {
    if (i === keySize) throw new KeyError('Key overflow');
    key[i] = n % 256;
    n = Math.floor(n / 256);
  }
  return key;
}

// An unsigned integer of any size, stored little-endian.
function decimalBytes(digits: string): Buffer {
  let n = BigInt(digits);
  const bytes: number[] = [];
  while (n > 0n) {
    bytes.push(Number(n & 0xffn));
    n >>= 8n;
  }
  return Buffer.from(bytes);
}
