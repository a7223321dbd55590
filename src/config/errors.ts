// Configuration problems are collected, never thrown one by one, so that an
// operator fixing a config file sees every mistake in a single run.

/** One thing wrong with (or, as a warning, suspicious in) a config file. */
export interface Problem {
  file: string;
  /** Dotted path of the key, e.g. `nodes[2].disks[0].path`; empty for the file as a whole. */
  key: string;
  reason: string;
  /** A key no part of Oyster reads: a typo, or a key of another version (errors with --strict). */
  unknownKey?: true;
}

export function formatProblem(p: Problem): string {
  return p.key === '' ? `${p.file}: ${p.reason}` : `${p.file}: ${p.key}: ${p.reason}`;
}

/** The configuration cannot be used; `message` has one line per problem. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';

  constructor(
    readonly problems: readonly Problem[],
    readonly warnings: readonly Problem[] = [],
  ) {
    super(problems.map(formatProblem).join('\n'));
  }
}
