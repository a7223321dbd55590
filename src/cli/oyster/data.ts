// oyster put | get | exists | delete: single requests against a node, like
// bob's bobc, over REST or gRPC.
import fs from 'node:fs';
import { DataClient, RequestError } from './client';
import { Command, integerOption, parseOptions, printHelp } from './command';
import { mapLimit } from './concurrency';
import { CONNECTION_HELP, connect, connectionOptions, ConnectionValues, keySizeOf } from './connection';
import { ExitCode, Failure, UsageError } from './exit-codes';
import { expandKeys, hasPlaceholder, Key, keyPath, keysFromFiles } from './keys';

const KEYS_HELP = `Keys (-k, or the first argument): a decimal number (stored little-endian), 0x
followed by hex bytes in written order, a GUID (optionally in braces), a
range of decimal keys 100-199, or a comma list of any of these: 1,5-9,0x0a.`;

const JSON_HELP = `  --json               print the outcome of every key as JSON (see docs/CLI.md)`;

const EXIT_HELP = `Exit codes: 0 done for every key, 1 some key is absent (get, exists),
2 wrong command line, 3 a request failed (node unreachable, refused, error).`;

const common = {
  ...connectionOptions,
  key: { type: 'string', short: 'k' },
  concurrency: { type: 'string', short: 'c' },
  json: { type: 'boolean' },
} as const;

const COMMON_HELP = `  -k, --key KEYS       the keys (see below)
  -c, --concurrency N  requests in flight for several keys (default 8)
${JSON_HELP}`;

/** At most this many failures are printed one by one. */
const SHOWN_FAILURES = 20;

interface Parsed {
  values: ConnectionValues & { key?: string; concurrency?: string; file?: string; value?: string; json?: boolean };
  positionals: string[];
}

/** What happened to one key, as --json prints it. */
type KeyOutcome = { key: string; error: string } | ({ key: string } & Record<string, unknown>);

function keysOf(p: Parsed, keySize: number): Key[] | undefined {
  if (p.positionals.length > 1) throw new UsageError(`unexpected argument ${JSON.stringify(p.positionals[1])}`);
  if (p.values.key !== undefined && p.positionals.length > 0) throw new UsageError('give the keys with -k or as the argument, not both');
  const expr = p.values.key ?? p.positionals[0];
  return expr === undefined ? undefined : expandKeys(expr, keySize);
}

/**
 * Runs op for every key; the exit code. Failures are printed as they come
 * (the first SHOWN_FAILURES of them), or with --json every key's outcome,
 * in the order given, once all are done.
 */
async function forEachKey(
  command: string,
  client: DataClient,
  keys: Key[],
  p: Parsed,
  concurrency: number,
  op: (key: Key) => Promise<Record<string, unknown> & { absent?: boolean }>,
): Promise<number> {
  const json = p.values.json === true;
  let failures = 0;
  let absent = 0;
  let outcomes: KeyOutcome[];
  try {
    outcomes = await mapLimit(keys, concurrency, async (key): Promise<KeyOutcome> => {
      try {
        const { absent: isAbsent, ...fields } = await op(key);
        if (isAbsent) absent++;
        return { key: key.text, ...fields };
      } catch (err) {
        if (!(err instanceof RequestError)) throw err;
        if (++failures <= SHOWN_FAILURES && !json) process.stderr.write(`oyster ${command}: ${key.text}: ${err.message}\n`);
        return { key: key.text, error: err.message };
      }
    });
  } finally {
    client.close();
  }
  if (json) printJson({ command, endpoint: client.endpoint, keys: outcomes });
  else if (failures > SHOWN_FAILURES) process.stderr.write(`oyster ${command}: ${failures - SHOWN_FAILURES} more failures (${client.endpoint})\n`);
  if (failures > 0) return ExitCode.failure;
  return absent > 0 ? ExitCode.negative : ExitCode.ok;
}

function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

function setup(argv: string[], extra: Record<string, { type: 'string'; short?: string }>) {
  const p = parseOptions(argv, { ...common, ...extra }, true) as Parsed & { values: { help?: boolean } };
  if (p.values.help) return { help: true as const };
  const keySize = keySizeOf(p.values);
  const concurrency = integerOption(p.values.concurrency, 'concurrency', 8, 1, 10_000);
  return { help: false as const, p, keySize, concurrency };
}

function readInput(file: string): Buffer {
  try {
    return fs.readFileSync(file);
  } catch (err) {
    throw new Failure(`cannot read ${file}: ${(err as Error).message}`);
  }
}

function writeOutput(file: string, value: Buffer): void {
  try {
    fs.writeFileSync(file, value);
  } catch (err) {
    throw new Failure(`cannot write ${file}: ${(err as Error).message}`);
  }
}

