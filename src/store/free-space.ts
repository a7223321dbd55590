// What a disk's file system says: how much room is left, and which failures
// mean the disk is gone or full rather than a problem of one request.
import fs from 'node:fs';
import { Space } from '../config/reader';
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

const NO_SPACE_ERRNO = new Set(['ENOSPC', 'EDQUOT']);

/** Whether the disk (or the user's quota on it) is full: the request fails, the disk stays in service. */
export function isNoSpace(err: unknown): boolean {
  if (isEngineError(err, EngineErrorCode.io)) return err.syscallCode !== undefined && NO_SPACE_ERRNO.has(err.syscallCode);
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' && NO_SPACE_ERRNO.has(code);
}
