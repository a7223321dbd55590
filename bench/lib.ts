// Small helpers shared by the benchmarks.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

/** Runs fn(i) for i in [0, total) with at most `concurrency` calls in flight; returns seconds taken. */
export async function runWindow(total: number, concurrency: number, fn: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const start = process.hrtime.bigint();
  const worker = async () => {
    while (next < total) await fn(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
  return Number(process.hrtime.bigint() - start) / 1e9;
}

/** Throughput and latency of one measured window. */
export interface Phase {
  ops: number;
  seconds: number;
  /** Latency percentiles, ms. */
  p50: number;
  p99: number;
}

/** runWindow, timing every call. */
export async function timedWindow(total: number, concurrency: number, fn: (i: number) => Promise<unknown>): Promise<Phase> {
  const lat = new Float64Array(total);
  const seconds = await runWindow(total, concurrency, async (i) => {
    const t0 = process.hrtime.bigint();
    await fn(i);
    lat[i] = Number(process.hrtime.bigint() - t0) / 1e6;
  });
  lat.sort();
  return { ops: total, seconds, p50: lat[Math.floor(total * 0.5)], p99: lat[Math.floor(total * 0.99)] };
}

/** A fixed pseudo-random sequence (xorshift32) of `count` numbers in [0, n). */
export function sequence(count: number, n: number, seed: number): Uint32Array {
  const out = new Uint32Array(count);
  let x = seed;
  for (let i = 0; i < count; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = (x >>> 0) % n;
  }
  return out;
}

/** Sends one REST request and reads the whole answer. */
export type Send = (method: 'GET' | 'POST', path: string, body?: Buffer) => Promise<{ status: number; bytes: number }>;

export interface RestClient {
  send: Send;
  close(): Promise<void>;
  /** Which client library serves the requests. */
  name: string;
}

interface UndiciPool {
  request(o: { path: string; method: string; body?: Buffer }): Promise<{ statusCode: number; body: { arrayBuffer(): Promise<ArrayBuffer> } }>;
  close(): Promise<void>;
}

/**
 * A keep-alive REST client with up to `connections` connections: undici's
 * Pool when it can be loaded and `preferUndici` (it is cheaper per request
 * than node:http, which matters on a small machine), else node:http.
 */
export function restClient(url: string, connections: number, preferUndici = true): RestClient {
  if (preferUndici) {
    try {
      // Not a dependency of Oyster: used when present (tap brings it), declared nowhere.
      const { Pool } = require('undici') as { Pool: new (origin: string, o: { connections: number; pipelining: number }) => UndiciPool };
      const pool = new Pool(url, { connections, pipelining: 1 });
      return {
        name: 'undici Pool',
        send: async (method, p, body) => {
          const res = await pool.request({ path: p, method, body });
          return { status: res.statusCode, bytes: (await res.body.arrayBuffer()).byteLength };
        },
        close: () => pool.close(),
      };
    } catch {
      // node:http below
    }
  }
  const u = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  return {
    name: 'node:http Agent',
    send: (method, p, body) =>
      new Promise((resolve, reject) => {
        const req = http.request({ agent, host: u.hostname, port: u.port, method, path: p, headers: body ? { 'Content-Length': body.length } : {} }, (res) => {
          let bytes = 0;
          res.on('data', (c: Buffer) => (bytes += c.length));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end(body);
      }),
    close: async () => agent.destroy(),
  };
}

export function arg(name: string, fallback: number): number {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  return a ? Number(a.slice(name.length + 3)) : fallback;
}

export function benchDir(name: string): string {
  const base = process.env.OYSTER_BENCH_DIR ?? os.tmpdir();
  return fs.mkdtempSync(path.join(base, `oyster-bench-${name}-`));
}


export function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

export function machine(): string {
  const cpus = os.cpus();
  return `${cpus.length} × ${cpus[0]?.model ?? 'unknown CPU'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB RAM, Node ${process.version}, ${os.type()} ${os.release()}`;
}

export const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** Prints a table and also returns it as markdown. */
export function table(rows: Array<Record<string, string>>): string {
  const cols = Object.keys(rows[0]);
  const lines = [
    `| ${cols.join(' | ')} |`,
    `|${cols.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${cols.map((c) => r[c]).join(' | ')} |`),
  ];
  return lines.join('\n');
}

const CLK_TCK = 100; // Linux USER_HZ

/** utime + stime of a process in seconds (all its threads), from /proc; 0 where there is no /proc. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / CLK_TCK;
  } catch {
    return 0;
  }
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

export interface WrkRun {
  rps: number;
  requests: number;
  p50Ms: number;
  p99Ms: number;
  /** CPU of the server's processes per request, µs. */
  cpuUs: number;
}

/** wrk's latency figure ("1.23ms", "850.00us", "1.01s") in ms. */
function wrkMs(v: string): number {
  const m = /^([\d.]+)(us|ms|s)$/.exec(v);
  if (!m) return NaN;
  return Number(m[1]) * (m[2] === 'us' ? 1e-3 : m[2] === 's' ? 1e3 : 1);
}

/** One run of wrk (one thread) against `url` with the Lua `script`; CPU counted over the server's `pids`. */
export function runWrk(o: { url: string; pids: number[]; script: string; seconds: number; connections: number }): WrkRun {
  const cpu = () => o.pids.reduce((a, p) => a + cpuSeconds(p), 0);
  const cpu0 = cpu();
  // wrk's own timeout (2 s) counts a slow answer as an error: a peer's
  // latency spike under 64 uploads of 1 MiB would abort the run.
  const r = spawnSync('wrk', ['-t1', `-c${o.connections}`, `-d${o.seconds}s`, '--timeout', '30s', '--latency', '-s', o.script, o.url], { encoding: 'utf8' });
  const used = cpu() - cpu0;
  const out = r.stdout ?? '';
  const requests = Number(/(\d+) requests in/.exec(out)?.[1]);
  const failed = /Non-2xx or 3xx responses: (\d+)/.exec(out) ?? /Socket errors: (.*)/.exec(out);
  if (r.status !== 0 || !(requests > 0) || failed) throw new Error(`wrk against ${o.url} failed:\n${out}${r.stderr ?? ''}`);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]),
    requests,
    p50Ms: wrkMs(/ 50%\s+(\S+)/.exec(out)?.[1] ?? ''),
    p99Ms: wrkMs(/ 99%\s+(\S+)/.exec(out)?.[1] ?? ''),
    cpuUs: (used / requests) * 1e6,
  };
}
