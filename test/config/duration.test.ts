// Durations: bob's humantime syntax, in milliseconds.
import t from 'tap';
import { parseDuration } from '../../src/config/duration';

const S = 1000;
const MIN = 60 * S;
const H = 60 * MIN;
const D = 24 * H;

t.test('every unit and its aliases', async (t) => {
  const cases: Array<[string, number]> = [
    ['17nsec', 17e-6],
    ['17nanos', 17e-6],
    ['33ns', 33e-6],
    ['3usec', 0.003],
    ['78us', 0.078],
    ['31msec', 31],
    ['31millis', 31],
    ['6ms', 6],
    ['3000s', 3000 * S],
    ['300sec', 300 * S],
    ['300secs', 300 * S],
    ['50seconds', 50 * S],
    ['1second', S],
    ['100m', 100 * MIN],
    ['12min', 12 * MIN],
    ['12mins', 12 * MIN],
    ['1minute', MIN],
    ['7minutes', 7 * MIN],
    ['2h', 2 * H],
    ['7hr', 7 * H],
    ['7hrs', 7 * H],
    ['1hour', H],
    ['24hours', D],
    ['1day', D],
    ['2days', 2 * D],
    ['365d', 365 * D],
    ['1week', 7 * D],
    ['7weeks', 49 * D],
    ['52w', 364 * D],
    ['1month', 2_630_016 * S],
    ['3months', 3 * 2_630_016 * S],
    ['12M', 31_560_192 * S],
    ['1year', 31_557_600 * S],
    ['7years', 7 * 31_557_600 * S],
    ['17y', 536_479_200 * S],
  ];
  for (const [text, ms] of cases) t.equal(parseDuration(text), ms, text);
});

t.test('spans combine, with or without spaces', async (t) => {
  const cases: Array<[string, number]> = [
    ['1h 30min', 90 * MIN],
    ['1h30min', 90 * MIN],
    ['2h 15m', 2 * H + 15 * MIN],
    ['12h 5min 2ns', 12 * H + 5 * MIN + 2e-6],
    ['20 min 17 nsec ', 20 * MIN + 17e-6],
    ['  100ms', 100],
    ['100 ms', 100],
    ['1 0s', 10 * S],
    [
      '1y 2M 4w 8d 16h 32min 64s 128ms 256us',
      31_557_600 * S + 2 * 2_630_016 * S + 28 * D + 8 * D + 16 * H + 32 * MIN + 64 * S + 128 + 0.256,
    ],
    ['3sec', 3 * S],
    ['5000ms', 5 * S],
    ['0s', 0],
    ['1d\t1h', D + H],
    ['1h\u00a01m', H + MIN],
  ];
  for (const [text, ms] of cases) t.equal(parseDuration(text), ms, JSON.stringify(text));
});

t.test('invalid durations are rejected with a reason', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['', /empty/],
    ['   ', /empty/],
    ['100', /time unit needed, for example 100sec or 100ms/],
    ['10 months 1', /time unit needed, for example 1sec/],
    ['1h30', /time unit needed/],
    ['1x', /unknown time unit "x"/],
    ['1 hours min', /expected a number/],
    ['5 SEC', /unknown time unit "SEC"/],
    ['1H', /unknown time unit "H"/],
    ['1m sec', /expected a number/],
    ['-1s', /expected a number/],
    ['+1s', /expected a number/],
    ['1.5h', /invalid character/],
    ['1h,30m', /invalid character/],
    ['5µs', /invalid character/],
    ['ms', /expected a number/],
    ['1h-', /invalid character/],
    ['100000000000000000000ns', /too large/],
    ['100000000000000000us', /too large/],
    ['100000000000000ms', /too large/],
    ['100000000000000000000s', /too large/],
    ['10000000000000y', /too large/],
    ['300000y', /too large/],
  ];
  for (const [text, reason] of cases) t.throws(() => parseDuration(text), reason, JSON.stringify(text));
});

t.test('the largest durations that fit', async (t) => {
  t.equal(parseDuration('9007199254740s 991ms'), Number.MAX_SAFE_INTEGER);
  t.throws(() => parseDuration('9007199254741s'), /too large/);
  // humantime keeps sub-second units in u64 nanoseconds.
  t.equal(parseDuration('18446744073709ms'), 18446744073709);
  t.throws(() => parseDuration('18446744073710ms'), /too large/);
  t.equal(parseDuration('366d'), 366 * D);
});
