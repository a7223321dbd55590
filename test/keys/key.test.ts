// REST key formats and key normalisation.
import t from 'tap';
import { KeyError, keyToDecimal, keyToHex, normalizeKey, parseRestKey } from '../../src/keys/key';

const hex = (b: Buffer) => b.toString('hex');
const zeros = (n: number) => '00'.repeat(n);

t.test('1, 0x01 and the GUID forms name the same 16-byte key', async (t) => {
  const expected = '01' + zeros(15);
  const forms = [
    '1',
    '0x01',
    '0x1',
    '0001',
    '01000000-0000-0000-0000-000000000000',
    '{01000000-0000-0000-0000-000000000000}',
    '{01000000000000000000000000000000}',
  ];
  for (const text of forms) {
    t.equal(hex(parseRestKey(text, 16)), expected, text);
  }
});

t.test('decimal keys are little-endian integers; hex keys are byte strings in written order', async (t) => {
  t.equal(hex(parseRestKey('256', 16)), hex(parseRestKey('0x0001', 16)));
  t.equal(hex(parseRestKey('256', 8)), '0001' + zeros(6));
  t.equal(hex(parseRestKey('1000', 8)), 'e803000000000000');
  t.equal(hex(parseRestKey('0xe803', 8)), 'e803000000000000');
  t.equal(hex(parseRestKey('0x03e8', 8)), '03e8000000000000', 'a different key from 1000');
  t.equal(hex(parseRestKey('0x0102', 8)), '0102000000000000');
  t.equal(hex(parseRestKey('0x123', 8)), '0123000000000000', 'odd length: the leading nibble is the first byte');
  t.equal(hex(parseRestKey('0xABCDEF', 8)), 'abcdef0000000000', 'upper case hex');
  t.equal(hex(parseRestKey('0x', 8)), zeros(8), '0x alone is the zero key');
  t.equal(hex(parseRestKey('0', 8)), zeros(8));
  t.equal(hex(parseRestKey('000000000000000000000000000000000000000001', 8)), '01' + zeros(7), 'leading zeros');
  t.equal(
    hex(parseRestKey('{6F9619FF-8B86-D011-B42D-00CF4FC964FF}', 16)),
    '6f9619ff8b86d011b42d00cf4fc964ff',
    'GUID bytes in textual order',
  );
  t.equal(hex(parseRestKey('6f9619ff-8b86-d011-b42d-00cf4fc964ff', 32)), '6f9619ff8b86d011b42d00cf4fc964ff' + zeros(16));
});

t.test('short decimal keys (read as a double) and long ones (as a BigInt) agree', async (t) => {
  // The little-endian bytes of n, computed independently.
  const reference = (n: bigint, size: number) => {
    const out = Buffer.alloc(size);
    for (let i = 0; n > 0n; i++, n >>= 8n) out[i] = Number(n & 0xffn);
    return out.toString('hex');
  };
  const samples = [0n, 1n, 255n, 256n, 65535n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 48n + 7n, 10n ** 14n, 10n ** 15n - 1n, 10n ** 15n, 2n ** 53n, 2n ** 64n - 1n];
  let x = 0x2545f491n;
  for (let i = 0; i < 200; i++) {
    x = (x * 6364136223846793005n + 1442695040888963407n) % 2n ** 64n;
    samples.push(x % 10n ** BigInt(1 + (i % 17)));
  }
  for (const n of samples) {
    for (const size of [8, 16, 32]) {
      t.equal(hex(parseRestKey(n.toString(), size)), reference(n, size), `${n} as ${size} bytes`);
    }
  }
  for (const [text, size, fits] of [
    ['255', 1, true],
    ['256', 1, false],
    ['65535', 2, true],
    ['65536', 2, false],
    ['4294967295', 4, true],
    ['4294967296', 4, false],
    ['999999999999999', 6, false],
    ['999999999999999', 7, true],
    ['000000000000256', 1, false],
  ] as const) {
    if (fits) t.equal(hex(parseRestKey(text, size)), reference(BigInt(text), size), `${text} fits ${size} byte(s)`);
    else t.throws(() => parseRestKey(text, size), new KeyError('Key overflow'), `${text} overflows ${size} byte(s)`);
  }
  const a = parseRestKey('7', 8);
  const b = parseRestKey('7', 8);
  a[0] = 9;
  t.equal(b[0], 7, 'every parse returns a key of its own');
});

