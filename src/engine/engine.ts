// Engine: the typed face of one native storage engine instance, which owns
// one partition directory. All disk work happens on the addon's threads.
import { native, NativeEngine, NativeEngineSet, NativeOpenOptions, NativeRecovery, NativeStats } from './native';

export type EngineOptions = NativeOpenOptions;
export type RecoveryReport = NativeRecovery;
export type EngineStats = NativeStats;

export interface Found {
  kind: 'found';
  timestamp: number;
  value: Buffer;
}
export interface Deleted {
  kind: 'deleted';
  timestamp: number;
}
/** The newest record of a key: its value, its tombstone, or null if it has none. */
export type GetResult = Found | Deleted | null;
/** Like GetResult, without the value. */
export type LookupResult = { kind: 'found' | 'deleted'; timestamp: number } | null;

/** The newest version of one key, without its value. */
export interface SnapshotEntry {
  key: Buffer;
  kind: 'found' | 'deleted';
  timestamp: number;
}

/** Error codes of engine failures (`err.code`). */
export const EngineErrorCode = {
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
  /** For corruption found by get(): the timestamp of the damaged record. */
  timestamp?: number;
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

  /** Stores value under key with a version timestamp (seconds); newest timestamp wins, ties go to the later write. */
  put(key: Buffer, timestamp: number, value: Buffer): Promise<void> {
    return settle(() => this.handle.put(key, timestamp, value));
  }

  /** Writes a tombstone: the key reads as deleted unless a newer version exists. */
  delete(key: Buffer, timestamp: number): Promise<void> {
    return settle(() => this.handle.delete(key, timestamp));
  }

  /** The newest record of key. Rejects with OYSTER_CORRUPTION if that record fails its checksum. */
  get(key: Buffer): Promise<GetResult> {
    return settle(() => this.handle.get(key));
  }

  exists(keys: Buffer[]): Promise<LookupResult[]> {
    return settle(() => this.handle.exists(keys));
  }

  /** Every record stored: superseded versions and tombstones included. */
  recordsCount(): Promise<number> {
    return settle(() => this.handle.recordsCount());
  }

  stats(): Promise<EngineStats> {
    return settle(() => this.handle.stats());
  }

  /** The newest version of every key stored (values are read with get). */
  async snapshot(): Promise<SnapshotEntry[]> {
    const packed = await settle(() => this.handle.snapshot());
    const size = 9 + this.keySize;
    const out: SnapshotEntry[] = [];
    for (let off = 0; off + size <= packed.length; off += size) {
      out.push({
        kind: packed[off] === 2 ? 'deleted' : 'found',
        timestamp: Number(packed.readBigUInt64LE(off + 1)),
        key: packed.subarray(off + 9, off + size),
      });
    }
    return out;
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

// Where readNewestNow copies a value; values that do not fit are read on the
// engine threads, as a large copy is no job for the event loop.
const NOW_LIMIT = 64 * 1024;
const nowValue = Buffer.allocUnsafeSlow(NOW_LIMIT);
const nowMeta = new Float64Array(1);

/**
 * Several engines read as one: the partitions of one vdisk. Reads return the
 * newest version across them; ties go to the earlier engine.
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
  getNewest(key: Buffer): Promise<GetResult> {
    return this.handle === null ? Promise.resolve(null) : settle(() => this.handle!.getNewest(key));
  }

  /**
   * getNewest answered at once, on this thread, when memory and the page
   * cache hold everything needed (a page-cache copy costs less than a trip
   * to the engine threads and back); undefined when the read would have to
   * wait for the disk or a writer, or the value is over 64 KiB. Throws what
   * getNewest would reject with.
   */
  readNewestNow(key: Buffer): GetResult | undefined {
    if (this.handle === null) return null;
    const n = this.handle.readNewestNow(key);
    if (n === undefined) return undefined;
    if (n === -1) return null;
    if (n === -2) return { kind: 'deleted', timestamp: nowMeta[0] };
    // Small values come from Node's shared buffer pool: no allocation of their own.
    const value = Buffer.allocUnsafe(n);
    nowValue.copy(value, 0, 0, n);
    return { kind: 'found', timestamp: nowMeta[0], value };
  }

  /** The newest version (without value) of each key. */
  lookupNewest(keys: Buffer[]): Promise<LookupResult[]> {
    return this.handle === null ? Promise.resolve(keys.map(() => null)) : settle(() => this.handle!.lookupNewest(keys));
  }
}

export const engineInfo = {
  threads: native.poolSize,
  crc32cHardware: native.crc32cHardware,
  format: native.format,
};
