// oyster: the command-line tool that comes with Oyster nodes: data requests
// and benchmarks against a node (bob's bobc and bobp), cluster configuration
// (ccg), offline blob inspection and recovery (brt). docs/CLI.md describes
// every command; each also has --help.
//
// Exit codes: 0 done and fine, 1 done with a negative answer (absent key,
// problems found), 2 wrong command line, 3 could not do the work.
import { bench } from './oyster/bench';
import { blobCheck, blobInfo, blobRecover } from './oyster/blob';
import { Command } from './oyster/command';
import { check, generate } from './oyster/config';
import { del, exists, get, put } from './oyster/data';
import { ExitCode, Failure, UsageError } from './oyster/exit-codes';
import { compact } from './oyster/compact';
import { waitReady } from './oyster/wait-ready';
import { versionInfo } from '../node/version';

/** A command made of subcommands (`oyster config generate`). */
function group(name: string, summary: string, commands: Command[]): Command {
  const help = `Usage: oyster ${name} <command> [options]\n\n${list(commands)}\n\nRun "oyster ${name} <command> --help" for the options of each.`;
  return {
    name,
    summary,
    help,
    async run(argv) {
      const [sub, ...rest] = argv;
      if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
        process.stdout.write(`${help}\n`);
        return sub === undefined ? ExitCode.usage : ExitCode.ok;
      }
      const command = commands.find((c) => c.name === sub);
      if (!command) throw new UsageError(`unknown command "${name} ${sub}"`);
      return command.run(rest);
    },
  };
}

function list(commands: Command[]): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return `Commands:\n${commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n')}`;
}

const COMMANDS: Command[] = [
  put,
  get,
  exists,
  del,
  bench,
  group('config', 'generate or check cluster.yaml and node.yaml', [generate, check]),
  group('blob', 'check, show or recover partition files offline', [blobCheck, blobInfo, blobRecover]),
  compact,
  waitReady,
];

const HELP = `Usage: oyster <command> [options]

The command-line tool of Oyster, a bob-compatible storage node.

${list(COMMANDS)}

Run "oyster <command> --help" for the options of each; "oyster --version"
prints the version. Exit codes: 0 done and fine, 1 a negative answer (a key
is absent, problems were found), 2 wrong command line, 3 the work could not
be done (node unreachable, file unreadable).`;

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${HELP}\n`);
    return name === undefined ? ExitCode.usage : ExitCode.ok;
  }
  if (name === '--version' || name === '-V') {
    process.stdout.write(`oyster ${versionInfo().version}\n`);
    return ExitCode.ok;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) throw new UsageError(`unknown command "${name}"`);
  return command.run(rest);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: Error) => {
    if (err instanceof UsageError) {
      process.stderr.write(`oyster: ${err.message}\nRun "oyster --help" or "oyster <command> --help".\n`);
      process.exitCode = ExitCode.usage;
    } else if (err instanceof Failure) {
      process.stderr.write(`oyster: ${err.message}\n`);
      process.exitCode = ExitCode.failure;
    } else {
      process.stderr.write(`oyster: ${err.stack ?? err.message}\n`);
      process.exitCode = ExitCode.failure;
    }
  },
);