t.test('bounds for 8-, 16- and 32-byte keys', async (t) => {
  const u64max = (2n ** 64n - 1n).toString();
  const u128max = (2n ** 128n - 1n).toString();
  const u256max = (2n ** 256n - 1n).toString();
  t.equal(hex(parseRestKey(u64max, 8)), 'ff'.repeat(8), 'max u64 fits 8');
  t.throws(() => parseRestKey((2n ** 64n).toString(), 8), new KeyError('Key overflow'), '2^64 overflows 8');
  t.equal(hex(parseRestKey((2n ** 64n).toString(), 16)), zeros(8) + '01' + zeros(7), '2^64 fits 16');
  t.equal(hex(parseRestKey(u128max, 16)), 'ff'.repeat(16), '2^128-1 fits 16');
  t.throws(() => parseRestKey((2n ** 128n).toString(), 16), /Key overflow/, '2^128 overflows 16');
  t.equal(hex(parseRestKey((2n ** 128n).toString(), 32)), zeros(16) + '01' + zeros(15), '2^128 fits 32');
  t.equal(hex(parseRestKey(u256max, 32)), 'ff'.repeat(32), '2^256-1 fits 32');
  t.throws(() => parseRestKey((2n ** 256n).toString(), 32), /Key overflow/, '2^256 overflows 32');
  t.throws(() => parseRestKey('9'.repeat(200), 32), /Key overflow/, 'any size of integer is parsed');

  t.throws(() => parseRestKey('01000000-0000-0000-0000-000000000001', 8), /Key overflow/, 'a GUID overflows 8 bytes');
  t.equal(hex(parseRestKey('01020304-0506-0708-0000-000000000000', 8)), '0102030405060708', 'unless its last 8 bytes are zero');
  t.equal(hex(parseRestKey('{ffffffff-ffff-ffff-0000-000000000000}', 8)), 'ff'.repeat(8));

  t.equal(hex(parseRestKey('0x' + 'ff'.repeat(8), 8)), 'ff'.repeat(8));
  t.throws(() => parseRestKey('0x' + 'ff'.repeat(9), 8), /Key overflow/);
  t.equal(hex(parseRestKey('0x' + 'ff'.repeat(8) + '0000', 8)), 'ff'.repeat(8), 'extra zero bytes are fine');
  t.equal(hex(parseRestKey('0x' + 'ab'.repeat(32), 32)), 'ab'.repeat(32));
  t.throws(() => parseRestKey('0x' + 'ab'.repeat(32) + '01', 32), /Key overflow/);
});

t.test('invalid formats', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['abc', /^Invalid key format$/],
    ['', /^Invalid key format$/],
    ['1.5', /^Invalid key format$/],
    ['+1', /^Invalid key format$/],
    [' 1', /^Invalid key format$/],
    ['1 ', /^Invalid key format$/],
    ['1\n', /^Invalid key format$/],
    ['١٢٣', /^Invalid key format$/],
    ['１２', /^Invalid key format$/],
    ['1e3', /^Invalid key format$/],
    ['0X01', /^Invalid key format$/],
    ['{abc', /^Invalid key format$/],
    ['0xZZ', /^Hex parse error: non hexadecimal symbol in parameter$/],
    ['0x0g', /^Hex parse error: non hexadecimal symbol in parameter$/],
    ['0x 1', /^Hex parse error: non hexadecimal symbol in parameter$/],
    ['0x١', /^Hex parse error: non hexadecimal symbol in parameter$/],
    ['-', /^GUID parse error/],
    ['-1', /^GUID parse error/],
    ['0x-1', /^GUID parse error/],
    ['{}', /^GUID parse error/],
    ['{1}', /^GUID parse error/],
    ['01000000-0000-0000-0000-00000000000', /^GUID parse error/],
    ['0100000-00000-0000-0000-000000000000', /^GUID parse error/],
    ['0100000g-0000-0000-0000-000000000000', /^GUID parse error/],
    ['{01000000-0000-0000-0000-000000000000', /^GUID parse error/],
    ['01000000000000000000000000000000-', /^GUID parse error/],
  ];
  for (const [text, message] of cases) {
    let error: unknown;
    try {
      parseRestKey(text, 16);
    } catch (err) {
      error = err;
    }
    t.ok(error instanceof KeyError, `${JSON.stringify(text)} throws a KeyError`);
    t.match((error as Error | undefined)?.message, message, JSON.stringify(text));
  }
});

t.test('normalizeKey pads, trims zero bytes and rejects non-zero extra bytes', async (t) => {
  t.equal(hex(normalizeKey(Buffer.from([1, 2]), 8)), '0102' + zeros(6));
  t.equal(hex(normalizeKey(new Uint8Array(0), 8)), zeros(8));
  t.equal(hex(normalizeKey(Buffer.from('0102030405060708', 'hex'), 8)), '0102030405060708');
  t.equal(hex(normalizeKey(Buffer.from('01020304050607080000', 'hex'), 8)), '0102030405060708');
  t.throws(() => normalizeKey(Buffer.from('010203040506070800ff', 'hex'), 8), new KeyError('Key overflow'));
  const input = Buffer.from('0102030405060708', 'hex');
  const out = normalizeKey(input, 8);
  out[0] = 9;
  t.equal(input[0], 1, 'the result is a copy');
  t.throws(() => normalizeKey(input, 0), RangeError);
  t.throws(() => normalizeKey(input, 1.5), RangeError);
});

t.test('keyToHex and keyToDecimal', async (t) => {
  t.equal(keyToHex(parseRestKey('1000', 8)), 'E803000000000000', 'as in KeyNotFound E803000000000000');
  t.equal(keyToHex(new Uint8Array([0xab, 0x01])), 'AB01');
  const view = new Uint8Array([0, 0xff, 0xee, 0]).subarray(1, 3);
  t.equal(keyToHex(view), 'FFEE', 'respects the view of a larger buffer');
  t.equal(keyToDecimal(parseRestKey('1000', 8)), '1000');
  t.equal(keyToDecimal(parseRestKey('0x0001', 16)), '256');
  t.equal(keyToDecimal(Buffer.alloc(32)), '0');
  const big = (2n ** 200n + 12345n).toString();
  t.equal(keyToDecimal(parseRestKey(big, 32)), big, 'round trip');
});
