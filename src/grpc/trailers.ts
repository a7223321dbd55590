// What an Oyster node tells an Oyster coordinator beyond bob's messages,
// carried in trailing metadata (bob's peers ignore it): the timestamp of a
// tombstone behind a NOT_FOUND, and the version of every key an Exist asked for.
import { KeyState } from '../cluster/node-api';

export const TOMBSTONE_TRAILER = 'oyster-tombstone';
export const VERSIONS_TRAILER = 'oyster-versions';

/** "f<ts>" found, "d<ts>" deleted, "-" absent; comma separated, in request order. */
export function encodeVersions(states: Array<KeyState | null>): string {
  return states.map((s) => (s === null ? '-' : `${s.kind === 'found' ? 'f' : 'd'}${s.timestamp ?? ''}`)).join(',');
}

export function decodeVersions(text: unknown, count: number): Array<KeyState | null> | null {
  if (typeof text !== 'string') return null;
  const parts = text.split(',');
  if (parts.length !== count) return null;
  const out: Array<KeyState | null> = [];
  for (const p of parts) {
    if (p === '-') {
      out.push(null);
      continue;
    }
    const kind = p[0] === 'f' ? 'found' : p[0] === 'd' ? 'deleted' : null;
    const ts = Number(p.slice(1));
    if (!kind || !Number.isSafeInteger(ts)) return null;
    out.push({ kind, timestamp: ts });
  }
  return out;
}
