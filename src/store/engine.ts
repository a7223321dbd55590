// Engine: the typed face of one native storage engine instance, which owns
// one partition directory. All disk work happens on the addon's threads.
// Records are ordered by src/model/version.ts (compareRecords): the engine
// applies the same rule when it chooses among the records of a key.
import { KeyState, StoredRecord, Version } from '../model/version';
import { OpenedValue, ValueReader } from '../model/value';
import { checkDigestArgs, decodeEntries, SnapshotEntry } from './engine-snapshot';
import {
  native,
  NativeBlobStats,
  NativeCache,
  NativeCompaction,
  NativeCompactionStats,
  NativeEngine,
  NativeEngineSet,
  NativeGarbageSummary,
  NativeOpenOptions,
  NativePutStream,
  NativeRecovery,
  NativeScrub,
  NativeScrubDamage,
  NativeScrubStats,
  NativeStats,
  NativeOpenedValue,
  NativeValueReader,
} from './native';

export type EngineOptions = NativeOpenOptions;
export type IndexBlockCache = NativeCache;

/**
 * A cache of `capacity` bytes (0: none) for EngineOptions.cache: the index
 * blocks of closed blobs read are kept, so that a lookup reading one again
 * costs no system call. Blocks are keyed by the index file they came from
 * and their offset there, and index files never change, so an entry never
 * goes stale.
 */
export function newIndexBlockCache(capacity: number): IndexBlockCache {
  return new native.Cache(capacity);
}
export type RecoveryReport = NativeRecovery;
export type EngineStats = NativeStats;
export type BlobStats = NativeBlobStats;
export type CompactionStats = NativeCompactionStats;
export type GarbageSummary = NativeGarbageSummary;
export type ScrubStats = NativeScrubStats;
export type ScrubDamage = NativeScrubDamage;

/** Error codes of engine failures (`err.code`). */
export const EngineErrorCode = {
  notFound: 'OYSTER_NOT_FOUND',
  corruption: 'OYSTER_CORRUPTION',
  io: 'OYSTER_IO_ERROR',
  closed: 'OYSTER_CLOSED',
  busy: 'OYSTER_BUSY',
  invalidArgument: 'OYSTER_INVALID_ARGUMENT',
  notSupported: 'OYSTER_NOT_SUPPORTED',
} as const;

/** An engine failure: `code` is one of EngineErrorCode; I/O errors carry errno and its name. */
export interface EngineError extends Error {
  code: string;
  errno?: number;
  syscallCode?: string;
  /** For corruption found by a read: the version of the damaged record. */
  version?: Version;
}

export function isEngineError(err: unknown, code?: string): err is EngineError {
  return (
    err instanceof Error &&
    typeof (err as EngineError).code === 'string' &&
    (err as EngineError).code.startsWith('OYSTER_') &&
    (code === undefined || (err as EngineError).code === code)
  );
}

// Argument errors are thrown synchronously by the addon; callers get them as
// rejections like every other failure.
function settle<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return fn();
  } catch (err) {
    return Promise.reject(err);
  }
}

/**
 * A put whose value arrives in pieces (Engine.beginStream): nothing of it is
 * readable until finish resolves, and a stream aborted, failed or dropped
 * unfinished leaves nothing readable (native/engine/put_stream.h).
 */
export interface PutStream {
  /**
   * Appends the pieces in order, with one write; they must stay unchanged
   * until it settles. Calls take effect in the order they are made, even
   * without waiting for each other. A failure (more bytes than announced:
   * OYSTER_INVALID_ARGUMENT; an I/O error) aborts the stream.
   */
  append(pieces: Buffer[]): Promise<void>;
  /** Publishes the record once every announced byte is in (OYSTER_INVALID_ARGUMENT if not); resolves once it is durable per the sync policy and readable. */
  finish(): Promise<void>;
  /** Gives the stream up, after the calls made before; idempotent, a no-op after finish resolved. */
  abort(): Promise<void>;
}

class EnginePutStream implements PutStream {
  constructor(private readonly handle: NativePutStream) {}
  append(pieces: Buffer[]): Promise<void> {
    return settle(() => this.handle.append(pieces));
  }
  finish(): Promise<void> {
    return settle(() => this.handle.finish());
  }
  abort(): Promise<void> {
    return settle(() => this.handle.abort());
  }
}

