// The process logger: JSON lines on stdout (pino), every line carrying the node name.
import pino from 'pino';
import { Logger } from './logger';

/**
 * `level` is one of pino's (trace, debug, info, warn, error, fatal, silent),
 * in any case; an unknown one (a typo in OYSTER_LOG_LEVEL) logs at info with
 * a warning instead of stopping the node.
 */
export function createLogger(nodeName: string, level: string): Logger {
  const wanted = level.trim().toLowerCase();
  const known = wanted === 'silent' || Object.hasOwn(pino.levels.values, wanted);
  const log = pino({ level: known ? wanted : 'info', base: { node: nodeName }, timestamp: pino.stdTimeFunctions.isoTime });
  if (!known) log.warn({ requestedLevel: level }, `unknown log level ${JSON.stringify(level)}; logging at info`);
  return log;
}
