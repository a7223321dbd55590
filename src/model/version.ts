// The order of versions: which of two writes of one key is the newer. Every
// level that chooses between records — the engine's index, the partitions
// of a vdisk, alien copies, hand-off, the coordinator — uses this one rule
// (native/engine/version.h states the same rule for the engine; both are
// tested against test/fixtures/version-order.txt).
//
// A version is bob's timestamp (seconds since the epoch: what bob clients
// and bob peers see and send) followed by two tie-breakers of Oyster's own:
// the coordinator's hybrid logical clock (`tick`, microseconds) and the
// coordinator's node id. Writes that carry no tick — from bob peers, and
// records of format-1 blobs — have tick 0 and node 0, so they lose every tie
// against a write an Oyster node stamped in the same second.

/** A write's place in the order of the writes of its key. */
export interface Version {
  /** bob's timestamp: seconds since the epoch (0..2^53-1). */
  readonly timestamp: number;
  /** The coordinator's hybrid logical clock in microseconds (0..MAX_TICK); 0 when unknown. */
  readonly tick: number;
  /** The coordinator's node id (0..MAX_NODE_ID); 0 when unknown. */
  readonly node: number;
}

/** Ticks are stored in the upper 52 bits of a u64 (docs/FORMAT.md): microseconds until the year 2112. */
export const MAX_TICK = 2 ** 52 - 1;
/** Node ids are stored in the lower 12 bits. */
export const MAX_NODE_ID = 4095;
export const MAX_TIMESTAMP = Number.MAX_SAFE_INTEGER;

/** A value with its version. */
export interface StoredValue {
  kind: 'found';
  version: Version;
  value: Buffer;
}

/** A delete: the tombstone's version. */
export interface StoredTombstone {
  kind: 'deleted';
  version: Version;
}

/** What a node holds for a key: its newest value or tombstone. */
export type StoredRecord = StoredValue | StoredTombstone;

/** A record without its value. */
export interface KeyState {
  kind: 'found' | 'deleted';
  version: Version;
}

/** -1, 0 or 1 as a is older than, the same as, or newer than b. */
export function compareVersions(a: Version, b: Version): number {
  if (a.timestamp !== b.timestamp) return a.timestamp < b.timestamp ? -1 : 1;
  if (a.tick !== b.tick) return a.tick < b.tick ? -1 : 1;
  if (a.node !== b.node) return a.node < b.node ? -1 : 1;
  return 0;
}

/**
 * The one comparator of records of one key: -1, 0 or 1 as a is older than,
 * as new as, or newer than b. The later version wins; of two records with
 * the same version a tombstone wins (a delete is never undone by a copy of
 * the value it deleted). Records that compare 0 are the same write stored
 * twice; callers keep either.
 */
export function compareRecords(a: KeyState, b: KeyState): number {
  const c = compareVersions(a.version, b.version);
  if (c !== 0) return c;
  if (a.kind === b.kind) return 0;
  return a.kind === 'deleted' ? 1 : -1;
}

/** The newer of two records (a on a tie); null counts as older than anything. */
export function newerOf<T extends KeyState>(a: T | null, b: T | null): T | null {
  if (a === null) return b;
  if (b === null) return a;
  return compareRecords(b, a) > 0 ? b : a;
}

/** Whether v is a version the engine can store (integers in range). */
export function isValidVersion(v: Version): boolean {
  return (
    Number.isSafeInteger(v.timestamp) &&
    v.timestamp >= 0 &&
    Number.isSafeInteger(v.tick) &&
    v.tick >= 0 &&
    v.tick <= MAX_TICK &&
    Number.isInteger(v.node) &&
    v.node >= 0 &&
    v.node <= MAX_NODE_ID
  );
}

/** A version known only by bob's timestamp (bob peers, format-1 records). */
export function bobVersion(timestamp: number): Version {
  return { timestamp, tick: 0, node: 0 };
}

/** "1700000000.1700000000123456@3", for logs and error messages. */
export function formatVersion(v: Version): string {
  return `${v.timestamp}.${v.tick}@${v.node}`;
}