// A stored value read in parts (EngineSet.openNewest), for values too large
// to be read whole: a value over 64 KiB written by this engine carries
// block checksums and every read is verified; one without has only its
// record CRC, checked by the read that reaches its end (docs/FORMAT.md §6.4).
// Reads and sends of one reader are served one at a time, in the order
// asked; close releases the record's file (later calls reject with
// OYSTER_CLOSED).
class EngineValueReader implements ValueReader {
  readonly inFile = true;
  constructor(private readonly handle: NativeValueReader) {}
  get size(): number {
    return this.handle.size;
  }
  read(offset: number, target: Buffer): Promise<void> {
    return settle(() => this.handle.read(offset, target));
  }
  sendTo(fd: number, offset: number, n: number, prefix?: string): Promise<number> {
    return settle(() => this.handle.sendTo(fd, offset, n, prefix));
  }
  checkRest(): Promise<void> {
    return settle(() => this.handle.checkRest());
  }
  close(): void {
    this.handle.close();
  }
}

export class Engine {
  private constructor(
    /** The addon's engine object; EngineSet passes it back to the addon. */
    readonly handle: NativeEngine,
    readonly dir: string,
    readonly keySize: number,
    readonly recovery: RecoveryReport,
  ) {}

  /** Opens (creating it if needed) and recovers a partition directory. */
  static async open(dir: string, options: EngineOptions = {}): Promise<Engine> {
    const { engine, recovery } = await settle(() => native.open(dir, options));
    return new Engine(engine, dir, options.keySize ?? 16, recovery);
  }

  /** Stores value under key at `version`; reads return the newest record by compareRecords. */
  put(key: Buffer, version: Version, value: Buffer): Promise<void> {
    return settle(() => this.handle.put(key, version.timestamp, version.tick, version.node, value));
  }

  /** Writes a tombstone at `version`: the key reads as deleted unless a newer record exists. */
  delete(key: Buffer, version: Version): Promise<void> {
    return settle(() => this.handle.delete(key, version.timestamp, version.tick, version.node));
  }

  /**
   * Starts a put of `size` bytes of value for key at `version`, whose value
   * comes in pieces (PutStream); puts go on meanwhile. Resolves once the
   * record's space is reserved.
   */
  async beginStream(key: Buffer, version: Version, size: number): Promise<PutStream> {
    return new EnginePutStream(await settle(() => this.handle.beginStream(key, version.timestamp, version.tick, version.node, size)));
  }

  /** The newest record of key. Rejects with OYSTER_CORRUPTION if that record fails its checksum. */
  get(key: Buffer): Promise<StoredRecord | null> {
    return settle(() => this.handle.get(key));
  }

  exists(keys: Buffer[]): Promise<Array<KeyState | null>> {
    return settle(() => this.handle.exists(keys));
  }

  /** Every record stored: superseded versions and tombstones included. */
  recordsCount(): Promise<number> {
    return settle(() => this.handle.recordsCount());
  }

  stats(): Promise<EngineStats> {
    return settle(() => this.handle.stats());
  }

  /** The newest record of every key stored (values are read with get). */
  async snapshot(): Promise<SnapshotEntry[]> {
    return decodeEntries(await settle(() => this.handle.snapshot()), this.keySize);
  }

  /** Seals the active blob and writes its index; resolves once the index is on disk. */
  closeActiveBlob(): Promise<void> {
    return settle(() => this.handle.closeActiveBlob());
  }

  /** Finishes queued writes, writes missing index files, releases the directory. */
  close(): Promise<void> {
    return settle(() => this.handle.close());
  }
}

const opened = (r: NativeOpenedValue): OpenedValue => ({ kind: 'found', version: r.version, size: r.size, head: r.head, reader: new EngineValueReader(r.reader) });

// Where readNewestNow copies a value; values that do not fit are read on the
// engine threads, as a large copy is no job for the event loop.
const NOW_LIMIT = 64 * 1024;
const nowValue = Buffer.allocUnsafeSlow(NOW_LIMIT);
const nowMeta = new Float64Array(3); // timestamp, tick, node

