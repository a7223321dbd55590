// What an `oyster` subcommand is: a name, a one-line summary for the list of
// commands, its --help text and the function that runs it.
import { parseArgs, ParseArgsConfig } from 'node:util';
import { ExitCode, UsageError } from './exit-codes';

export interface Command {
  name: string;
  summary: string;
  help: string;
  /** Runs with the arguments after the command name; resolves with the exit code. */
  run(argv: string[]): Promise<number>;
}

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * node:util's parseArgs with a `--help` flag added and its errors turned
 * into usage errors. Option values stay strings; the commands convert them.
 */
export function parseOptions<T extends Options>(argv: string[], options: T, positionals = false) {
  try {
    return parseArgs({
      args: argv,
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: positionals,
      strict: true,
    });
  } catch (err) {
    throw new UsageError((err as Error).message.replace(/\. To specify a positional argument.*$/s, ''));
  }
}

/** An integer option within bounds, or `fallback` when the option is absent. */
export function integerOption(value: string | undefined, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined) return fallback;
  const n = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!(n >= min && n <= max)) throw new UsageError(`--${name}: ${JSON.stringify(value)} is not an integer in ${min}..${max}`);
  return n;
}

/** A value parsed by one of the config parsers (durations, sizes), with the option named in the error. */
export function parsedOption<T>(value: string, name: string, parse: (text: string) => T): T {
  try {
    return parse(value);
  } catch (err) {
    throw new UsageError(`--${name}: ${(err as Error).message}`);
  }
}

export function printHelp(command: Command): number {
  process.stdout.write(`${command.help}\n`);
  return ExitCode.ok;
}
