// Durations as bob writes them (humantime 2.x): one or more
// `<integer><unit>` spans, optionally separated by whitespace — `100ms`,
// `1h 30min`, `12h 5min 2ns`. A number without a unit is an error, so that
// `fail_retry_timeout: 100` is not silently read as some default unit.

const NS = 1n;
const US = 1_000n;
const MS = 1_000_000n;
const SEC = 1_000_000_000n;

// The documented units plus the undocumented aliases humantime also accepts
// (nanos, millis, secs, mins, hrs), so that every bob config parses.
const UNITS: ReadonlyMap<string, bigint> = new Map([
  ...['nanos', 'nsec', 'ns'].map((u) => [u, NS] as const),
  ...['usec', 'us'].map((u) => [u, US] as const),
  ...['millis', 'msec', 'ms'].map((u) => [u, MS] as const),
  ...['seconds', 'second', 'secs', 'sec', 's'].map((u) => [u, SEC] as const),
  ...['minutes', 'minute', 'min', 'mins', 'm'].map((u) => [u, 60n * SEC] as const),
  ...['hours', 'hour', 'hr', 'hrs', 'h'].map((u) => [u, 3_600n * SEC] as const),
  ...['days', 'day', 'd'].map((u) => [u, 86_400n * SEC] as const),
  ...['weeks', 'week', 'w'].map((u) => [u, 604_800n * SEC] as const),
  ...['months', 'month', 'M'].map((u) => [u, 2_630_016n * SEC] as const), // 30.44 days
  ...['years', 'year', 'y'].map((u) => [u, 31_557_600n * SEC] as const), // 365.25 days
]);

const U64_MAX = 2n ** 64n - 1n;
const MAX_NS = BigInt(Number.MAX_SAFE_INTEGER) * MS;

// Rust's char::is_whitespace (Unicode White_Space), which humantime uses.
const SPACE = /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]$/;
const DIGIT = /^[0-9]$/;
const LETTER = /^[A-Za-z]$/;

/** Parses a bob duration; returns milliseconds (fractional below 1 ms). */
export function parseDuration(text: string): number {
  const chars = Array.from(text);
  let i = 0;
  let totalNs = 0n;

  // A span starts after optional whitespace with a digit; undefined at the end.
  const spanStart = (): bigint | undefined => {
    const at = i;
    while (i < chars.length) {
      const c = chars[i++];
      if (DIGIT.test(c)) return BigInt(c);
      if (!SPACE.test(c)) throw new Error(`expected a number at ${at}`);
    }
    return undefined;
  };

  const addSpan = (n: bigint, unit: string) => {
    const factor = UNITS.get(unit);
    if (factor === undefined) {
      throw new Error(
        unit === ''
          ? `time unit needed, for example ${n}sec or ${n}ms`
          : `unknown time unit "${unit}", supported units: ns, us, ms, sec, min, hours, days, weeks, months, years`,
      );
    }
    // humantime keeps sub-second spans in u64 nanoseconds and the rest in u64 seconds.
    if ((factor < SEC ? n * factor : n * (factor / SEC)) > U64_MAX) throw new Error('number is too large');
    totalNs += n * factor;
  };

  let n = spanStart();
  if (n === undefined) throw new Error('value was empty');
  for (;;) {
    // The number: digits, whitespace allowed inside, up to the first letter.
    let unitStart = chars.length;
    while (i < chars.length) {
      const c = chars[i];
      if (DIGIT.test(c)) {
        n = n * 10n + BigInt(c);
        if (n > U64_MAX) throw new Error('number is too large');
      } else if (LETTER.test(c)) {
        unitStart = i;
        break;
      } else if (!SPACE.test(c)) {
        throw new Error(`invalid character at ${i}`);
      }
      i++;
    }
    // The unit: letters, ended by whitespace, a digit (the next span) or the end.
    let unitEnd = chars.length;
    let nextDigit: bigint | undefined;
    while (i < chars.length) {
      const c = chars[i];
      if (DIGIT.test(c) || SPACE.test(c)) {
        unitEnd = i++;
        if (DIGIT.test(c)) nextDigit = BigInt(c);
        break;
      }
      if (!LETTER.test(c)) throw new Error(`invalid character at ${i}`);
      i++;
    }
    addSpan(n, chars.slice(unitStart, unitEnd).join(''));
    const next = nextDigit ?? spanStart();
    if (next === undefined) break;
    n = next;
  }

  if (totalNs > MAX_NS) throw new Error('duration is too large');
  return Number(totalNs / MS) + Number(totalNs % MS) / 1e6;
}