/**
 * Several engines read as one: the partitions of one vdisk. Reads return the
 * newest record across them by compareRecords; full ties go to the earlier engine.
 */
export class EngineSet {
  // Built once per set of partitions: engines are checked here, not per read.
  private readonly handle: NativeEngineSet | null;

  constructor(readonly engines: readonly Engine[]) {
    this.handle = engines.length === 0 ? null : new native.EngineSet(engines.map((e) => e.handle), nowValue, nowMeta);
  }

  get size(): number {
    return this.engines.length;
  }

  /** The newest record of key, in one trip to the engine threads. */
  getNewest(key: Buffer): Promise<StoredRecord | null> {
    return this.handle === null ? Promise.resolve(null) : settle(() => this.handle!.getNewest(key));
  }

  /**
   * As getNewest, but a value of more than wholeUpTo bytes is not read: it
   * comes as a ValueReader to be read in parts (and closed). Rejects with
   * OYSTER_CORRUPTION (err.version set) if the newest record's header fails
   * its checks.
   */
  async openNewest(key: Buffer, wholeUpTo: number): Promise<StoredRecord | OpenedValue | null> {
    if (this.handle === null) return null;
    const r = await settle(() => this.handle!.openNewest(key, wholeUpTo));
    return r === null || !('reader' in r) ? r : opened(r);
  }

  /**
   * getNewest answered at once, on this thread, when memory and the page
   * cache hold everything needed (a page-cache copy costs less than a trip
   * to the engine threads and back); undefined when the read would have to
   * wait for the disk or a writer. A value over 64 KiB is not copied: with
   * `open` it is opened as openNewest opens it (its header and block
   * checksums read here, its bytes left to the reader), else undefined.
   * Throws what getNewest would reject with.
   */
  readNewestNow(key: Buffer): StoredRecord | null | undefined;
  readNewestNow(key: Buffer, open: boolean): StoredRecord | OpenedValue | null | undefined;
  readNewestNow(key: Buffer, open = false): StoredRecord | OpenedValue | null | undefined {
    if (this.handle === null) return null;
    const n = this.handle.readNewestNow(key, open);
    if (n === undefined) return undefined;
    if (typeof n === 'object') return opened(n);
    if (n === -1) return null;
    const version = { timestamp: nowMeta[0], tick: nowMeta[1], node: nowMeta[2] };
    if (n === -2) return { kind: 'deleted', version };
    // Small values come from Node's shared buffer pool: no allocation of their own.
    const value = Buffer.allocUnsafe(n);
    nowValue.copy(value, 0, 0, n);
    return { kind: 'found', version, value };
  }

  /**
   * The newest record (without value) of key at once, on this thread, when
   * memory and the page cache hold the index entries needed; undefined when
   * it would have to wait. Throws what lookupNewest would reject with.
   */
  lookupNewestNow(key: Buffer): KeyState | null | undefined {
    if (this.handle === null) return null;
    const n = this.handle.lookupNewestNow(key);
    if (n === undefined) return undefined;
    if (n === -1) return null;
    return { kind: n === -2 ? 'deleted' : 'found', version: { timestamp: nowMeta[0], tick: nowMeta[1], node: nowMeta[2] } };
  }

  /** The newest record (without value) of each key. */
  lookupNewest(keys: Buffer[]): Promise<Array<KeyState | null>> {
    return this.handle === null ? Promise.resolve(keys.map(() => null)) : settle(() => this.handle!.lookupNewest(keys));
  }

  /**
   * Digests of the newest record of every key (tombstones included), in
   * 2^bits buckets (bits 0..MAX_DIGEST_BITS), by which replicas find where
   * they differ: `digests` holds bucket b's digest as a u64 LE at b * 8, and
   * `keys` counts the distinct keys. Sets holding the same newest record of
   * every key have equal digests, however the records are spread and
   * whatever older versions they hold. Bucket and digest are defined in
   * docs/FORMAT.md ("Replica digests"). No value is read; every index is
   * read once per slice of about a million keys.
   */
  digest(bits: number): Promise<{ digests: Buffer; keys: number }> {
    return settle(() => {
      if (this.handle !== null) return this.handle.digest(bits);
      checkDigestArgs(bits);
      return Promise.resolve({ digests: Buffer.alloc(8 * 2 ** bits), keys: 0 });
    });
  }

