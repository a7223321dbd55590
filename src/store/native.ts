// Loads the native addon built by cmake-js (build/Release/oyster.node) and
// describes its interface. Everything else uses ./engine, not this module.
import path from 'node:path';
import { KeyState, StoredRecord, Version } from '../model/version';

export interface NativeOpenOptions {
  keySize?: number;
  maxBlobSize?: number;
  maxDataInBlob?: number;
  maxDirtyBytesBeforeSync?: number;
  syncWrites?: boolean;
  bloomBitsPerKey?: number;
  blobFilePrefix?: string;
  /** Where the index blocks of closed blobs read are kept and read again (one cache for every engine of the node). */
  cache?: NativeCache;
}

/** A read cache (native/util/cache.h): the index blocks read last, within `capacity` bytes. */
export interface NativeCache {
  stats(): { capacity: number; usage: number; entries: number; hits: number; misses: number };
}

export interface NativeRecovery {
  blobs: number;
  indexesLoaded: number;
  blobsScanned: number;
  indexesRebuilt: number;
  bytesTruncated: number;
  corruptRecords: number;
  skippedBytes: number;
  blobsQuarantined: number;
  filesRemoved: number;
  events: string[];
}

export interface NativeStats {
  blobs: number;
  records: number;
  activeBlobId: number | null;
  diskBytes: number;
  indexMemory: number;
  filterMemory: number;
  blobsInMemory: number;
  corruptReads: number;
  indexRepairs: number;
  /** Timestamp of the largest version stored (0 when empty). */
  maxTimestamp: number;
  /** The largest tick of any record stored: a node's clock starts above it after a restart. */
  maxTick: number;
  backgroundError: string | null;
  writeError: string | null;
  /** Sums of the blobs' garbage (records no read returns any more) and dead tombstones. */
  garbageRecords: number;
  garbageBytes: number;
  deadTombstones: number;
  deadTombstoneBytes: number;
  /** Sum of the blobs' live tombstones (newest records of their key that are tombstones). */
  liveTombstones: number;
  /**
   * records - garbageRecords - liveTombstones: summed over a vdisk's
   * partitions, its keys whose newest record is a value (exact once a
   * garbage count ran since the partitions opened; native/engine/blob.h).
   */
  liveKeys: number;
  /** Newest blob first. */
  blobStats: NativeBlobStats[];
}

/** One blob of an engine (native/engine/engine.h BlobStats). */
export interface NativeBlobStats {
  id: number;
  size: number;
  records: number;
  /** Takes no more records and has its index file: may be compacted. */
  closed: boolean;
  garbageRecords: number;
  garbageBytes: number;
  /** Tombstones a compaction would drop (as of the last garbage count). */
  deadTombstones: number;
  deadTombstoneBytes: number;
  /** Records that are the newest of their key across the vdisk and are tombstones. */
  liveTombstones: number;
}

/** Where a compaction stands (native/engine/compaction.h CompactionStats). */
export interface NativeCompactionStats {
  blobId: number;
  sourceSize: number;
  sourceRecords: number;
  entries: number;
  visited: number;
  keptRecords: number;
  droppedRecords: number;
  droppedTombstones: number;
  damagedKept: number;
  headersRebuilt: number;
  bytesRead: number;
  bytesWritten: number;
  installed: boolean;
  /** Of the new blob once installed; 0 when the blob was removed. */
  newSize: number;
}

/** One compaction of one closed blob (native/engine/compaction.h). Calls run one after the other. */
export interface NativeCompaction {
  /** Decides on and copies records until about `budget` bytes were read and written. */
  step(budget: number): Promise<{ done: boolean; stats: NativeCompactionStats }>;
  /** Swaps the new blob in (after step reported done). */
  install(): Promise<NativeCompactionStats>;
  /** Drops the compaction; uninstalled, its new files are removed. Idempotent. */
  close(): Promise<void>;
}

