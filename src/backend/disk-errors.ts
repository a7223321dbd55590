// Which failures mean "this disk is gone or broken" (the controller goes
// NotReady and retries later) rather than a problem of one request.
import { isEngineError, EngineErrorCode } from '../engine/engine';

const DEVICE_ERRNO = new Set(['EIO', 'ENOENT', 'ENOTDIR', 'EROFS', 'ENODEV', 'ENXIO', 'ESTALE', 'EACCES', 'EPERM', 'EBADF']);

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
