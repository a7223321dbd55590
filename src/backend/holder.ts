// Holder: one time partition of one vdisk on one disk, i.e. one partition
// directory served by one native engine.
import { Engine, EngineOptions } from '../engine/engine';

export class Holder {
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

  static async open(
    dir: string,
    dirName: string,
    start: number,
    periodSeconds: number,
    options: EngineOptions,
  ): Promise<Holder> {
    return new Holder(await Engine.open(dir, options), dirName, start, periodSeconds);
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

  /** Seals the holder; resolves once the writes already started are done. */
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
}
