// npm run bench:compaction -- [--sizes=1,64] [--live-mib-1k=32] [--live-mib-64k=128] [--versions=10]
//   [--blob-mib=16] [--rounds=3] [--round-versions=3] [--connections=8] [--load-connections=32]
//   [--reclaim-rate-mib=1024] [--rate-mib=64] [--read-cache-mib=0] [--warmup-seconds=2]
//   [--drop-caches=1] [--verify=20000]
//
// What compaction costs and gives back (issue 16), on a real oysterd (one
// node, one disk, one vdisk, spawned on a temporary configuration as the
// tests do), for values of 1 KiB and of 64 KiB (`--sizes`, in KiB):
//
// Load. K = live bytes / value size keys (`--live-mib-1k`, `--live-mib-64k`),
// each written `--versions` (10) times: the K × 10 writes in one random order
// (every key exactly 10 times), so that every blob holds a mix of superseded
// and live records, as an overwrite workload leaves them (writes in passes
// would leave blobs that are all garbage, which compaction removes without
// reading). The writes of one key are sent one after another, never two at
// once, so that the value each key must end with is known. Blobs of
// `--blob-mib` (pearl.max_blob_size) make many closed blobs. Then the node
// restarts, which closes the blob being written to: compaction takes only
// closed blobs.
//
// Part A, reclaim rate and space (node with compaction.rate
// `--reclaim-rate-mib`, 1 GiB/s: not paced). `dd bs=1M conv=fsync` copies
// every closed blob file into the same file system, one file at a time; then
// POST /vdisks/0/compact (which waits until done) compacts them. The
// reclaim rate is **bytes of blob files compacted (their size before) per
// second of the POST's wall time**, compared with dd's bytes of blob files
// copied per second. dd reads and writes every byte; compaction reads the
// index and the records it keeps and writes those, and skips the records it
// drops without reading them: both figures are "bytes of blob files dealt
// with per second", not I/O per second (the compaction's I/O and reclaimed
// bytes per second are printed beside). As root the page cache is dropped
// (sync; echo 3 > /proc/sys/vm/drop_caches) before dd and again before the
// compaction, so both read from the disk; otherwise (or with
// `--drop-caches=0`) both read what the page cache holds (the blobs were
// just written, and dd has just read them), and the output says which.
// Then: bytes of blob and index files on disk per live byte (K × value
// size), the server's CPU time per MB given back, and every key read back
// (up to `--verify` keys) to check it holds its last value.
//
// Part B, foreground latency. The node restarts on the same data with
// compaction.rate `--rate-mib` (64 MiB/s, the default: the I/O budget is what
// protects foreground requests, and the rate is read only at start, hence
// the restart rather than a second node with its own load). A closed-loop
// load of `--connections` (8) keep-alive connections, each request a GET or a
// POST (50/50) of a random existing key, values of the size under test, is
// measured in `--rounds` (3) pairs of rounds: without compaction, and while
// a POST /vdisks/0/compact runs (the round lasts exactly as long as the
// compaction; its twin without compaction lasts as long). Before each pair
// every key is overwritten `--round-versions` (3) times so that there is garbage
// to compact; the order within a pair alternates (without first in odd
// pairs). Per pair the p99 of GET and of POST with / without; the median of
// the pairs' ratios counts. Failed requests (non-2xx, a wrong value,
// connection errors) are counted in every round, and reads that returned an
// older value than one acknowledged before the read started ("stale") too.
// `--read-cache-mib` (0) is node.yaml read_cache_size: with no read cache
// every GET and every compaction lookup goes through the engine and the
// index files, as for a data set much larger than the cache.
//
// Automatic compaction is off (compaction.enabled: false turns off only the
// compactor's timer, whose first look 5 s after start would compact blobs
// above garbage_ratio; POST /compact works either way), so compaction runs
// only when the benchmark asks.
//
// Prints one table per value size and a summary with the targets (reclaim
// ≥ 0.5× dd, p99 during compaction ≤ 2× without, 0 failed requests during
// compaction, ≤ 1.3 bytes on disk per live byte). Exits 0 whether or not the
// targets are met; non-zero on errors.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import YAML from 'yaml';
import { ClusterFiles, OysterProcess, startNode, writeCluster } from '../test/helpers/oysterd';
import { arg, benchDir, cpuSeconds, fmt, machine, median, runWindow, table } from './lib';

