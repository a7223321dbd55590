// The versions Oyster peers exchange in bob's messages (the oyster_* fields
// of bob.proto): a record's full version in BlobMeta, and the state of every
// key of an Exist packed into ExistResponse.oyster_states.
import { KeyState, MAX_NODE_ID, MAX_TICK, Version } from '../model/version';
import { BlobMetaMsg } from './proto';

/** Bytes per key in oyster_states: state, timestamp, tick, node. */
const STATE_SIZE = 19;
const STATE_ABSENT = 0;
const STATE_VALUE = 1;
const STATE_TOMBSTONE = 2;

/** A version as BlobMeta fields (u64 fields as decimal strings, as proto-loader passes them). */
export function versionMeta(v: Version, deleted = false): BlobMetaMsg {
  return { timestamp: String(v.timestamp), oyster_tick: String(v.tick), oyster_node: v.node, oyster_deleted: deleted };
}

/** Parses a decimal u64 field within 0..max; null when it is not one. */
export function u64Field(value: string | number | undefined | null, max: number): number | null {
  const text = String(value ?? '0');
  if (!/^\d{1,20}$/.test(text)) return null;
  const n = Number(text);
  return Number.isSafeInteger(n) && n <= max ? n : null;
}

/** The version in a BlobMeta; null when its fields are out of range. */
export function metaVersion(meta: BlobMetaMsg): Version | null {
  const timestamp = u64Field(meta.timestamp, Number.MAX_SAFE_INTEGER);
  const tick = u64Field(meta.oyster_tick, MAX_TICK);
  const node = Number(meta.oyster_node ?? 0);
  if (timestamp === null || tick === null || !Number.isInteger(node) || node < 0 || node > MAX_NODE_ID) return null;
  return { timestamp, tick, node };
}

export function encodeStates(states: Array<KeyState | null>): Buffer {
  const out = Buffer.alloc(states.length * STATE_SIZE);
  states.forEach((s, i) => {
    const at = i * STATE_SIZE;
    if (s === null) return; // zeros: absent
    out[at] = s.kind === 'found' ? STATE_VALUE : STATE_TOMBSTONE;
    writeU64(out, at + 1, s.version.timestamp);
    writeU64(out, at + 9, s.version.tick);
    out.writeUInt16LE(s.version.node, at + 17);
  });
  return out;
}

/** The states of `count` keys; null when the field is missing or malformed (a bob peer answered). */
export function decodeStates(bytes: Buffer | undefined | null, count: number): Array<KeyState | null> | null {
  if (!bytes || bytes.length !== count * STATE_SIZE) return null;
  const out: Array<KeyState | null> = [];
  for (let at = 0; at < bytes.length; at += STATE_SIZE) {
    const state = bytes[at];
    if (state === STATE_ABSENT) {
      out.push(null);
      continue;
    }
    if (state !== STATE_VALUE && state !== STATE_TOMBSTONE) return null;
    const version = { timestamp: readU64(bytes, at + 1), tick: readU64(bytes, at + 9), node: bytes.readUInt16LE(at + 17) };
    if (!Number.isSafeInteger(version.timestamp) || version.tick > MAX_TICK || version.node > MAX_NODE_ID) return null;
    out.push({ kind: state === STATE_VALUE ? 'found' : 'deleted', version });
  }
  return out;
}

// u64 fields below 2^53 without BigInt: two u32 halves.
function writeU64(buf: Buffer, at: number, n: number): void {
  buf.writeUInt32LE(n % 2 ** 32, at);
  buf.writeUInt32LE(Math.floor(n / 2 ** 32), at + 4);
}

function readU64(buf: Buffer, at: number): number {
  return buf.readUInt32LE(at) + buf.readUInt32LE(at + 4) * 2 ** 32;
}
