// What a disk's file system says: how much room is left, and which failures
// mean the disk is gone or full rather than a problem of one request (or of
// the client's connection).
import fs from 'node:fs';
import { Space } from '../config/reader';
import { Logger } from '../logging/logger';
import { EngineErrorCode, isEngineError } from './engine';

/**
 * The space an unprivileged user may still use on the file system holding
 * `dir`, and what `min` (node.yaml min_free_space) comes to there, in bytes;
 * null when the file system cannot be asked.
 */
export async function freeSpace(dir: string, min: Space): Promise<{ free: number; min: number } | null> {
  const st = await fs.promises.statfs(dir).catch(() => null);
  if (!st) return null;
  return { free: st.bavail * st.bsize, min: 'bytes' in min ? min.bytes : Math.ceil((st.blocks * st.bsize * min.percent) / 100) };
}

export const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

const DEVICE_ERRNO = new Set(['EIO', 'ENOENT', 'ENOTDIR', 'EROFS', 'ENODEV', 'ENXIO', 'ESTALE', 'EACCES', 'EPERM', 'EBADF']);

/** Whether the disk is gone or broken: it goes NotReady and is retried later. */
export function isDiskFailure(err: unknown): boolean {
  if (isEngineError(err, EngineErrorCode.io)) return err.syscallCode !== undefined && DEVICE_ERRNO.has(err.syscallCode);
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' && DEVICE_ERRNO.has(code);
}

const CONNECTION_ERRNO = new Set(['EPIPE', 'ECONNRESET', 'ENOTCONN', 'ECONNABORTED', 'ETIMEDOUT']);

/** Whether a send of stored bytes to a client failed because the client went away: no fault of the disk's. */
export function isConnectionError(err: unknown): boolean {
  return isEngineError(err, EngineErrorCode.io) && err.syscallCode !== undefined && CONNECTION_ERRNO.has(err.syscallCode);
}

const NO_SPACE_ERRNO = new Set(['ENOSPC', 'EDQUOT']);

/** Whether the disk (or the user's quota on it) is full: the request fails, the disk stays in service. */
export function isNoSpace(err: unknown): boolean {
  if (isEngineError(err, EngineErrorCode.io)) return err.syscallCode !== undefined && NO_SPACE_ERRNO.has(err.syscallCode);
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' && NO_SPACE_ERRNO.has(code);
}

/**
 * Whether a disk takes writes: it had min_free_space free when last looked
 * at. A change is logged once and told to onChange.
 */
export class SpaceWatch {
  private _writable = true;
  // Why writes are refused, for the error of each refused write.
  private _fullness = '';

  constructor(
    private readonly disk: { name: string; alien: boolean; root: string },
    private readonly min: Space,
    private readonly log: Logger,
    private readonly onChange?: (writable: boolean) => void,
  ) {}

  get writable(): boolean {
    return this._writable;
  }
  get fullness(): string {
    return this._fullness;
  }

  /** Looks at the free space; a disk that cannot be asked keeps its last answer (the disk's monitor sees it is gone). */
  async check(): Promise<void> {
    const space = await freeSpace(this.disk.root, this.min);
    if (!space) return;
    const { free, min } = space;
    const { name, alien } = this.disk;
    const writable = free >= min;
    this._fullness = `${name}: ${mib(free)} free, below min_free_space (${mib(min)}); writes resume once space is freed`;
    if (writable === this._writable) return;
    this._writable = writable;
    const fields = { disk: name, alien, freeBytes: free, minFreeBytes: min };
    if (writable) this.log.info(fields, `disk ${name} takes writes again`);
    else this.log.warn(fields, `disk ${name} is full: ${mib(free)} free, below min_free_space (${mib(min)}); writes refused, reads go on`);
    this.onChange?.(writable);
  }
}
