// oyster bench: a load generator like bob's bobp. Workers send put, get,
// exist or delete requests (or a weighted mix) over REST or gRPC for a range
// of integer keys, a progress line goes to stderr every second, and a
// summary with throughput and latency percentiles to stdout at the end.
import { performance } from 'node:perf_hooks';
import { parseDuration } from '../../config/duration';
import { parseSize } from '../../config/size';
import { DataClient, RequestError } from './client';
import { Command, integerOption, parsedOption, parseOptions, printHelp } from './command';
import { CONNECTION_HELP, connect, connectionOptions, keySizeOf } from './connection';
import { ExitCode, UsageError } from './exit-codes';
import { Key } from './keys';
import { LatencyHistogram } from './latency';

type Op = 'put' | 'get' | 'exist' | 'delete';
const OPS: readonly Op[] = ['put', 'get', 'exist', 'delete'];
const BEHAVIORS = [...OPS, 'mixed'] as const;
type Behavior = (typeof BEHAVIORS)[number];
const DEFAULT_MIX = 'get=60,put=30,exist=10';

const HELP = `Usage: oyster bench [-b BEHAVIOR] [-n COUNT] [-c CONCURRENCY] [-l PAYLOAD] [options]

Sends requests to one node as fast as it answers them and measures what a
client sees, like bob's bobp. Keys are the integers FIRST .. FIRST+KEYS-1
(each stored as its little-endian bytes); a put stores a PAYLOAD-byte value
derived from its key, so a later "get --verify" can tell right from wrong.
Every second a progress line goes to standard error; at the end a summary
with throughput and latency percentiles (p50, p90, p99, max) goes to
standard output.

  -b, --behavior B      put, get, exist, delete, or mixed (default put)
  --mix WEIGHTS         for mixed: operations and weights (default ${DEFAULT_MIX})
  -n, --count N         requests to send (default 10000; unlimited with --time)
  --time DURATION       stop after this long (e.g. 30s)
  -c, --concurrency N   requests in flight (default 16; bobp's -t)
  -l, --payload SIZE    value size for puts (default 1024; e.g. 4KiB, 1MiB)
  -f, --first N         first key (default 0)
  --keys N              how many distinct keys (default: COUNT)
  --mode MODE           sequential (each key in turn, default) or random
  --verify              check the results: after put, every key written is
                        present; after delete, absent; each value read is the
                        one put wrote
  --json                print the summary as JSON

${CONNECTION_HELP}

Exit codes: 0 no request failed (and --verify found everything right),
1 some requests failed or verification found a difference, 2 wrong command
line, 3 the node did not answer at all.`;

interface Plan {
  behavior: Behavior;
  mix: Array<[Op, number]>;
  count: number;
  durationMs: number;
  concurrency: number;
  payload: number;
  first: number;
  keys: number;
  random: boolean;
  verify: boolean;
  keySize: number;
}

class OpStats {
  count = 0;
  errors = 0;
  bytes = 0;
  readonly latency = new LatencyHistogram();
}

/** Counters of one second, for the progress line. */
class Window {
  ops: Record<Op, number> = { put: 0, get: 0, exist: 0, delete: 0 };
  errors = 0;
  bytes = 0;
  latency = new LatencyHistogram();
}