  /**
   * Starts compacting blob `blobId` of `engine` (one of this set's): records
   * no read returns are left out, judged across the whole set. Rejects with
   * OYSTER_NOT_FOUND, OYSTER_INVALID_ARGUMENT (not closed) or OYSTER_BUSY
   * (a compaction of the engine runs).
   */
  async beginCompaction(engine: Engine, blobId: number, tombstones: TombstonePolicy): Promise<Compaction> {
    const handle = this.handle;
    if (handle === null) throw new Error('an empty engine set has nothing to compact');
    return new Compaction(await settle(() => handle.beginCompaction(engine.handle, blobId, tombstones.graceSeconds, tombstones.drop, tombstones.nowSeconds ?? 0)));
  }

  /** Counts every blob's garbage anew (a scan of every index, as digest). */
  countGarbage(tombstones: TombstonePolicy): Promise<GarbageSummary> {
    const handle = this.handle;
    if (handle === null) return Promise.resolve({ keys: 0, tombstones: 0, garbageRecords: 0, garbageBytes: 0, deadTombstones: 0, deadTombstoneBytes: 0 });
    return settle(() => handle.countGarbage(tombstones.graceSeconds, tombstones.drop, tombstones.nowSeconds ?? 0));
  }

  /**
   * Starts scrubbing blob `blobId` of `engine` (one of this set's): its
   * records that reads of the set return are checked against their
   * checksums. Rejects with OYSTER_NOT_FOUND or OYSTER_INVALID_ARGUMENT (not
   * closed).
   */
  async beginScrub(engine: Engine, blobId: number): Promise<Scrub> {
    const handle = this.handle;
    if (handle === null) throw new Error('an empty engine set has nothing to scrub');
    return new Scrub(await settle(() => handle.beginScrub(engine.handle, blobId)));
  }

  /**
   * The newest record of every key whose bucket among 2^bits is one of
   * `buckets` (any order, repeats allowed), sorted by key bytes, so that two
   * replicas' lists merge in one pass.
   */
  async entries(bits: number, buckets: number[]): Promise<SnapshotEntry[]> {
    checkDigestArgs(bits, buckets);
    if (this.handle === null) return [];
    return decodeEntries(await this.handle.entries(bits, Uint32Array.from(buckets)), this.engines[0].keySize);
  }
}

/** When a tombstone that hides nothing any more may go (native/engine/tombstone_policy.h). */
export interface TombstonePolicy {
  graceSeconds: number;
  /** False keeps every tombstone (records of the vdisk may still arrive from elsewhere on this node). */
  drop: boolean;
  /** Seconds since the epoch to measure the grace from; 0 or absent: now. */
  nowSeconds?: number;
}

/**
 * The compaction of one closed blob of one engine of a set: step through it
 * (each step reads and writes about `budget` bytes), then install, and close
 * in any case (an uninstalled compaction's files are removed).
 */
export class Compaction {
  constructor(private readonly handle: NativeCompaction) {}

  step(budget: number): Promise<{ done: boolean; stats: CompactionStats }> {
    return settle(() => this.handle.step(budget));
  }

  install(): Promise<CompactionStats> {
    return settle(() => this.handle.install());
  }

  close(): Promise<void> {
    return settle(() => this.handle.close());
  }
}

/**
 * The scrub of one closed blob: step through it (each step reads about
 * `budget` bytes) and close it. Each damaged record is reported once, by
 * the step that found it.
 */
export class Scrub {
  constructor(private readonly handle: NativeScrub) {}

  step(budget: number): Promise<{ done: boolean; stats: ScrubStats; damaged: ScrubDamage[] }> {
    return settle(() => this.handle.step(budget));
  }

  close(): Promise<void> {
    return settle(() => this.handle.close());
  }
}

export const engineInfo = {
  threads: native.poolSize,
  crc32cHardware: native.crc32cHardware,
  format: native.format,
};
