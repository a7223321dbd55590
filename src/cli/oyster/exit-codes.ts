// The exit codes every `oyster` command uses (docs/CLI.md), and the two
// errors that end a command with one of them.

export const ExitCode = {
  /** The command did what was asked and everything it looked at is fine. */
  ok: 0,
  /** It ran, and the answer is "no": a key is absent, a check found problems, a benchmark saw errors. */
  negative: 1,
  /** The command line is wrong. */
  usage: 2,
  /** It could not do its work: the node is unreachable, a file cannot be read, the server failed. */
  failure: 3,
} as const;

/** A wrong command line: printed with a pointer to --help, exit 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The command could not do its work: exit 3. */
export class Failure extends Error {
  override readonly name = 'Failure';
}