export const bench: Command = {
  name: 'bench',
  summary: 'load-test a node and measure throughput and latency',
  help: HELP,
  async run(argv) {
    const { values } = parseOptions(argv, {
      ...connectionOptions,
      behavior: { type: 'string', short: 'b' },
      mix: { type: 'string' },
      count: { type: 'string', short: 'n' },
      time: { type: 'string' },
      concurrency: { type: 'string', short: 'c' },
      payload: { type: 'string', short: 'l' },
      first: { type: 'string', short: 'f' },
      keys: { type: 'string' },
      mode: { type: 'string' },
      verify: { type: 'boolean' },
      json: { type: 'boolean' },
    });
    if (values.help) return printHelp(bench);
    const behavior = (values.behavior ?? 'put') as Behavior;
    if (!BEHAVIORS.includes(behavior)) throw new UsageError(`--behavior: one of ${BEHAVIORS.join(', ')}`);
    if (values.mix !== undefined && behavior !== 'mixed') throw new UsageError('--mix goes with --behavior mixed');
    const durationMs = values.time === undefined ? Infinity : parsedOption(values.time, 'time', parseDuration);
    const count = values.count === undefined && values.time !== undefined ? Infinity : integerOption(values.count, 'count', 10_000, 1);
    const mode = values.mode ?? 'sequential';
    if (mode !== 'sequential' && mode !== 'random') throw new UsageError('--mode: sequential or random');
    const payload = values.payload === undefined ? 1024 : parsedOption(values.payload, 'payload', parseSize);
    if (payload > 2 ** 31) throw new UsageError('--payload: at most 2 GiB');
    const plan: Plan = {
      behavior,
      mix: behavior === 'mixed' ? parseMix(values.mix ?? DEFAULT_MIX) : [[behavior as Op, 1]],
      count,
      durationMs,
      concurrency: integerOption(values.concurrency, 'concurrency', 16, 1, 10_000),
      payload,
      first: integerOption(values.first, 'first', 0),
      keys: integerOption(values.keys, 'keys', Number.isFinite(count) ? count : 1_000_000, 1),
      random: mode === 'random',
      verify: values.verify ?? false,
      keySize: keySizeOf(values),
    };
    if (plan.first + plan.keys > 2 ** 53) throw new UsageError('--first + --keys: keys must stay below 2^53');
    if (plan.keySize < 8 && plan.first + plan.keys > 2 ** (8 * plan.keySize)) throw new UsageError('the keys do not fit the key size');

    const client = await connect(values, plan.concurrency);
    try {
      try {
        await client.ping();
      } catch (err) {
        if (!(err instanceof RequestError)) throw err;
        process.stderr.write(`oyster bench: ${client.endpoint} does not answer: ${err.message}\n`);
        return ExitCode.failure;
      }
      return await runBench(client, plan, values.json ?? false);
    } finally {
      client.close();
    }
  },
};

function parseMix(text: string): Array<[Op, number]> {
  const mix: Array<[Op, number]> = [];
  for (const part of text.split(',')) {
    const m = /^\s*(put|get|exist|delete)\s*=\s*(\d+)\s*$/.exec(part);
    if (!m) throw new UsageError(`--mix: ${JSON.stringify(part)} is not OP=WEIGHT (OP: ${OPS.join(', ')})`);
    if (Number(m[2]) > 0) mix.push([m[1] as Op, Number(m[2])]);
  }
  if (mix.length === 0) throw new UsageError('--mix: no operation has a weight above 0');
  return mix;
}

/** Key n: its decimal text and its little-endian bytes. */
function keyOf(n: number, keySize: number): Key {
  const bytes = Buffer.alloc(keySize);
  for (let i = 0, v = n; v > 0 && i < keySize; i++, v = Math.floor(v / 256)) bytes[i] = v % 256;
  return { text: String(n), bytes };
}

/** The value a put stores under key n: n's low 48 bits, then a byte derived from n. */
function payloadOf(n: number, size: number): Buffer {
  const v = Buffer.alloc(size, (n * 31 + 7) & 0xff);
  if (size >= 6) v.writeUIntLE(n % 2 ** 48, 0, 6);
  return v;
}

