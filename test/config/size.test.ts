// Sizes: bob's ubyte syntax, in bytes.
import t from 'tap';
import { parseSize } from '../../src/config/size';

const KiB = 1024;
const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

t.test('integers are bytes', async (t) => {
  t.equal(parseSize(0), 0);
  t.equal(parseSize(1000000), 1000000);
  t.equal(parseSize(10n), 10);
  t.equal(parseSize(Number.MAX_SAFE_INTEGER), Number.MAX_SAFE_INTEGER);
});

t.test('strings with a suffix, case-insensitive, with or without a space', async (t) => {
  const cases: Array<[string, number]> = [
    ['1', 1],
    ['123', 123],
    ['0', 0],
    ['01MB', 1e6],
    ['0001MiB', MiB],
    ['1 b', 1],
    ['1 B', 1],
    ['1B', 1],
    ['349b', 349],
    ['1 kb', 1000],
    ['1 kB', 1000],
    ['12kb', 12000],
    ['1 kib', KiB],
    ['1KiB', KiB],
    ['1 mb', 1e6],
    ['100 mb', 100e6],
    ['1 mib', MiB],
    ['10 MiB', 10 * MiB],
    ['1GB', 1e9],
    ['1gb', 1e9],
    ['8 GiB', 8 * GiB],
    ['1 tb', 1e12],
    ['1 TiB', 1024 ** 4],
    ['2 PB', 2e15],
    ['1 PiB', 1024 ** 5],
    ['1  MB', 1e6],
    ['0.5KiB', 512],
    ['0.5KB', 500],
    ['1.5 GiB', 1.5 * GiB],
    ['7.06GB', 7.06e9],
    ['7.25GB', 7.25e9],
  ];
  for (const [text, bytes] of cases) t.equal(parseSize(text), bytes, JSON.stringify(text));
});

t.test('invalid sizes are rejected', async (t) => {
  const invalid: unknown[] = [
    '',
    'a',
    'amb',
    '1.2',
    '.',
    '.23KiB',
    '1.2.3mb',
    '1.23bcc',
    '?mb',
    '1.2mb.',
    '.2mb',
    '99k',
    '99bk',
    '1 k b',
    '1.2mkb',
    '1kb2',
    '1MB ',
    ' 1MB',
    '287423890740938348498349344',
    '1.kb',
    '1.',
    '1. ',
    '2. kb',
    '1.5 B',
    '-1',
    '+1',
    '1e3',
    '1_000',
    '1 ',
    '1\tMB',
    '10 EiB',
    '9007199254740992',
    -1,
    1.5,
    Number.MAX_SAFE_INTEGER + 1,
    true,
    null,
    ['1'],
    { mb: 1 },
  ];
  for (const value of invalid) t.throws(() => parseSize(value), JSON.stringify(value) ?? String(value));
});
