// Byte sizes as bob reads them (ubyte's ByteUnit): an
// integer number of bytes, or a string `<number>[ ]<suffix>` such as `8 GiB`,
// `100 mb`, `1.5GiB` or `1000000`.

const UNITS: ReadonlyMap<string, bigint> = new Map([
  ['b', 1n],
  ['kb', 1000n ** 1n],
  ['mb', 1000n ** 2n],
  ['gb', 1000n ** 3n],
  ['tb', 1000n ** 4n],
  ['pb', 1000n ** 5n],
  ['eb', 1000n ** 6n],
  ['kib', 1024n ** 1n],
  ['mib', 1024n ** 2n],
  ['gib', 1024n ** 3n],
  ['tib', 1024n ** 4n],
  ['pib', 1024n ** 5n],
  ['eib', 1024n ** 6n],
]);

const MAX = BigInt(Number.MAX_SAFE_INTEGER);
const U64_MAX = 2n ** 64n - 1n;
const U32_MAX = 2n ** 32n - 1n;

// Characters that may start or continue the suffix: the letters of the units and the space.
const SUFFIX_CHAR = /^[begikmpt ]$/i;

/** Parses a bob size; returns bytes. Throws with the reason when invalid. */
export function parseSize(value: unknown): number {
  if (typeof value === 'number' || typeof value === 'bigint') {
    if (typeof value === 'number' && !Number.isInteger(value)) {
      throw new Error('a size must be a whole number of bytes or a string like "100 MiB"');
    }
    return checked(BigInt(value));
  }
  if (typeof value !== 'string') throw new Error('a size must be a number of bytes or a string like "100 MiB"');
  return checked(parseSizeText(value));
}

function checked(bytes: bigint): number {
  if (bytes < 0n) throw new Error('a size cannot be negative');
  if (bytes > MAX) throw new Error(`size is too large (at most ${Number.MAX_SAFE_INTEGER} bytes)`);
  return Number(bytes);
}

function parseSizeText(text: string): bigint {
  if (text === '') throw new Error('size is empty');
  let dot: number | undefined;
  let suffix: number | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (suffix === undefined && c >= '0' && c <= '9') continue;
    if (c === '.' && dot === undefined && suffix === undefined) dot = i;
    else if (SUFFIX_CHAR.test(c)) suffix ??= i;
    else throw new Error(`invalid character ${JSON.stringify(c)} at ${i} in size "${text}"`);
  }
  if (dot === 0 || suffix === 0) throw new Error(`size "${text}" must start with a number`);

  const unitName = suffix === undefined ? 'b' : text.slice(suffix).trimStart();
  const unit = UNITS.get(unitName.toLowerCase());
  if (unit === undefined) {
    throw new Error(
      `unknown size unit "${unitName}" in "${text}", expected B, kB, KiB, MB, MiB, GB, GiB, TB, TiB, PB, PiB, EB or EiB`,
    );
  }
  const numberEnd = suffix ?? text.length;
  if (dot === undefined) return whole(text.slice(0, numberEnd), text) * unit;
  if (unit === 1n) throw new Error(`size "${text}" cannot have a fraction of a byte`);

  const fraction = text.slice(dot + 1, numberEnd);
  if (fraction === '' || fraction.length > 19 || BigInt(fraction) > U32_MAX) {
    throw new Error(`invalid fractional part in size "${text}"`);
  }
  // ubyte computes the fractional bytes in floating point and truncates; so do we.
  const fractionBytes = Math.floor((Number(fraction) / 10 ** fraction.length) * Number(unit));
  return whole(text.slice(0, dot), text) * unit + BigInt(fractionBytes);
}

function whole(digits: string, text: string): bigint {
  if (digits === '' || BigInt(digits) > U64_MAX) throw new Error(`invalid number in size "${text}"`);
  return BigInt(digits);
}