async function runBench(client: DataClient, plan: Plan, json: boolean): Promise<number> {
  const stats: Record<Op | 'total', OpStats> = {
    put: new OpStats(),
    get: new OpStats(),
    exist: new OpStats(),
    delete: new OpStats(),
    total: new OpStats(),
  };
  const errorKinds = new Map<string, number>();
  const written = new Set<number>();
  const deleted = new Set<number>();
  const check = { values: 0, wrong: 0, misses: 0, present: 0, existChecked: 0 };
  const totalWeight = plan.mix.reduce((a, [, w]) => a + w, 0);
  const pick = (): Op => {
    let r = Math.random() * totalWeight;
    for (const [op, w] of plan.mix) if ((r -= w) < 0) return op;
    return plan.mix[plan.mix.length - 1][0];
  };

  const start = performance.now();
  const deadline = start + plan.durationMs;
  let next = 0;
  let window = new Window();

  const one = async (i: number): Promise<void> => {
    const n = plan.first + (plan.random ? Math.floor(Math.random() * plan.keys) : i % plan.keys);
    const key = keyOf(n, plan.keySize);
    const op = pick();
    const t0 = performance.now();
    let bytes = 0;
    let failed = false;
    try {
      if (op === 'put') {
        const value = payloadOf(n, plan.payload);
        await client.put(key, value);
        bytes = value.length;
        written.add(n);
        deleted.delete(n);
      } else if (op === 'get') {
        const value = await client.get(key);
        if (value === null) {
          check.misses++;
        } else {
          bytes = value.length;
          check.values++;
          if (plan.verify && !value.equals(payloadOf(n, value.length))) check.wrong++;
        }
      } else if (op === 'exist') {
        const [present] = await client.exists([key]);
        check.existChecked++;
        if (present) check.present++;
      } else {
        await client.delete(key);
        deleted.add(n);
        written.delete(n);
      }
    } catch (err) {
      if (!(err instanceof RequestError)) throw err;
      failed = true;
      errorKinds.set(err.kind, (errorKinds.get(err.kind) ?? 0) + 1);
    }
    const ms = performance.now() - t0;
    for (const s of [stats[op], stats.total]) {
      s.count++;
      s.bytes += bytes;
      s.errors += failed ? 1 : 0;
      s.latency.record(ms);
    }
    window.ops[op]++;
    window.bytes += bytes;
    window.errors += failed ? 1 : 0;
    window.latency.record(ms);
  };

  const worker = async () => {
    while (next < plan.count && performance.now() < deadline) await one(next++);
  };

  let second = 0;
  const ticker = setInterval(() => {
    second++;
    process.stderr.write(`${progressLine(second, window, plan)}\n`);
    window = new Window();
  }, 1000);
  try {
    await Promise.all(Array.from({ length: plan.concurrency }, worker));
  } finally {
    clearInterval(ticker);
  }
  const elapsed = (performance.now() - start) / 1000;

  // After put or delete, ask for every key touched, as bobp's --verify does.
  let verify: { what: string; checked: number; ok: number } | null = null;
  if (plan.verify) {
    if (plan.behavior === 'put' || plan.behavior === 'delete') {
      const want = plan.behavior === 'put';
      const nums = [...(want ? written : deleted)];
      let ok = 0;
      for (let i = 0; i < nums.length; i += 10_000) {
        const batch = nums.slice(i, i + 10_000);
        try {
          const present = await client.exists(batch.map((n) => keyOf(n, plan.keySize)));
          ok += present.filter((p) => p === want).length;
        } catch (err) {
          if (!(err instanceof RequestError)) throw err;
          errorKinds.set(err.kind, (errorKinds.get(err.kind) ?? 0) + 1);
        }
      }
      verify = { what: want ? 'keys written are present' : 'keys deleted are absent', checked: nums.length, ok };
    } else if (plan.behavior === 'exist') {
      verify = { what: 'keys asked for are present', checked: check.existChecked, ok: check.present };
    } else {
      const asked = plan.behavior === 'get' ? check.values + check.misses : check.values;
      verify = { what: 'values read are the ones put wrote', checked: asked, ok: check.values - check.wrong };
    }
  }

  const summary = summarize(plan, client.endpoint, elapsed, stats, errorKinds, verify, check);
  process.stdout.write(json ? `${JSON.stringify(summary, null, 2)}\n` : formatSummary(summary));
  const failedRequests = stats.total.errors;
  const verifyFailed = verify !== null && verify.ok !== verify.checked;
  return failedRequests > 0 || verifyFailed ? ExitCode.negative : ExitCode.ok;
}

const MIB = 1024 * 1024;

function progressLine(second: number, w: Window, plan: Plan): string {
  const total = OPS.reduce((a, op) => a + w.ops[op], 0);
  const parts = plan.behavior === 'mixed' ? ` (${OPS.filter((op) => w.ops[op] > 0).map((op) => `${op} ${w.ops[op]}`).join(', ')})` : '';
  return (
    `[${String(second).padStart(4)}s] ${plan.behavior} ${total} op/s${parts}, ${(w.bytes / MIB).toFixed(2)} MiB/s, ` +
    `p50 ${w.latency.percentile(0.5).toFixed(2)} ms, p99 ${w.latency.percentile(0.99).toFixed(2)} ms, errors ${w.errors}`
  );
}

interface OpSummary {
  count: number;
  errors: number;
  opsPerSecond: number;
  mibPerSecond: number;
  latencyMs: { mean: number; p50: number; p90: number; p99: number; max: number };
}

