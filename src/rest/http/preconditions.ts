// Preconditions (RFC 9110 §13), evaluated in the RFC's order against the
// newest value the coordinator reads: If-Match, else If-Unmodified-Since;
// then If-None-Match, else (reads only) If-Modified-Since. A read answers
// 304 where the client holds the value; a write is refused with 412 where it
// would replace another value than the client read (If-Match), or create a
// key that is taken (If-None-Match: *). Request Cache-Control does not
// matter: this is the origin, not a cache.
//
// A write's check and the write are two steps, not one: a write through
// another coordinator between them still lands (there is no lock across
// replicas), so conditional writes narrow lost updates, they do not rule
// them out.
import type { Context } from 'koa';
import { Version } from '../../model/version';
import { etagOf, lastModifiedOf, parseEtagList, parseHttpDate, strongMatch, weakMatch } from './validators';

export type Verdict = null | { status: 304 | 412; why: string };

/** Whether the request carries any precondition. */
export function hasPreconditions(ctx: Context): boolean {
  const h = ctx.headers;
  return h['if-match'] !== undefined || h['if-none-match'] !== undefined || h['if-unmodified-since'] !== undefined || h['if-modified-since'] !== undefined;
}

/**
 * null where the request goes ahead; else its answer. `current` is the
 * key's newest value (null: absent or deleted); `read` for GET and HEAD.
 */
export function evaluate(ctx: Context, current: { version: Version } | null, read: boolean): Verdict {
  const h = ctx.headers;
  const etag = current ? etagOf(current.version) : null;
  const modified = current ? lastModifiedOf(current.version) : undefined;
  if (h['if-match'] !== undefined) {
    const tags = parseEtagList(h['if-match']);
    if (etag === null) return { status: 412, why: 'If-Match: the key holds no value' };
    if (tags !== '*' && !tags.some((t) => strongMatch(t, etag))) return { status: 412, why: `If-Match: the value's ETag is ${etag}` };
  } else if (h['if-unmodified-since'] !== undefined) {
    // A field that is no HTTP-date is ignored (RFC 9110 §13.1.4).
    const since = parseHttpDate(h['if-unmodified-since']);
    if (since !== undefined && modified !== undefined && modified.getTime() > since + 999) {
      return { status: 412, why: `If-Unmodified-Since: modified ${modified.toUTCString()}` };
    }
  }
  if (h['if-none-match'] !== undefined) {
    const tags = parseEtagList(h['if-none-match']);
    if (etag !== null && (tags === '*' || tags.some((t) => weakMatch(t, etag)))) {
      return read ? { status: 304, why: 'Not Modified' } : { status: 412, why: tags === '*' ? 'If-None-Match: * but the key holds a value' : `If-None-Match: the value's ETag is ${etag}` };
    }
  } else if (read && h['if-modified-since'] !== undefined) {
    const since = parseHttpDate(h['if-modified-since']);
    // HTTP dates have whole seconds, and so do versions' timestamps.
    if (since !== undefined && modified !== undefined && modified.getTime() <= since) return { status: 304, why: 'Not Modified' };
  }
  return null;
}
