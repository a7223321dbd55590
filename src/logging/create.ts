// The process logger: JSON lines on stdout (pino), every line carrying the
// node name and its level by name ("level":"warn"), so that a journal or jq
// can filter them without knowing pino's numbers. Each part of the node logs
// through a logger of its own, whose level may differ from the root's (bob's
// log4rs files set levels per module; src/config/log-config.ts maps them).
import pino from 'pino';
import { Logger } from './logger';

/** The parts of a node that can log at a level of their own. */
export type LogPart = 'node' | 'config' | 'rest' | 'cluster' | 'grpc' | 'store';

export interface LogLevels {
  /** The level of every part not named in `parts`. */
  root: string;
  parts?: Partial<Record<LogPart, string>>;
}

export interface Logs {
  root: Logger;
  part(name: LogPart): Logger;
}

/**
 * Levels are pino's (trace, debug, info, warn, error, fatal, silent), in any
 * case; an unknown one (a typo in OYSTER_LOG_LEVEL) logs at info with a
 * warning instead of stopping the node.
 */
export function createLogs(nodeName: string, levels: LogLevels): Logs {
  const unknown: string[] = [];
  const level = (wanted: string): string => {
    const l = wanted.trim().toLowerCase();
    if (l === 'silent' || Object.hasOwn(pino.levels.values, l)) return l;
    unknown.push(wanted);
    return 'info';
  };
  const root = pino({
    level: level(levels.root),
    base: { node: nodeName },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  });
  const parts = new Map<LogPart, Logger>();
  for (const [name, l] of Object.entries(levels.parts ?? {})) parts.set(name as LogPart, root.child({}, { level: level(l) }));
  for (const u of unknown) root.warn({ requestedLevel: u }, `unknown log level ${JSON.stringify(u)}; logging at info`);
  return { root, part: (name) => parts.get(name) ?? root };
}