interface Summary {
  behavior: Behavior;
  endpoint: string;
  concurrency: number;
  payload: number;
  keys: { first: number; count: number; mode: 'sequential' | 'random' };
  elapsedSeconds: number;
  operations: Partial<Record<Op, OpSummary>>;
  total: OpSummary;
  errors: Record<string, number>;
  gets: { found: number; notFound: number };
  exists: { present: number; checked: number };
  verify: { what: string; checked: number; ok: number } | null;
}

function opSummary(s: OpStats, elapsed: number): OpSummary {
  return {
    count: s.count,
    errors: s.errors,
    opsPerSecond: round(s.count / elapsed),
    mibPerSecond: round(s.bytes / MIB / elapsed),
    latencyMs: {
      mean: round(s.latency.meanMs),
      p50: round(s.latency.percentile(0.5)),
      p90: round(s.latency.percentile(0.9)),
      p99: round(s.latency.percentile(0.99)),
      max: round(s.latency.maxMs),
    },
  };
}

function round(v: number): number {
  return Math.round(v * 1000) / 1000;
}

function summarize(
  plan: Plan,
  endpoint: string,
  elapsed: number,
  stats: Record<Op | 'total', OpStats>,
  errorKinds: Map<string, number>,
  verify: Summary['verify'],
  check: { values: number; misses: number; present: number; existChecked: number },
): Summary {
  const used = OPS.filter((op) => stats[op].count > 0);
  return {
    behavior: plan.behavior,
    endpoint,
    concurrency: plan.concurrency,
    payload: plan.payload,
    keys: { first: plan.first, count: plan.keys, mode: plan.random ? 'random' : 'sequential' },
    elapsedSeconds: round(elapsed),
    operations: Object.fromEntries(used.map((op) => [op, opSummary(stats[op], elapsed)])),
    total: opSummary(stats.total, elapsed),
    errors: Object.fromEntries(errorKinds),
    gets: { found: check.values, notFound: check.misses },
    exists: { present: check.present, checked: check.existChecked },
    verify,
  };
}

function formatSummary(s: Summary): string {
  const lines = [
    `${s.behavior} against ${s.endpoint}: ${s.total.count} requests in ${s.elapsedSeconds.toFixed(2)} s, ` +
      `concurrency ${s.concurrency}, payload ${s.payload} B, keys ${s.keys.first}..${s.keys.first + s.keys.count - 1} ${s.keys.mode}`,
    '',
    `${'operation'.padEnd(10)}${'requests'.padStart(10)}${'errors'.padStart(8)}${'op/s'.padStart(11)}${'MiB/s'.padStart(9)}` +
      `${'mean ms'.padStart(9)}${'p50 ms'.padStart(9)}${'p90 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'max ms'.padStart(9)}`,
  ];
  const row = (name: string, o: OpSummary) =>
    `${name.padEnd(10)}${String(o.count).padStart(10)}${String(o.errors).padStart(8)}${o.opsPerSecond.toFixed(1).padStart(11)}` +
    `${o.mibPerSecond.toFixed(2).padStart(9)}${o.latencyMs.mean.toFixed(2).padStart(9)}${o.latencyMs.p50.toFixed(2).padStart(9)}` +
    `${o.latencyMs.p90.toFixed(2).padStart(9)}${o.latencyMs.p99.toFixed(2).padStart(9)}${o.latencyMs.max.toFixed(2).padStart(9)}`;
  for (const [op, o] of Object.entries(s.operations)) lines.push(row(op, o));
  if (Object.keys(s.operations).length > 1) lines.push(row('total', s.total));
  lines.push('');
  if (s.gets.found + s.gets.notFound > 0) lines.push(`get: ${s.gets.found} found, ${s.gets.notFound} not found`);
  if (s.exists.checked > 0) lines.push(`exist: ${s.exists.present} of ${s.exists.checked} keys present`);
  if (s.verify) lines.push(`verify: ${s.verify.ok} of ${s.verify.checked} ${s.verify.what}${s.verify.ok === s.verify.checked ? '' : ' — FAILED'}`);
  const errors = Object.entries(s.errors);
  lines.push(errors.length === 0 ? 'errors: none' : `errors: ${errors.map(([k, n]) => `${k} ${n}`).join(', ')}`);
  return `${lines.join('\n')}\n`;
}
