// The validators of a stored value (RFC 9110 §8.8): its ETag and its
// Last-Modified date, both derived from its version, so that every replica
// gives a value the same ones and a new write always changes the ETag.
import { Version } from '../../model/version';

/**
 * `"<timestamp>-<tick>-<node>"`: strong where the version names one write
 * (Oyster stamps every write with a tick unique on its coordinator); weak
 * (`W/`) where the tick is unknown (writes of bob peers, format-1 blobs),
 * since two such writes in one second share a version. A weak ETag serves
 * If-None-Match, never If-Match.
 */
export function etagOf(v: Version): string {
  const tag = `"${decimal(v.timestamp)}-${decimal(v.tick)}-${decimal(v.node)}"`;
  return v.tick === 0 ? `W/${tag}` : tag;
}

// Versions come out of Float64Arrays, and V8 turns such numbers into text
// in a runtime call that costs more per GET than the rest of the headers:
// digits are put together three at a time from a table instead.
const TRIPLES = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'));
const SMALL = Array.from({ length: 1000 }, (_, i) => String(i));

function decimal(n: number): string {
  if (n < 1000) return SMALL[n];
  let rest = n % 1000;
  let s = TRIPLES[rest];
  n = (n - rest) / 1000;
  while (n >= 1000) {
    rest = n % 1000;
    s = TRIPLES[rest] + s;
    n = (n - rest) / 1000;
  }
  return SMALL[n] + s;
}

// Formatting a date costs as much as the rest of a GET's headers; values
// written in the same second share it.
const dates = new Map<number, string>();

/** lastModifiedOf as the text of a Last-Modified header. */
export function httpDateOf(v: Version): string | undefined {
  let text = dates.get(v.timestamp);
  if (text === undefined) {
    text = lastModifiedOf(v)?.toUTCString();
    if (text === undefined) return undefined;
    if (dates.size >= 4096) dates.clear();
    dates.set(v.timestamp, text);
  }
  return text;
}

/** The version's timestamp as an HTTP date; undefined where no Date can hold it. */
export function lastModifiedOf(v: Version): Date | undefined {
  const d = new Date(v.timestamp * 1000);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MONTH = MONTHS.join('|');
const IMF_FIXDATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\\d{2}) (${MONTH}) (\\d{4}) (\\d{2}):(\\d{2}):(\\d{2}) GMT$`);
const RFC850_DATE = new RegExp(`^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-(${MONTH})-(\\d{2}) (\\d{2}):(\\d{2}):(\\d{2}) GMT$`);
const ASCTIME_DATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (${MONTH}) ( \\d|\\d{2}) (\\d{2}):(\\d{2}):(\\d{2}) (\\d{4})$`);

/**
 * An HTTP-date (RFC 9110 §5.6.7) in milliseconds since the epoch: the
 * IMF-fixdate every sender uses, or one of the two obsolete forms a
 * recipient must still accept; undefined for anything else. Preconditions
 * with a date that is not one are ignored (§13.1), so nothing more lenient
 * will do: Date.parse takes "1" for a date in 2001.
 */
export function parseHttpDate(text: string): number | undefined {
  let m = IMF_FIXDATE.exec(text);
  if (m !== null) return utc(Number(m[3]), m[2], Number(m[1]), m[4], m[5], m[6]);
  m = RFC850_DATE.exec(text);
  if (m !== null) {
    // A two-digit year more than 50 years ahead is the latest past year with those digits.
    const now = new Date().getUTCFullYear();
    let year = now - (now % 100) + Number(m[3]);
    if (year > now + 50) year -= 100;
    return utc(year, m[2], Number(m[1]), m[4], m[5], m[6]);
  }
  m = ASCTIME_DATE.exec(text);
  if (m !== null) return utc(Number(m[6]), m[1], Number(m[2].trim()), m[3], m[4], m[5]);
  return undefined;
}

function utc(year: number, month: string, day: number, hour: string, minute: string, second: string): number | undefined {
  const [h, min, sec] = [Number(hour), Number(minute), Number(second)];
  if (h > 23 || min > 59 || sec > 60) return undefined;
  const d = new Date(0);
  // Not Date.UTC, which takes years below 100 for 1900 + year.
  d.setUTCFullYear(year, MONTHS.indexOf(month), day);
  d.setUTCHours(h, min, Math.min(sec, 59));
  // A day the month does not have (31 Apr) would roll over into the next.
  return d.getUTCDate() === day ? d.getTime() : undefined;
}

/** The entity tags of an If-Match / If-None-Match list, or '*'. Malformed members are dropped. */
export function parseEtagList(header: string): string[] | '*' {
  if (header.trim() === '*') return '*';
  return header.match(/(?:W\/)?"[^"]*"/g) ?? [];
}

/** Strong comparison: both strong and the same (RFC 9110 §8.8.3.2). */
export function strongMatch(a: string, b: string): boolean {
  return !a.startsWith('W/') && a === b;
}

/** Weak comparison: the same opaque tags, weak or not. */
export function weakMatch(a: string, b: string): boolean {
  return (a.startsWith('W/') ? a.slice(2) : a) === (b.startsWith('W/') ? b.slice(2) : b);
}
