// Partition: one time partition of one vdisk in one directory (bob's
// holder), served by one native engine. Every record goes to the partition
// whose interval [start, start + period) holds its timestamp; a partition is
// one directory named "<start>_<hash>" (docs/FORMAT.md §0).
import fs from 'node:fs';
import path from 'node:path';
import { Engine, EngineErrorCode, EngineOptions, isEngineError } from './engine';

export class Partition {
  /** Last put or delete, in ms since the epoch (drives closing idle active blobs). */
  lastWrite = 0;
  /** Takes no more writes (its records are being handed over); still read. */
  sealed = false;
  private writes = 0;
  private idle: (() => void) | null = null;

  private constructor(
    readonly engine: Engine,
    readonly dirName: string,
    readonly start: number,
    readonly periodSeconds: number,
  ) {}

  /**
   * Opens (creating it if needed) and recovers the partition directory
   * `dirName` in `parent`, trying up to `attempts` times `retryDelayMs`
   * apart (pearl.fail_retry_count / fail_retry_timeout); a format the engine
   * refuses is not retried.
   */
  static async open(parent: string, dirName: string, periodSeconds: number, options: EngineOptions, attempts: number, retryDelayMs: number): Promise<Partition> {
    const start = parsePartitionName(dirName)!.start;
    let lastError: unknown;
    for (let attempt = 0; attempt < Math.max(1, attempts); attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, retryDelayMs));
      try {
        return new Partition(await Engine.open(path.join(parent, dirName), options), dirName, start, periodSeconds);
      } catch (err) {
        lastError = err;
        if (isEngineError(err, EngineErrorCode.notSupported) || isEngineError(err, EngineErrorCode.invalidArgument)) break;
      }
    }
    throw lastError;
  }

  get end(): number {
    return this.start + this.periodSeconds;
  }

  get dir(): string {
    return this.engine.dir;
  }

  contains(timestamp: number): boolean {
    return timestamp >= this.start && timestamp < this.end;
  }

  /** The partition "now" belongs to: it cannot be detached or deleted. */
  isCurrent(nowSeconds: number): boolean {
    return this.contains(nowSeconds);
  }

  /** Runs a write, counted so that sealing can wait for the writes in flight. */
  async write(fn: (engine: Engine) => Promise<void>): Promise<void> {
    this.lastWrite = Date.now();
    this.writes++;
    try {
      await fn(this.engine);
    } finally {
      if (--this.writes === 0 && this.idle) this.idle();
    }
  }

  /** Seals the partition; resolves once the writes already started are done. */
  seal(): Promise<void> {
    this.sealed = true;
    if (this.writes === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.idle = () => {
        this.idle = null;
        resolve();
      };
    });
  }

  close(): Promise<void> {
    return this.engine.close();
  }

  /**
   * The blobs of this partition that have their index file, and those index
   * files: immutable, so another replica can copy them whole (a refill).
   * `blobPrefix` is what the names of its blob files start with.
   */
  async closedFileNames(blobPrefix: string): Promise<string[]> {
    const names = new Set(await fs.promises.readdir(this.dir));
    const out: string[] = [];
    for (const name of names) {
      const m = /^(.+)\.(\d{1,19})\.blob$/.exec(name);
      if (m && m[1] === blobPrefix && names.has(`${m[1]}.${m[2]}.index`)) out.push(name, `${m[1]}.${m[2]}.index`);
    }
    return out;
  }
}

/** Newest partition first; ties of equal start keep directory name order. */
export function newestFirst(partitions: Partition[]): Partition[] {
  return partitions.sort((a, b) => b.start - a.start || (a.dirName < b.dirName ? -1 : a.dirName > b.dirName ? 1 : 0));
}

/** The partition directories in `dir` (names parsePartitionName accepts). */
export async function partitionDirs(dir: string): Promise<string[]> {
  const entries = await fs.promises.readdir(dir, { withFileTypes: true });
  return entries.filter((e) => e.isDirectory() && parsePartitionName(e.name) !== null).map((e) => e.name);
}

const DAY = 86_400;

/**
 * Start (seconds) of the partition holding `timestamp` for a period of
 * `periodSeconds`. Periods up to a day start at 00:00 UTC and step by the
 * period within the day, as bob does (a 7 h period gives 00, 07, 14, 21 h);
 * longer periods are aligned to multiples of the period since the epoch
 * (bob's week alignment is broken).
 */
export function partitionStart(timestamp: number, periodSeconds: number): number {
  if (periodSeconds <= DAY) {
    const dayStart = timestamp - (timestamp % DAY);
    return dayStart + Math.floor((timestamp - dayStart) / periodSeconds) * periodSeconds;
  }
  return timestamp - (timestamp % periodSeconds);
}

export interface PartitionName {
  start: number;
  /** Everything after the first "_" (bob: the owner hash); empty if there is none. */
  suffix: string;
}

/** "<u64>" or "<u64>_<anything>"; null for other names. */
export function parsePartitionName(name: string): PartitionName | null {
  const m = /^(\d{1,20})(?:_(.*))?$/s.exec(name);
  if (!m) return null;
  const start = Number(m[1]);
  if (!Number.isSafeInteger(start)) return null;
  return { start, suffix: m[2] ?? '' };
}

export function partitionDirName(start: number, hash: string): string {
  return `${start}_${hash}`;
}