/** Where a scrub stands (native/engine/scrub.h ScrubStats). */
export interface NativeScrubStats {
  blobId: number;
  /** Records the blob's index points at. */
  entries: number;
  /** Of those, passed so far: checked, or superseded (a read of the key returns another record). */
  visited: number;
  superseded: number;
  bytesRead: number;
  damaged: number;
  /** The blob's index was damaged and rebuilt from the blob. */
  indexRepaired: boolean;
}

/** A record that failed its checks (native/engine/scrub.h ScrubDamage). */
export interface NativeScrubDamage {
  key: Buffer;
  /** Of the index entry: what the record should hold. */
  version: Version;
  tombstone: boolean;
  /** Of the record's header in the blob. */
  offset: number;
  message: string;
}

/** One scrub of one closed blob (native/engine/scrub.h). Calls run one after the other. */
export interface NativeScrub {
  /** Checks records until about `budget` bytes were read; `damaged`: found by this step. */
  step(budget: number): Promise<{ done: boolean; stats: NativeScrubStats; damaged: NativeScrubDamage[] }>;
  /** Drops the scrub. Idempotent. */
  close(): Promise<void>;
}

/** What EngineSet::CountGarbage found, summed over the set. */
export interface NativeGarbageSummary {
  keys: number;
  tombstones: number;
  garbageRecords: number;
  garbageBytes: number;
  deadTombstones: number;
  deadTombstoneBytes: number;
}

/** A streamed put (native/engine/put_stream.h): a value written piece by piece, published whole. */
export interface NativePutStream {
  /** Appends the pieces in order (one vectored write); the buffers must stay unchanged until it settles. Rejects (OYSTER_INVALID_ARGUMENT if more than the announced size, OYSTER_IO_ERROR ...) — the stream is then aborted. */
  append(pieces: Buffer[]): Promise<void>;
  /** Publishes the record once all `size` bytes are in (rejects with OYSTER_INVALID_ARGUMENT if fewer); resolves when it is durable per the sync policy and visible to reads. */
  finish(): Promise<void>;
  /** Gives the stream up: nothing becomes readable. May be called at any time, also while an append is in flight (takes effect after it); idempotent; a no-op after finish resolved. */
  abort(): Promise<void>;
}

/** A value opened to be read in parts: head holds its first bytes, unchecked (ValueReader::head). */
export interface NativeOpenedValue {
  kind: 'found';
  version: Version;
  size: number;
  head: Buffer;
  reader: NativeValueReader;
}

/** A reader of one stored value in parts (native/engine/value_reader.h). */
export interface NativeValueReader {
  readonly size: number;
  /** Value bytes [offset, offset + target.length) into target, verified as ValueReader does; rejects with OYSTER_CORRUPTION (err.version set) when a checked part fails. */
  read(offset: number, target: Buffer): Promise<void>;
  /** `prefix` ('latin1'), then value bytes [offset, offset + n), sent to the non-blocking socket `fd`, the value's straight from the blob's file, each window verified first (the prefix leaves with the first); resolves with the bytes sent, prefix first, fewer than its length + n once the socket's buffer is full; rejects as read does, or with OYSTER_IO_ERROR when the socket fails. */
  sendTo(fd: number, offset: number, n: number, prefix?: string): Promise<number>;
  /** Without block checksums: reads the rest of the value into its CRC and checks it, the reader's position kept; resolves at once with block checksums or once the whole value passed; rejects as read does. */
  checkRest(): Promise<void>;
  /** Releases the record's blob; later reads reject. Idempotent. A reader dropped without close is released when collected. */
  close(): void;
}

export interface NativeEngine {
  /** The version is passed positionally: no object for the addon to take apart. */
  put(key: Buffer, timestamp: number, tick: number, node: number, value: Buffer): Promise<void>;
  delete(key: Buffer, timestamp: number, tick: number, node: number): Promise<void>;
  beginStream(key: Buffer, timestamp: number, tick: number, node: number, size: number): Promise<NativePutStream>;
  get(key: Buffer): Promise<StoredRecord | null>;
  exists(keys: Buffer[]): Promise<Array<KeyState | null>>;
  recordsCount(): Promise<number>;
  stats(): Promise<NativeStats>;
  snapshot(): Promise<Buffer>;
  closeActiveBlob(): Promise<void>;
  close(): Promise<void>;
}