const MiB = 1024 * 1024;
const SIZES_KIB = (process.argv.find((a) => a.startsWith('--sizes='))?.slice(8) ?? '1,64').split(',').map(Number);
/** Live data of the values of `kib` KiB: --live-mib-<kib>k (32 MiB for 1 KiB, 128 MiB from 64 KiB on). */
const liveMib = (kib: number) => arg(`live-mib-${kib}k`, kib >= 64 ? 128 : 32);
const VERSIONS = arg('versions', 10);
const BLOB_MIB = arg('blob-mib', 16);
const ROUNDS = arg('rounds', 3);
const ROUND_VERSIONS = arg('round-versions', 3);
const CONNECTIONS = arg('connections', 8);
const LOAD_CONNECTIONS = arg('load-connections', 32);
const RECLAIM_RATE_MIB = arg('reclaim-rate-mib', 1024);
const RATE_MIB = arg('rate-mib', 64);
const READ_CACHE_MIB = arg('read-cache-mib', 0);
const WARMUP_SECONDS = arg('warmup-seconds', 2);
const DROP_CACHES = arg('drop-caches', 1) !== 0;
const VERIFY = arg('verify', 20_000);
const VDISK = 0;
const NODE = 'bench';

// ---------------------------------------------------------------- client

interface Answer {
  status: number;
  body: Buffer;
}
type Call = (method: 'GET' | 'POST', p: string, body?: Buffer) => Promise<Answer>;
interface Client {
  call: Call;
  close(): Promise<void>;
}

interface UndiciPool {
  request(o: { path: string; method: string; body?: Buffer }): Promise<{ statusCode: number; body: { arrayBuffer(): Promise<ArrayBuffer> } }>;
  close(): Promise<void>;
}

/** Keep-alive client that reads whole answers (lib's restClient counts bytes only): undici's Pool where it loads, else node:http. */
function client(url: string, connections: number): Client {
  try {
    // Not a dependency of Oyster: used when present (tap brings it), as bench/lib.ts does.
    const { Pool } = require('undici') as { Pool: new (origin: string, o: { connections: number; pipelining: number }) => UndiciPool };
    const pool = new Pool(url, { connections, pipelining: 1 });
    return {
      call: async (method, p, body) => {
        const res = await pool.request({ path: p, method, body });
        return { status: res.statusCode, body: Buffer.from(await res.body.arrayBuffer()) };
      },
      close: () => pool.close(),
    };
  } catch {
    const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
    return { call: (method, p, body) => httpCall(url, method, p, body, agent), close: async () => agent.destroy() };
  }
}

