// Range requests on GET (RFC 9110 §14): one range answers 206 with its
// bytes, a range that starts past the end 416; several ranges answer 200
// with the whole value (a multipart answer costs more than it saves for
// blobs, and clients that ask for several are rare); a malformed Range, or
// an If-Range that no longer matches, is ignored (200, the whole value).
import parseRange from 'range-parser';
import type { Context } from 'koa';
import { etagOf, lastModifiedOf, strongMatch } from './validators';
import { Version } from '../../model/version';

export type RangeAnswer = { kind: 'whole' } | { kind: 'part'; start: number; end: number } | { kind: 'unsatisfiable' };

/** The part of a value of `size` bytes at `version` the request asks for; `end` is inclusive. */
export function requestedRange(ctx: Context, version: Version, size: number): RangeAnswer {
  const header = ctx.headers.range;
  if (header === undefined || !ifRangeHolds(ctx, version)) return { kind: 'whole' };
  const ranges = parseRange(size, header, { combine: true });
  if (ranges === -1) return { kind: 'unsatisfiable' };
  if (ranges === -2 || ranges.type !== 'bytes' || ranges.length !== 1) return { kind: 'whole' };
  return { kind: 'part', start: ranges[0].start, end: ranges[0].end };
}

// If-Range: the range applies only to the representation the client holds.
function ifRangeHolds(ctx: Context, version: Version): boolean {
  const ifRange = ctx.get('If-Range');
  if (ifRange === '') return true;
  if (ifRange.includes('"')) return strongMatch(ifRange.trim(), etagOf(version));
  const date = Date.parse(ifRange);
  const modified = lastModifiedOf(version);
  return !Number.isNaN(date) && modified !== undefined && modified.getTime() <= date;
}
