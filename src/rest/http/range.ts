// Range requests on GET (RFC 9110 §14): one range answers 206 with its
// bytes, ranges none of which can be served 416; several ranges answer 200
// with the whole value (a multipart answer costs more than it saves for
// blobs, and clients that ask for several are rare); a malformed Range,
// another unit, or an If-Range that no longer matches is ignored (200, the
// whole value).
import type { Context } from 'koa';
import { etagOf, lastModifiedOf, parseHttpDate, strongMatch } from './validators';
import { Version } from '../../model/version';

export type RangeAnswer = { kind: 'whole' } | { kind: 'part'; start: number; end: number } | { kind: 'unsatisfiable' };

const WHOLE: RangeAnswer = { kind: 'whole' };
const UNSATISFIABLE: RangeAnswer = { kind: 'unsatisfiable' };

/** The part of a value of `size` bytes at `version` the request asks for; `end` is inclusive. */
export function requestedRange(ctx: Context, version: Version, size: number): RangeAnswer {
  const header = ctx.headers.range;
  if (header === undefined || !ifRangeHolds(ctx, version)) return WHOLE;
  return byteRange(header, size);
}

const SPEC = /^(\d*)-(\d*)$/;

/**
 * What a Range header asks of `size` bytes. The unit is compared without
 * regard to case, and empty list elements are skipped (RFC 9110 §5.6.1). A
 * suffix longer than the value means all of it; an end past the value is
 * cut to it. A range that starts at or past the end, a suffix of 0 bytes
 * and a range that ends before it starts cannot be served; the answer is
 * 416 when no range of the header can. A value of 0 bytes has no range to
 * send: the one request that can be served (a suffix) gets it whole.
 */
function byteRange(header: string, size: number): RangeAnswer {
  const eq = header.indexOf('=');
  if (eq < 0 || header.slice(0, eq).trim().toLowerCase() !== 'bytes') return WHOLE;
  const parts: Array<{ start: number; end: number }> = [];
  let seen = false;
  let servable = false;
  for (const element of header.slice(eq + 1).split(',')) {
    const spec = element.trim();
    if (spec === '') continue;
    const m = SPEC.exec(spec);
    if (m === null || (m[1] === '' && m[2] === '')) return WHOLE;
    seen = true;
    if (m[1] === '') {
      const suffix = Number(m[2]);
      if (suffix === 0) continue;
      servable = true;
      if (size > 0) parts.push({ start: Math.max(0, size - suffix), end: size - 1 });
      continue;
    }
    const start = Number(m[1]);
    const last = m[2] === '' ? Infinity : Number(m[2]);
    if (last < start || start >= size) continue;
    servable = true;
    parts.push({ start, end: Math.min(last, size - 1) });
  }
  if (!seen) return WHOLE;
  if (!servable) return UNSATISFIABLE;
  const merged = mergeRanges(parts);
  return merged.length === 1 ? { kind: 'part', ...merged[0] } : WHOLE;
}

// Overlapping and adjacent ranges as one.
function mergeRanges(parts: Array<{ start: number; end: number }>): Array<{ start: number; end: number }> {
  const sorted = [...parts].sort((a, b) => a.start - b.start);
  const out: Array<{ start: number; end: number }> = [];
  for (const p of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && p.start <= last.end + 1) last.end = Math.max(last.end, p.end);
    else out.push({ ...p });
  }
  return out;
}

// If-Range: the range applies only to the representation the client holds.
function ifRangeHolds(ctx: Context, version: Version): boolean {
  const ifRange = ctx.get('If-Range');
  if (ifRange === '') return true;
  if (ifRange.includes('"')) return strongMatch(ifRange.trim(), etagOf(version));
  const date = parseHttpDate(ifRange.trim());
  const modified = lastModifiedOf(version);
  // A date holds only if it is the value's Last-Modified exactly (RFC 9110 §13.1.5).
  return date !== undefined && modified !== undefined && modified.getTime() === date;
}
