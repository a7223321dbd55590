// Loads the native addon built by cmake-js (build/Release/oyster.node) and
// describes its interface. Everything else uses ./engine, not this module.
import path from 'node:path';

export interface NativeOpenOptions {
  keySize?: number;
  maxBlobSize?: number;
  maxDataInBlob?: number;
  maxDirtyBytesBeforeSync?: number;
  syncWrites?: boolean;
  bloomBitsPerKey?: number;
  blobFilePrefix?: string;
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
  backgroundError: string | null;
  writeError: string | null;
}

export type NativeGetResult =
  | { kind: 'found'; timestamp: number; value: Buffer }
  | { kind: 'deleted'; timestamp: number }
  | null;

export type NativeLookupResult = { kind: 'found' | 'deleted'; timestamp: number } | null;

export interface NativeEngine {
  put(key: Buffer, timestamp: number, value: Buffer): Promise<void>;
  delete(key: Buffer, timestamp: number): Promise<void>;
  get(key: Buffer): Promise<NativeGetResult>;
  exists(keys: Buffer[]): Promise<NativeLookupResult[]>;
  recordsCount(): Promise<number>;
  stats(): Promise<NativeStats>;
  snapshot(): Promise<Buffer>;
  closeActiveBlob(): Promise<void>;
  close(): Promise<void>;
}

/** The engines of one vdisk read as one (native/addon/engine_wrap.h). */
export interface NativeEngineSet {
  getNewest(key: Buffer): Promise<NativeGetResult>;
  /** getNewest without waiting: the value's length (value at the start of `into`), -1 no record, -2 tombstone, undefined if it would wait; meta[0] = timestamp. */
  readNewestNow(key: Buffer): number | undefined;
  lookupNewest(keys: Buffer[]): Promise<NativeLookupResult[]>;
}

export interface NativeAddon {
  open(dir: string, options: NativeOpenOptions): Promise<{ engine: NativeEngine; recovery: NativeRecovery }>;
  EngineSet: new (engines: NativeEngine[], into: Buffer, meta: Float64Array) => NativeEngineSet;
  crc32c(data: Buffer): number;
  poolSize: number;
  crc32cHardware: boolean;
  format: { blobHeaderSize: number; recordFixedSize: number; indexHeaderSize: number; indexBlockSize: number };
}

// dist/src/engine/native.js -> <package root>/build/Release/oyster.node
const addonPath = path.resolve(__dirname, '..', '..', '..', 'build', 'Release', 'oyster.node');

// eslint-disable-next-line @typescript-eslint/no-require-imports
export const native: NativeAddon = require(addonPath);