/** The engines of one vdisk read as one (native/engine/engine_set.h). */
export interface NativeEngineSet {
  getNewest(key: Buffer): Promise<StoredRecord | null>;
  /** As getNewest, but a value larger than wholeUpTo bytes comes as a reader instead of being read. */
  openNewest(key: Buffer, wholeUpTo: number): Promise<StoredRecord | NativeOpenedValue | null>;
  /**
   * getNewest without waiting: the value's length (value at the start of
   * `into`), -1 no record, -2 tombstone, undefined if it would wait; meta =
   * [timestamp, tick, node]. A value larger than `into`: opened as
   * openNewest opens it with `open`, else undefined.
   */
  readNewestNow(key: Buffer, open?: boolean): number | NativeOpenedValue | undefined;
  lookupNewest(keys: Buffer[]): Promise<Array<KeyState | null>>;
  /** lookupNewest of one key without waiting: -1 no record, -2 tombstone, 1 value, undefined if it would wait; meta = [timestamp, tick, node]. */
  lookupNewestNow(key: Buffer): number | undefined;
  /** 2^bits digests (u64 LE each) of the newest records of the keys, bucketed; bits 0..16. */
  digest(bits: number): Promise<{ digests: Buffer; keys: number }>;
  /** The newest records of the keys of `buckets` (each below 2^bits), packed as snapshot packs them, sorted by key. */
  entries(bits: number, buckets: Uint32Array): Promise<Buffer>;
  /** Compaction::Begin of blob `blobId` of `engine` (one of the set's); nowSeconds 0: now. */
  beginCompaction(engine: NativeEngine, blobId: number, graceSeconds: number, dropTombstones: boolean, nowSeconds: number): Promise<NativeCompaction>;
  /** Scrub::Begin of blob `blobId` of `engine` (one of the set's), checking what reads of the set return. */
  beginScrub(engine: NativeEngine, blobId: number): Promise<NativeScrub>;
  /** EngineSet::CountGarbage: sets every blob's garbage counts anew. */
  countGarbage(graceSeconds: number, dropTombstones: boolean, nowSeconds: number): Promise<NativeGarbageSummary>;
}

/** Whole-file operations on the engine threads (native/addon/files_wrap.h). */
export interface NativeFiles {
  read(path: string, offset: number, target: Buffer): Promise<number>;
  write(path: string, offset: number, data: Buffer, create: boolean): Promise<void>;
  sync(path: string): Promise<void>;
  syncDir(dir: string): Promise<void>;
  createDir(dir: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  remove(path: string): Promise<void>;
  list(dir: string): Promise<string[]>;
}

/** Socket descriptors (native/addon/socket_wrap.h). */
export interface NativeSocket {
  /** A new descriptor of the same open socket (close-on-exec); throws (code EBADF, ENOTSOCK, EMFILE) when there is none to give. */
  duplicate(fd: number): number;
}

export interface NativeAddon {
  open(dir: string, options: NativeOpenOptions): Promise<{ engine: NativeEngine; recovery: NativeRecovery }>;
  EngineSet: new (engines: NativeEngine[], into: Buffer, meta: Float64Array) => NativeEngineSet;
  Cache: new (capacity: number) => NativeCache;
  crc32c(data: Buffer): number;
  files: NativeFiles;
  socket: NativeSocket;
  poolSize: number;
  crc32cHardware: boolean;
  format: { blobHeaderSize: number; recordFixedSize: number; indexHeaderSize: number; indexBlockSize: number };
}

// dist/src/store/native.js -> <package root>/build/Release/oyster.node
const addonPath = path.resolve(__dirname, '..', '..', '..', 'build', 'Release', 'oyster.node');

// eslint-disable-next-line @typescript-eslint/no-require-imports
export const native: NativeAddon = require(addonPath);