async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export const put: Command = {
  name: 'put',
  summary: 'store values under keys',
  help: `Usage: oyster put [-k] KEYS [-f FILE | --value TEXT] [options]
       oyster put -f 'DIR/{key}.bin' [options]

Stores a value under each key, stamped with the current time. The value is
read from --file (with {key} in the name: one file per key; without any key,
every file matching the pattern is stored under the key its name holds), or
given with --value, or read from standard input.

  -f, --file PATH      the value's file; {key} is replaced by each key
  --value TEXT         the value itself (UTF-8)
${COMMON_HELP}

${CONNECTION_HELP}

${KEYS_HELP}

${EXIT_HELP}`,
  async run(argv) {
    const s = setup(argv, { file: { type: 'string', short: 'f' }, value: { type: 'string' } });
    if (s.help) return printHelp(put);
    const { p, keySize, concurrency } = s;
    const { file, value } = p.values;
    if (file !== undefined && value !== undefined) throw new UsageError('give --file or --value, not both');
    let keys = keysOf(p, keySize);
    if (!keys) {
      if (file === undefined || !hasPlaceholder(file)) throw new UsageError('no key given (-k KEYS, or --file with {key} to store every matching file)');
      keys = keysFromFiles(file, keySize);
      if (keys.length === 0) throw new UsageError(`no file matches ${file}`);
    }
    let valueOf: (key: Key) => Buffer;
    if (value !== undefined) {
      const v = Buffer.from(value, 'utf8');
      valueOf = () => v;
    } else if (file !== undefined && hasPlaceholder(file)) {
      valueOf = (key) => readInput(keyPath(file, key));
      for (const key of keys) if (!fs.existsSync(keyPath(file, key))) throw new Failure(`no file ${keyPath(file, key)} for key ${key.text}`);
    } else {
      const v = file === undefined ? await readStdin() : readInput(file);
      valueOf = () => v;
    }
    const client = await connect(p.values, concurrency);
    return forEachKey('put', client, keys, p, concurrency, async (key) => {
      const value = valueOf(key);
      await client.put(key, value);
      return { stored: true, bytes: value.length };
    });
  },
};

export const get: Command = {
  name: 'get',
  summary: 'read the values of keys',
  help: `Usage: oyster get [-k] KEYS [-f FILE] [options]

Reads the value of each key. One key without --file: the value goes to
standard output. Several keys need --file with {key}: one file per key, or
--json, which prints every value in base64 unless --file is given.

  -f, --file PATH      where to write the value; {key} is replaced by each key
${COMMON_HELP}

${CONNECTION_HELP}

${KEYS_HELP}

${EXIT_HELP}`,
  async run(argv) {
    const s = setup(argv, { file: { type: 'string', short: 'f' } });
    if (s.help) return printHelp(get);
    const { p, keySize, concurrency } = s;
    const keys = keysOf(p, keySize);
    if (!keys) throw new UsageError('no key given');
    const { file, json } = p.values;
    if (keys.length > 1 && (file === undefined || !hasPlaceholder(file)) && !json) {
      throw new UsageError('several keys need --file with {key} in it, one file per key, or --json');
    }
    if (keys.length > 1 && file !== undefined && !hasPlaceholder(file)) throw new UsageError('several keys need {key} in --file, one file per key');
    const client = await connect(p.values, concurrency);
    return forEachKey('get', client, keys, p, concurrency, async (key) => {
      const value = await client.get(key);
      if (value === null) {
        if (!json) process.stderr.write(`oyster get: ${key.text}: not found\n`);
        return { found: false, absent: true };
      }
      if (file !== undefined) {
        const written = keyPath(file, key);
        writeOutput(written, value);
        return { found: true, bytes: value.length, file: written };
      }
      if (json) return { found: true, bytes: value.length, base64: value.toString('base64') };
      process.stdout.write(value);
      return { found: true };
    });
  },
};

export const exists: Command = {
  name: 'exists',
  summary: 'tell which keys are present',
  help: `Usage: oyster exists [-k] KEYS [options]

Prints "<key>: present" or "<key>: absent" for each key, in the order given.
(gRPC asks for up to 1000 keys in one Exist request.)

${COMMON_HELP}

${CONNECTION_HELP}

${KEYS_HELP}

${EXIT_HELP}`,
  async run(argv) {
    const s = setup(argv, {});
    if (s.help) return printHelp(exists);
    const { p, keySize, concurrency } = s;
    const keys = keysOf(p, keySize);
    if (!keys) throw new UsageError('no key given');
    const client = await connect(p.values, concurrency);
    let present: boolean[];
    try {
      present = await client.exists(keys);
    } catch (err) {
      if (!(err instanceof RequestError)) throw err;
      if (p.values.json) printJson({ command: 'exists', endpoint: client.endpoint, error: err.message });
      else process.stderr.write(`oyster exists: ${err.message} (${client.endpoint})\n`);
      return ExitCode.failure;
    } finally {
      client.close();
    }
    if (p.values.json) printJson({ command: 'exists', endpoint: client.endpoint, keys: keys.map((k, i) => ({ key: k.text, present: present[i] })) });
    else process.stdout.write(keys.map((k, i) => `${k.text}: ${present[i] ? 'present' : 'absent'}\n`).join(''));
    return present.every(Boolean) ? ExitCode.ok : ExitCode.negative;
  },
};

export const del: Command = {
  name: 'delete',
  summary: 'delete keys',
  help: `Usage: oyster delete [-k] KEYS [options]

Deletes each key across the cluster (a tombstone stamped with the current
time). Deleting a key that is not there succeeds.

${COMMON_HELP}

${CONNECTION_HELP}

${KEYS_HELP}

${EXIT_HELP}`,
  async run(argv) {
    const s = setup(argv, {});
    if (s.help) return printHelp(del);
    const { p, keySize, concurrency } = s;
    const keys = keysOf(p, keySize);
    if (!keys) throw new UsageError('no key given');
    const client = await connect(p.values, concurrency);
    return forEachKey('delete', client, keys, p, concurrency, async (key) => {
      await client.delete(key);
      return { deleted: true };
    });
  },
};