/** One request over node:http; no timeout (POST /compact answers when the compaction is done). */
function httpCall(url: string, method: string, p: string, body?: Buffer, agent: http.Agent | false = false): Promise<Answer> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request({ agent, host: u.hostname, port: u.port, method, path: p, headers: body ? { 'Content-Length': body.length } : {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function metric(url: string, name: string): Promise<number> {
  const r = await httpCall(url, 'GET', '/metrics');
  let sum = 0;
  for (const m of r.body.toString().matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))) sum += Number(m[1]);
  return sum;
}

interface CompactState {
  running: boolean;
  blobsCompacted: number;
  bytesReclaimed: number;
  lastPass?: { finished: number; compacted: number; skipped: number };
}

/** POST /vdisks/0/compact: resolves when the compaction is done. */
async function compact(url: string): Promise<CompactState[]> {
  const r = await httpCall(url, 'POST', `/vdisks/${VDISK}/compact`);
  if (r.status !== 200) throw new Error(`POST /vdisks/${VDISK}/compact: ${r.status} ${r.body.toString()}`);
  return (JSON.parse(r.body.toString()) as { disks: CompactState[] }).disks;
}

// ---------------------------------------------------------------- values

// A value names its key and version (first 8 bytes) and is filled with a
// byte of both: a read checks that it got the key's value, and which version.
function value(size: number, key: number, version: number): Buffer {
  const b = Buffer.allocUnsafe(size);
  b.fill((key + version * 7) & 0xff, 8);
  b.writeUInt32LE(key, 0);
  b.writeUInt32LE(version, 4);
  return b;
}

/** The version a read value holds, or -1 if it is not a value of `key` of `size` bytes. */
function versionOf(b: Buffer, size: number, key: number): number {
  if (b.length !== size || b.readUInt32LE(0) !== key) return -1;
  const v = b.readUInt32LE(4);
  return b[8] === ((key + v * 7) & 0xff) && b[size - 1] === ((key + v * 7) & 0xff) ? v : -1;
}

/** xorshift32 in [0, 1). */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

/** What the benchmark knows of each key: versions sent and acknowledged, and the write of it in flight. */
class Keys {
  readonly sent: Uint32Array;
  readonly acked: Uint32Array;
  private readonly chains = new Map<number, Promise<void>>();

  constructor(
    readonly count: number,
    readonly size: number,
  ) {
    this.sent = new Uint32Array(count);
    this.acked = new Uint32Array(count);
  }

  /**
   * Writes the next version of `key` after the writes of it already sent
   * (never two of a key at once, so the last version sent is the newest).
   * `timed` gets the request's own latency; resolves true once acknowledged
   * (201), false on a failure when `tolerate`, else rejects.
   */
  write(c: Client, key: number, tolerate: boolean, timed?: (ms: number) => void): Promise<boolean> {
    const version = ++this.sent[key];
    const prev = this.chains.get(key);
    const p = (async () => {
      if (prev) await prev.catch(() => undefined);
      const t0 = process.hrtime.bigint();
      let ok = false;
      try {
        const r = await c.call('POST', `/data/${key}`, value(this.size, key, version));
        ok = r.status === 201;
        if (!ok && !tolerate) throw new Error(`POST /data/${key}: ${r.status} ${r.body.toString().slice(0, 200)}`);
      } catch (err) {
        if (!tolerate) throw err;
      }
      timed?.(Number(process.hrtime.bigint() - t0) / 1e6);
      if (ok && version > this.acked[key]) this.acked[key] = version;
      return ok;
    })();
    const link = p.then(() => undefined);
    this.chains.set(key, link);
    void link.finally(() => {
      if (this.chains.get(key) === link) this.chains.delete(key);
    }).catch(() => undefined);
    return p;
  }

  /** Every key written `versions` more times, the writes in one random order. */
  async overwrite(c: Client, versions: number, seed: number): Promise<number> {
    const order = new Uint32Array(this.count * versions);
    for (let i = 0; i < order.length; i++) order[i] = i % this.count;
    const r = rng(seed);
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(r() * (i + 1));
      const t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
    return runWindow(order.length, LOAD_CONNECTIONS, (i) => this.write(c, order[i], false));
  }

  /** Reads back up to `limit` keys (spread over all): each must hold a version between its last acknowledged and its last sent. */
  async verify(c: Client, limit: number): Promise<{ checked: number; wrong: string[] }> {
    const step = Math.max(1, Math.ceil(this.count / limit));
    const keys = Array.from({ length: Math.ceil(this.count / step) }, (_, i) => i * step);
    const wrong: string[] = [];
    await runWindow(keys.length, LOAD_CONNECTIONS, async (i) => {
      const k = keys[i];
      const r = await c.call('GET', `/data/${k}`);
      const v = r.status === 200 ? versionOf(r.body, this.size, k) : -1;
      if (v < this.acked[k] || v > this.sent[k]) wrong.push(`key ${k}: status ${r.status}, version ${v}, expected ${this.acked[k]}..${this.sent[k]}`);
    });
    return { checked: keys.length, wrong };
  }
}

// ---------------------------------------------------------------- foreground load

interface Round {
  get: number[];
  post: number[];
  /** Non-2xx answers, wrong values, connection errors. */
  failed: number;
  /** GETs that returned an older version than one acknowledged before they started. */
  stale: number;
  seconds: number;
}

const p99 = (xs: number[]) => {
  if (xs.length === 0) return NaN;
  const s = Float64Array.from(xs).sort();
  return s[Math.min(s.length - 1, Math.floor(s.length * 0.99))];
};

/** GETs and POSTs (50/50) of random keys with CONNECTIONS in flight until `stop()`. */
async function foreground(c: Client, keys: Keys, seed: number, stop: () => boolean): Promise<Round> {
  const round: Round = { get: [], post: [], failed: 0, stale: 0, seconds: 0 };
  const r = rng(seed);
  const t0 = process.hrtime.bigint();
  const worker = async () => {
    while (!stop()) {
      const k = Math.floor(r() * keys.count);
      if (r() < 0.5) {
        const floor = keys.acked[k];
        const s = process.hrtime.bigint();
        try {
          const a = await c.call('GET', `/data/${k}`);
          round.get.push(Number(process.hrtime.bigint() - s) / 1e6);
          const v = a.status === 200 ? versionOf(a.body, keys.size, k) : -1;
          if (v < 0) round.failed++;
          else if (v < floor) round.stale++;
        } catch {
          round.get.push(Number(process.hrtime.bigint() - s) / 1e6);
          round.failed++;
        }
      } else if (!(await keys.write(c, k, true, (ms) => round.post.push(ms)))) {
        round.failed++;
      }
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, worker));
  round.seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  return round;
}

// ---------------------------------------------------------------- disk

function walk(dir: string, out: string[] = []): string[] {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}

/** Bytes of the blob and index files under the disk. */
function diskBytes(disk: string): { bytes: number; blobs: number } {
  let bytes = 0;
  let blobs = 0;
  for (const f of walk(disk)) {
    if (!/\.(blob|index)$/.test(f)) continue;
    bytes += fs.statSync(f).size;
    if (f.endsWith('.blob')) blobs++;
  }
  return { bytes, blobs };
}

/** The blob files that have an index file: the closed blobs, what compaction takes. */
function closedBlobs(disk: string): string[] {
  return walk(disk).filter((f) => f.endsWith('.blob') && fs.existsSync(f.slice(0, -'.blob'.length) + '.index'));
}

let dropped: boolean | null = null;

/** Drops the page cache when root and asked to; whether it did. */
function dropCaches(): boolean {
  if (!DROP_CACHES) return false;
  try {
    execFileSync('sync');
    fs.writeFileSync('/proc/sys/vm/drop_caches', '3');
    return (dropped = true);
  } catch {
    return (dropped = false);
  }
}

/** dd copies each file into `into` (same file system), bs=1M, conv=fsync; bytes and seconds. */
function ddCopy(files: string[], into: string): { files: number; bytes: number; seconds: number } {
  fs.mkdirSync(into, { recursive: true });
  let bytes = 0;
  const t0 = process.hrtime.bigint();
  for (const [i, f] of files.entries()) {
    execFileSync('dd', [`if=${f}`, `of=${path.join(into, `copy-${i}`)}`, 'bs=1M', 'conv=fsync', 'status=none'], { stdio: 'ignore' });
    bytes += fs.statSync(f).size;
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  fs.rmSync(into, { recursive: true, force: true });
  return { files: files.length, bytes, seconds };
}

/** The "compacted blob N" log lines after line `from` of the node's output, and its warnings about compaction (refused, failed). */
function compactionLog(proc: OysterProcess, from: number): { blobs: number; before: number; after: number; warnings: string[] } {
  let blobs = 0;
  let before = 0;
  let after = 0;
  const warnings: string[] = [];
  for (const line of proc.output.slice(from)) {
    if (!line.startsWith('{')) continue;
    let rec: { msg?: string; before?: number; after?: number; level?: string };
    try {
      rec = JSON.parse(line) as typeof rec;
    } catch {
      continue;
    }
    const msg = rec.msg ?? '';
    if (msg.startsWith('compacted blob ')) {
      blobs++;
      before += rec.before ?? 0;
      after += rec.after ?? 0;
    } else if ((rec.level === 'warn' || rec.level === 'error' || rec.level === 'fatal') && /compact/.test(msg)) {
      warnings.push(msg);
    }
  }
  return { blobs, before, after, warnings };
}

// ---------------------------------------------------------------- node

class Node {
  proc: OysterProcess | null = null;
  constructor(
    readonly files: ClusterFiles,
    readonly disk: string,
  ) {}

  async start(rateMib: number): Promise<OysterProcess> {
    const file = this.files.nodeYaml[NODE];
    const doc = YAML.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
    doc.compaction = { enabled: false, interval: '1h', rate: `${rateMib} MiB` };
    fs.writeFileSync(file, YAML.stringify(doc));
    this.proc = await startNode(this.files, NODE, { timeoutMs: 120_000 });
    return this.proc;
  }

  async stop(): Promise<void> {
    const p = this.proc;
    this.proc = null;
    if (!p) return;
    const timer = setTimeout(() => p.child.kill('SIGKILL'), 60_000);
    const code = await p.stop();
    clearTimeout(timer);
    if (code !== 0) throw new Error(`oysterd exited with ${code}:\n${p.output.slice(-20).join('\n')}`);
  }
}

const live: Array<{ node: Node; dir: string }> = [];

// ---------------------------------------------------------------- one value size

interface Result {
  size: number;
  keys: number;
  load: { seconds: number; bytes: number };
  before: { bytes: number; blobs: number };
  after: { bytes: number; blobs: number };
  dd: { files: number; bytes: number; seconds: number };
  reclaim: { seconds: number; blobs: number; source: number; kept: number; reclaimed: number; io: number; cpu: number; warnings: string[] };
  verifyA: { checked: number; wrong: string[] };
  pairs: Array<{ without: Round; with: Round; compaction: { seconds: number; blobs: number; source: number; io: number; warnings: string[] } }>;
  verifyB: { checked: number; wrong: string[] };
}

async function runSize(sizeKib: number): Promise<Result> {
  const size = sizeKib * 1024;
  const keyCount = Math.max(1, Math.floor((liveMib(sizeKib) * MiB) / size));
  const dir = benchDir(`compaction-${sizeKib}k`);
  const files = await writeCluster(dir, { nodes: [{ name: NODE }], vdisks: 1 }, {
    maxBlobSize: `${BLOB_MIB} MiB`,
    extra: { read_cache_size: `${READ_CACHE_MIB} MiB` },
  });
  const node = new Node(files, files.disks[NODE].disk1);
  const entry = { node, dir };
  live.push(entry);
  const keys = new Keys(keyCount, size);
  try {
    // Load: K keys × VERSIONS, one random order.
    let proc = await node.start(RECLAIM_RATE_MIB);
    let c = client(proc.url, LOAD_CONNECTIONS);
    const loadSeconds = await keys.overwrite(c, VERSIONS, 0x9e3779b9 ^ sizeKib);
    await c.close();
    // A restart closes the blob being written to.
    await node.stop();
    proc = await node.start(RECLAIM_RATE_MIB);
    c = client(proc.url, LOAD_CONNECTIONS);

    // Part A: reclaim rate against dd, space afterwards.
    const before = diskBytes(node.disk);
    const blobs = closedBlobs(node.disk);
    dropCaches();
    const dd = ddCopy(blobs, path.join(dir, 'dd-copies'));
    dropCaches();
    const mark = proc.output.length;
    const io0 = await metric(proc.url, 'oyster_compaction_io_bytes_total');
    const reclaimed0 = await metric(proc.url, 'oyster_compaction_reclaimed_bytes_total');
    const cpu0 = cpuSeconds(proc.child.pid!);
    const t0 = process.hrtime.bigint();
    await compact(proc.url);
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const cpu = cpuSeconds(proc.child.pid!) - cpu0;
    const io = (await metric(proc.url, 'oyster_compaction_io_bytes_total')) - io0;
    const reclaimed = (await metric(proc.url, 'oyster_compaction_reclaimed_bytes_total')) - reclaimed0;
    const log = compactionLog(proc, mark);
    const after = diskBytes(node.disk);
    const verifyA = await keys.verify(c, VERIFY);
    await c.close();
    await node.stop();

    // Part B: foreground latency with and without compaction, at the default rate.
    proc = await node.start(RATE_MIB);
    const url = proc.url;
    const load = client(url, LOAD_CONNECTIONS);
    const fg = client(url, CONNECTIONS);
    const warmEnd = Date.now() + WARMUP_SECONDS * 1000;
    await foreground(fg, keys, 1, () => Date.now() >= warmEnd);
    const pairs: Result['pairs'] = [];
    let lastWith = 0;
    for (let pair = 0; pair < ROUNDS; pair++) {
      await keys.overwrite(load, ROUND_VERSIONS, 1000 + pair);
      const withRound = async () => {
        const from = proc.output.length;
        const io0 = await metric(url, 'oyster_compaction_io_bytes_total');
        let done = false;
        const t = process.hrtime.bigint();
        const run = compact(url).finally(() => (done = true));
        const round = await foreground(fg, keys, 2000 + pair, () => done);
        await run;
        const seconds = Number(process.hrtime.bigint() - t) / 1e9;
        const l = compactionLog(proc, from);
        lastWith = round.seconds;
        return { round, compaction: { seconds, blobs: l.blobs, source: l.before, io: (await metric(url, 'oyster_compaction_io_bytes_total')) - io0, warnings: l.warnings } };
      };
      const withoutRound = (seconds: number) => {
        const end = Date.now() + Math.max(0.5, seconds) * 1000;
        return foreground(fg, keys, 3000 + pair, () => Date.now() >= end);
      };
      if (pair % 2 === 0) {
        const w = await withRound();
        const wo = await withoutRound(w.round.seconds);
        pairs.push({ without: wo, with: w.round, compaction: w.compaction });
      } else {
        const wo = await withoutRound(lastWith);
        const w = await withRound();
        pairs.push({ without: wo, with: w.round, compaction: w.compaction });
      }
    }
    const verifyB = await keys.verify(load, VERIFY);
    await fg.close();
    await load.close();
    await node.stop();
    return {
      size,
      keys: keyCount,
      load: { seconds: loadSeconds, bytes: keyCount * VERSIONS * size },
      before,
      after,
      dd,
      reclaim: { seconds, blobs: log.blobs, source: log.before, kept: log.after, reclaimed, io, cpu, warnings: log.warnings },
      verifyA,
      pairs,
      verifyB,
    };
  } finally {
    // After an error: the node is stopped (killed if it does not stop within a minute), its exit code no longer matters.
    await node.stop().catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
    live.splice(live.indexOf(entry), 1);
  }
}

// ---------------------------------------------------------------- report

const MB = 1e6;
const mbs = (bytes: number, seconds: number) => fmt(bytes / MB / seconds, 0);
/** The median of the figures that are numbers (a round without requests has no p99). */
const medianOf = (xs: number[]) => {
  const n = xs.filter(Number.isFinite);
  return n.length ? median(n) : NaN;
};
const x = (v: number) => (Number.isFinite(v) ? `${fmt(v, 2)}×` : '—');
const ok = (met: boolean) => (met ? '✔' : '✘');

function report(r: Result): Record<string, string> {
  const label = r.size >= 1024 ? `${r.size / 1024} KiB` : `${r.size} B`;
  const liveBytes = r.keys * r.size;
  const rc = r.reclaim;
  const sourceRate = rc.source / rc.seconds;
  const ddRate = r.dd.bytes / r.dd.seconds;
  const reclaimRatio = sourceRate / ddRate;
  const getRatios = r.pairs.map((p) => p99(p.with.get) / p99(p.without.get));
  const postRatios = r.pairs.map((p) => p99(p.with.post) / p99(p.without.post));
  const failedDuring = r.pairs.reduce((a, p) => a + p.with.failed, 0);
  const failedWithout = r.pairs.reduce((a, p) => a + p.without.failed, 0);
  const staleReads = r.pairs.reduce((a, p) => a + p.with.stale + p.without.stale, 0);
  const requestsDuring = r.pairs.reduce((a, p) => a + p.with.get.length + p.with.post.length, 0);
  const spaceAfter = r.after.bytes / liveBytes;
  const warnings = [...rc.warnings, ...r.pairs.flatMap((p) => p.compaction.warnings)];

  console.log(`\n## Values of ${label}: ${fmt(r.keys)} keys × ${VERSIONS} versions (${fmt(r.load.bytes / MB)} MB of values written in ${fmt(r.load.seconds, 1)} s, ${fmt((r.keys * VERSIONS) / r.load.seconds)} POSTs/s with ${LOAD_CONNECTIONS} connections), ${fmt(liveBytes / MB, 1)} MB live\n`);
  console.log(
    table([
      { '': 'blob + index files before compaction', value: `${fmt(r.before.bytes / MB, 1)} MB in ${r.before.blobs} blobs (${fmt(r.before.bytes / liveBytes, 2)} bytes per live byte)` },
      { '': `dd bs=1M conv=fsync of the ${r.dd.files} closed blob files`, value: `${fmt(r.dd.bytes / MB, 1)} MB in ${fmt(r.dd.seconds, 2)} s: ${mbs(r.dd.bytes, r.dd.seconds)} MB/s` },
      { '': `compaction (POST /compact, rate ${RECLAIM_RATE_MIB} MiB/s)`, value: `${rc.blobs} blobs, ${fmt(rc.source / MB, 1)} MB -> ${fmt(rc.kept / MB, 1)} MB in ${fmt(rc.seconds, 2)} s` },
      { '': 'reclaim rate: blob bytes compacted per second', value: `${mbs(rc.source, rc.seconds)} MB/s = **${x(reclaimRatio)} dd** (target ≥ 0.5× ${ok(reclaimRatio >= 0.5)})` },
      { '': 'reclaimed / compaction I/O per second', value: `${mbs(rc.reclaimed, rc.seconds)} MB/s given back; ${mbs(rc.io, rc.seconds)} MB/s read + written (${fmt(rc.io / MB, 1)} MB)` },
      { '': 'server CPU of the compaction', value: `${fmt(rc.cpu, 2)} s, ${fmt((rc.cpu * 1000) / (rc.reclaimed / MB), 1)} ms per MB given back` },
      { '': 'blob + index files after, per live byte', value: `${fmt(r.after.bytes / MB, 1)} MB in ${r.after.blobs} blobs: **${fmt(spaceAfter, 2)}** (target ≤ 1.3 ${ok(spaceAfter <= 1.3)})` },
      { '': 'values read back after compaction', value: `${fmt(r.verifyA.checked)} keys, ${r.verifyA.wrong.length} wrong` },
    ]),
  );
  console.log(`\nForeground: ${CONNECTIONS} connections, GET/POST 50/50 of random keys, ${label} values; compaction.rate ${RATE_MIB} MiB/s; before each pair every key overwritten ${ROUND_VERSIONS}×\n`);
  console.log(
    table(
      r.pairs.map((p, i) => ({
        pair: `${i + 1}${i % 2 ? ' (without first)' : ''}`,
        'compaction s, blobs, MB, I/O MB/s': `${fmt(p.compaction.seconds, 2)}, ${p.compaction.blobs}, ${fmt(p.compaction.source / MB, 1)}, ${mbs(p.compaction.io, p.compaction.seconds)}`,
        'ops/s without / with': `${fmt((p.without.get.length + p.without.post.length) / p.without.seconds)} / ${fmt((p.with.get.length + p.with.post.length) / p.with.seconds)}`,
        'GET p99 ms without / with': `${fmt(p99(p.without.get), 2)} / ${fmt(p99(p.with.get), 2)}`,
        'GET ratio': x(getRatios[i]),
        'POST p99 ms without / with': `${fmt(p99(p.without.post), 2)} / ${fmt(p99(p.with.post), 2)}`,
        'POST ratio': x(postRatios[i]),
        'requests with (GET + POST)': `${fmt(p.with.get.length)} + ${fmt(p.with.post.length)}`,
        'failed without / with': `${p.without.failed} / ${p.with.failed}`,
        stale: String(p.without.stale + p.with.stale),
      })),
    ),
  );
  console.log(
    `\nmedian p99 ratio with / without compaction: GET ${x(medianOf(getRatios))}, POST ${x(medianOf(postRatios))} (target ≤ 2× ${ok(medianOf(getRatios) <= 2 && medianOf(postRatios) <= 2)}); ` +
      `failed requests during compaction: ${failedDuring} of ${fmt(requestsDuring)} (target 0 ${ok(failedDuring === 0)}), without: ${failedWithout}; stale reads: ${staleReads}; ` +
      `values read back at the end: ${fmt(r.verifyB.checked)} keys, ${r.verifyB.wrong.length} wrong`,
  );
  for (const w of r.pairs.filter((p) => p.with.get.length + p.with.post.length < 1000)) {
    console.log(`note: a round with compaction had only ${w.with.get.length + w.with.post.length} requests (the compaction took ${fmt(w.compaction.seconds, 2)} s): its p99 rests on few samples`);
  }
  for (const w of [...new Set(warnings)]) console.log(`compaction warning: ${w}`);
  for (const w of [...r.verifyA.wrong, ...r.verifyB.wrong].slice(0, 10)) console.log(`wrong value: ${w}`);

  return {
    values: label,
    'reclaim vs dd (≥ 0.5×)': `${x(reclaimRatio)} ${ok(reclaimRatio >= 0.5)}`,
    'GET p99 with / without (≤ 2×)': `${x(medianOf(getRatios))} ${ok(medianOf(getRatios) <= 2)}`,
    'POST p99 with / without (≤ 2×)': `${x(medianOf(postRatios))} ${ok(medianOf(postRatios) <= 2)}`,
    'failed during compaction (0)': `${failedDuring} ${ok(failedDuring === 0)}`,
    'bytes on disk per live byte (≤ 1.3)': `${fmt(spaceAfter, 2)} ${ok(spaceAfter <= 1.3)}`,
    'CPU ms per MB given back': fmt((rc.cpu * 1000) / (rc.reclaimed / MB), 1),
    'wrong or stale values': String(r.verifyA.wrong.length + r.verifyB.wrong.length + staleReads),
  };
}

async function main(): Promise<void> {
  for (const s of SIZES_KIB) if (!(Number.isInteger(s) && s > 0)) throw new Error(`--sizes: ${s} is not a whole number of KiB`);
  console.log(`# Compaction benchmark\n\n${machine()}`);
  console.log(
    `oysterd: 1 node, 1 disk, 1 vdisk, max_blob_size ${BLOB_MIB} MiB, read_cache_size ${READ_CACHE_MIB} MiB, automatic compaction off; ` +
      `${VERSIONS} versions of every key in one random order; ${ROUNDS} interleaved pairs of foreground rounds`,
  );
  const rows: Array<Record<string, string>> = [];
  for (const s of SIZES_KIB) rows.push(report(await runSize(s)));
  console.log(
    `\npage cache: ${dropped === true ? 'dropped before dd and before the compaction: both read from the disk' : `not dropped (${DROP_CACHES ? 'not root' : '--drop-caches=0'}): dd and the compaction read what the page cache holds`}`,
  );
  console.log('reclaim rate: bytes of blob files compacted (size before) per second of the compaction, against bytes of the same blob files dd copied per second\n');
  console.log(table(rows));
}

async function cleanup(): Promise<void> {
  for (const { node, dir } of live.splice(0)) {
    const p = node.proc;
    if (p) await Promise.race([p.kill(), new Promise((r) => setTimeout(r, 5000))]);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    void cleanup().finally(() => process.exit(130));
  });
}

main().catch(async (err) => {
  console.error(err);
  await cleanup();
  process.exit(1);
});
