// Engine: the typed face of one native storage engine instance, which owns
// one partition directory. All disk work happens on the addon's threads.
import { native, NativeEngine, NativeOpenOptions, NativeRecovery, NativeStats } from './native';

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
    private readonly handle: NativeEngine,
    readonly dir: string,
    readonly keySize: number,
    readonly recovery: RecoveryReport,
  ) {}

  /** Opens (creating it if needed) and recovers a partition directory. */
  static async open(dir: string, options: EngineOptions = {}): Promise<Engine> {
    const { engine, recovery } = await settle(() => native.open(dir, options));
    return new Engine(engine, dir, options.keySize ?? 16, recovery);
  }

  /**
   * The newest record of key across several engines (the partitions of one
   * vdisk), in one trip to the engine threads. Ties go to the earlier engine.
   */
  static getNewest(engines: Engine[], key: Buffer): Promise<GetResult> {
    return settle(() => native.getNewest(engines.map((e) => e.handle), key));
  }

  /** The newest version (without value) of each key across several engines. */
  static lookupNewest(engines: Engine[], keys: Buffer[]): Promise<LookupResult[]> {
    return settle(() => native.lookupNewest(engines.map((e) => e.handle), keys));
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

export const engineInfo = {
  threads: native.poolSize,
  crc32cHardware: native.crc32cHardware,
  format: native.format,
};
