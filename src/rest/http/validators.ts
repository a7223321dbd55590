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
  const tag = `"${v.timestamp}-${v.tick}-${v.node}"`;
  return v.tick === 0 ? `W/${tag}` : tag;
}

/** The version's timestamp as an HTTP date; undefined where no Date can hold it. */
export function lastModifiedOf(v: Version): Date | undefined {
  const d = new Date(v.timestamp * 1000);
  return Number.isNaN(d.getTime()) ? undefined : d;
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
