// The versions Oyster peers exchange: in bob's messages (the oyster_* fields
// of bob.proto) a record's full version in BlobMeta and the state of every
// key of an Exist packed into ExistResponse.oyster_states; in oyster.proto
// the entries of a replica's buckets.
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

/** A u64 field within 0..max — a number as decoded, or a decimal string (absent: 0); null when it is not one. */
export function u64Field(value: string | number | undefined | null, max: number): number | null {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 && value <= max ? value : null;
  const text = value ?? '0';
  if (!/^\d{1,20}$/.test(text)) return null;
  const n = Number(text);
  return Number.isSafeInteger(n) && n <= max ? n : null;
}

/** The version of these fields; null when they are out of range. */
export function fieldsVersion(timestamp: string | number | undefined, tick: string | number | undefined, node: number | undefined): Version | null {
  const ts = u64Field(timestamp, Number.MAX_SAFE_INTEGER);
  const t = u64Field(tick, MAX_TICK);
  const n = Number(node ?? 0);
  if (ts === null || t === null || !Number.isInteger(n) || n < 0 || n > MAX_NODE_ID) return null;
  return { timestamp: ts, tick: t, node: n };
}

/** The version in a BlobMeta; null when its fields are out of range. */
export function metaVersion(meta: BlobMetaMsg): Version | null {
  return fieldsVersion(meta.timestamp, meta.oyster_tick, meta.oyster_node);
}

export function encodeStates(states: Array<KeyState | null>): Buffer {
  // From the pool of small buffers (an Exist of one key is the most frequent inter-node answer); every byte is written below.
  const out = Buffer.allocUnsafe(states.length * STATE_SIZE);
  states.forEach((s, i) => {
    const at = i * STATE_SIZE;
    if (s === null) {
      out.fill(0, at, at + STATE_SIZE); // absent
      return;
    }
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

/** Entries as EntriesResponse.entries carries them: per key u8 kind, u64 timestamp, u64 stamp, the key (the engine's snapshot layout). */
export function encodeEntries(entries: ReadonlyArray<{ key: Buffer; kind: 'found' | 'deleted'; version: Version }>): Buffer {
  if (entries.length === 0) return Buffer.alloc(0);
  const size = 17 + entries[0].key.length;
  const out = Buffer.alloc(entries.length * size);
  entries.forEach((e, i) => {
    const at = i * size;
    out[at] = e.kind === 'found' ? 1 : 2;
    writeU64(out, at + 1, e.version.timestamp);
    // stamp = tick * 2^12 + node, as two u32 halves: tick < 2^52.
    const stampLow = (e.version.tick % 2 ** 20) * 2 ** 12 + e.version.node;
    out.writeUInt32LE(stampLow, at + 9);
    out.writeUInt32LE(Math.floor(e.version.tick / 2 ** 20), at + 13);
    e.key.copy(out, at + 17);
  });
  return out;
}

/** The entries of `bytes` for keys of keySize bytes; null when malformed. */
export function decodeEntries(bytes: Buffer, keySize: number): Array<{ key: Buffer; kind: 'found' | 'deleted'; version: Version }> | null {
  const size = 17 + keySize;
  if (bytes.length % size !== 0) return null;
  const out: Array<{ key: Buffer; kind: 'found' | 'deleted'; version: Version }> = [];
  for (let at = 0; at < bytes.length; at += size) {
    const kind = bytes[at];
    if (kind !== 1 && kind !== 2) return null;
    const low = bytes.readUInt32LE(at + 9);
    const high = bytes.readUInt32LE(at + 13);
    const version = { timestamp: readU64(bytes, at + 1), tick: high * 2 ** 20 + Math.floor(low / 2 ** 12), node: low % 2 ** 12 };
    if (!Number.isSafeInteger(version.timestamp)) return null;
    out.push({ key: Buffer.from(bytes.subarray(at + 17, at + size)), kind: kind === 1 ? 'found' : 'deleted', version });
  }
  return out;
}
