// node.yaml log_config: a small YAML file naming the level (`level: debug`),
// or bob's log4rs file, whose root level and per-logger levels are used where
// a bob logger has an Oyster counterpart. Appenders, patterns and filters
// are bob's business: Oyster writes JSON lines to stdout.
import fs from 'node:fs';
import YAML from 'yaml';
import { LogPart } from '../logging/create';
import { ConfigReader } from './reader';

export interface LogConfigLevels {
  root?: string;
  parts: Partial<Record<LogPart, string>>;
}

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'off'];

/**
 * bob's loggers (its crates) and the parts of Oyster that do their work.
 * pearl has none: the engine's messages (partitions repaired, records
 * damaged) come from the storage, which is bob_backend's.
 */
export const BOB_LOGGERS: Readonly<Record<string, readonly LogPart[]>> = {
  bob: ['node', 'rest', 'cluster'],
  bob_backend: ['store'],
  bob_grpc: ['grpc'],
  bob_common: ['config'],
};

/**
 * The levels `file` names (`notFound` says where it was looked for). A file that cannot be read or names no level is
 * a warning at log_config, not an error, so that bob's node.yaml files load
 * as they are (its examples point at files relative to its source tree).
 */
export function readLogConfig(file: string, notFound: string, nodeReader: ConfigReader): LogConfigLevels | undefined {
  let doc: unknown;
  try {
    doc = YAML.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    nodeReader.warning('log_config', e.code === 'ENOENT' ? `${notFound}; logging at the default level` : `${file}: cannot be read (${e.message}); logging at the default level`);
    return undefined;
  }
  const m = (doc ?? {}) as { level?: unknown; root?: { level?: unknown }; loggers?: Record<string, { level?: unknown } | null> };
  const levelOf = (v: unknown): string | undefined => {
    const l = String(v ?? '').toLowerCase();
    if (!LEVELS.includes(l)) return undefined;
    return l === 'off' ? 'silent' : l;
  };
  const levels: LogConfigLevels = { root: levelOf(m.level ?? m.root?.level), parts: {} };
  for (const [logger, parts] of Object.entries(BOB_LOGGERS)) {
    const level = levelOf(m.loggers?.[logger]?.level);
    if (level !== undefined) for (const p of parts) levels.parts[p] = level;
  }
  if (levels.root === undefined && Object.keys(levels.parts).length === 0) {
    nodeReader.warning('log_config', `${file} names no level (${LEVELS.join(', ')}); logging at the default level`);
    return undefined;
  }
  return levels;
}
