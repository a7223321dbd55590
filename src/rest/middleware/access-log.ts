// One debug line per request.
import type { Context, Next } from 'koa';
import { Logger } from '../../logging/logger';

/** Whether the logger writes debug lines (pino's level is set once, at start). */
export function accessLogEnabled(log: Logger): boolean {
  return (log as Logger & { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled?.('debug') ?? true;
}

export function accessLog(log: Logger) {
  return async function access(ctx: Context, next: Next): Promise<void> {
    const start = Date.now();
    try {
      await next();
    } finally {
      log.debug({ method: ctx.method, path: ctx.path, status: ctx.status, ms: Date.now() - start }, 'request');
    }
  };
}
