// npm run bench:replicas -- [--keys=1000000] [--value=1024] [--hung-gets=3000] [--refill-rounds=3] [--only=anti-entropy,refill,hung]
//
// What keeping replicas in agreement costs, measured on real oysterd
// processes (2 nodes sharing one vdisk; a third node for the hung replica):
//
// 1. Anti-entropy between two replicas that hold the same `--keys` records:
//    the bytes the nodes exchange to find that out, against the data bytes,
//    and how long a pass takes. The records are written into both replicas'
//    directories by the engine before the nodes start (as the nodes would
//    have written them, with the same versions).
// 2. Refilling an empty replica (a replaced disk) from the other, against
//    `cp -r` of the same partition directory on the same file system, in
//    interleaved rounds.
// 3. GET latency with one replica of three hung (SIGSTOP), against the same
//    cluster healthy (3 nodes, 3 replicas, quorum 2, operation_timeout 1s).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Engine } from '../src/store/engine';
import { partitionStart } from '../src/store/partition';
import { ClusterFiles, OysterProcess, startNode, writeCluster } from '../test/helpers/oysterd';
import { arg, benchDir, cpuSeconds, fmt, machine, restClient, table } from './lib';

const KEYS = arg('keys', 1_000_000);
const VALUE = arg('value', 1024);
const HUNG_GETS = arg('hung-gets', 3000);
const REFILL_ROUNDS = arg('refill-rounds', 3);
const KEY_SIZE = 16;
const TS = 1_700_000_000;

function key(i: number): Buffer {
  const k = Buffer.alloc(KEY_SIZE);
  k.writeUIntLE(i, 0, 6);
  return k;
}

/** Writes the records into a partition directory as a node with node id 1 would have. */
async function seed(vdiskDir: string): Promise<void> {
  const dir = path.join(vdiskDir, `${partitionStart(TS, 86_400)}_seeded`);
  fs.mkdirSync(vdiskDir, { recursive: true });
  const e = await Engine.open(dir, { keySize: KEY_SIZE, blobFilePrefix: 'bob_seeded' });
  const value = Buffer.alloc(VALUE, 7);
  let next = 0;
  await Promise.all(
    Array.from({ length: 256 }, async () => {
      while (next < KEYS) {
        const i = next++;
        await e.put(key(i), { timestamp: TS, tick: TS * 1e6 + i, node: 1 }, value);
      }
    }),
  );
  await e.close();
}

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function dirBytes(dir: string): number {
  let n = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) n += e.isDirectory() ? dirBytes(path.join(dir, e.name)) : fs.statSync(path.join(dir, e.name)).size;
  return n;
}

async function twoReplicas(seedBoth: boolean): Promise<{ start: () => Promise<OysterProcess[]>; vdiskDirs: string[]; dir: string; files: ClusterFiles }> {
  const dir = benchDir('replicas');
  const files = await writeCluster(
    dir,
    { nodes: [{ name: 'a' }, { name: 'b' }], replicas: [['a/disk1', 'b/disk1']], keySize: KEY_SIZE },
    { quorum: 1, checkInterval: '500ms', extra: { anti_entropy: { interval: '1h', rate: '4 GiB' } } },
  );
  const vdiskDirs = ['a', 'b'].map((n) => path.join(files.disks[n].disk1, 'bob', '0'));
  await seed(vdiskDirs[0]);
  if (seedBoth) await seed(vdiskDirs[1]);
  return { start: () => Promise.all(['a', 'b'].map((n) => startNode(files, n))), vdiskDirs, dir, files };
}

async function antiEntropy(): Promise<string[]> {
  const { start, vdiskDirs, dir } = await twoReplicas(true);
  const procs = await start();
  try {
    // A peer coming up starts a pass at once; wait for both nodes' first complete one.
    await until('a pass on both nodes', async () => (await Promise.all(procs.map((p) => metric(p.url, 'oyster_anti_entropy_last_pass_timestamp_seconds')))).every((t) => t > 0), 120_000);
    const exchanged = await Promise.all(procs.map((p) => metric(p.url, 'oyster_anti_entropy_exchanged_bytes_total')));
    const copied = await Promise.all(procs.map((p) => metric(p.url, 'oyster_anti_entropy_copied_bytes_total')));
    const seconds = await Promise.all(procs.map((p) => metric(p.url, 'oyster_anti_entropy_last_pass_duration_seconds')));
    const data = KEYS * VALUE;
    const onDisk = dirBytes(vdiskDirs[0]);
    return [
      `- anti-entropy between two replicas holding the same ${fmt(KEYS)} records of ${fmt(VALUE)} B (${fmt(data / 2 ** 20)} MiB of values, ${fmt(onDisk / 2 ** 20)} MiB on disk per replica): ` +
        `each node received ${exchanged.map((b) => fmt(b)).join(' and ')} bytes (${exchanged.map((b) => fmt((100 * b) / data, 4)).join(' % and ')} % of the values), copied ${copied.map((b) => fmt(b)).join(' and ')} bytes; ` +
        `a pass took ${seconds.map((s) => fmt(s, 2)).join(' s and ')} s`,
    ];
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** utime + stime of this process's waited-for children (cp, sync), in seconds. */
function childCpuSeconds(): number {
  const stat = fs.readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[13]) + Number(f[14])) / 100;
}

/**
 * Rounds of: `cp -r` + sync of a's replica to a scratch directory, then b
 * started on an emptied replica and refilled by its first pass. Interleaved,
 * so that both see the same state of this machine's page cache and disk.
 */
async function refill(): Promise<string[]> {
  const { vdiskDirs, dir, files } = await twoReplicas(false);
  const bytes = dirBytes(vdiskDirs[0]);
  const a = await startNode(files, 'a');
  const rows: Array<Record<string, string>> = [];
  const ratios: number[] = [];
  try {
    for (let round = 1; round <= REFILL_ROUNDS; round++) {
      const copy = path.join(dir, 'cp-copy');
      const cpu0 = childCpuSeconds();
      const t0 = performance.now();
      execFileSync('cp', ['-r', vdiskDirs[0], copy]);
      execFileSync('sync', ['-f', copy]);
      const cpSeconds = (performance.now() - t0) / 1000;
      const cpCpu = childCpuSeconds() - cpu0;
      fs.rmSync(copy, { recursive: true, force: true });

      fs.rmSync(vdiskDirs[1], { recursive: true, force: true });
      const aCpu0 = cpuSeconds(a.child.pid!);
      const b = await startNode(files, 'b');
      try {
        // b's replica is empty: its first pass (as soon as it sees a) refills it.
        await until(
          'b to be refilled',
          async () => (await metric(b.url, 'oyster_anti_entropy_last_pass_timestamp_seconds')) > 0 && (await metric(b.url, 'oyster_anti_entropy_copied_bytes_total')) > 0,
          600_000,
        );
        // The pass itself: digests, the files, the comparison of keys afterwards.
        const passSeconds = await metric(b.url, 'oyster_anti_entropy_last_pass_duration_seconds');
        const nodesCpu = cpuSeconds(a.child.pid!) - aCpu0 + cpuSeconds(b.child.pid!);
        if (dirBytes(vdiskDirs[1]) < bytes) throw new Error(`b holds ${dirBytes(vdiskDirs[1])} bytes after the refill, a ${bytes}`);
        ratios.push(cpSeconds / passSeconds);
        rows.push({
          round: String(round),
          'cp -r + sync s': fmt(cpSeconds, 2),
          'cp MiB/s': fmt(bytes / 2 ** 20 / cpSeconds),
          'cp CPU s': fmt(cpCpu, 2),
          'refill pass s': fmt(passSeconds, 2),
          'refill MiB/s': fmt(bytes / 2 ** 20 / passSeconds),
          'both nodes CPU s': fmt(nodesCpu, 2),
          'refill / cp': `${fmt(cpSeconds / passSeconds, 2)}×`,
        });
      } finally {
        await b.stop();
      }
    }
  } finally {
    await a.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  ratios.sort((x, y) => x - y);
  return [
    `Refill of an empty replica from the other (${fmt(bytes / 2 ** 20)} MiB of partition files), interleaved with \`cp -r\` + \`sync -f\` of the same directory on the same file system; ` +
      `the refill is b's first anti-entropy pass (digests, whole files, keys compared afterwards); nodes' CPU counts b from its start:\n`,
    table(rows),
    `\nrefill / cp: median ${fmt(ratios[Math.floor(ratios.length / 2)], 2)}× (${fmt(ratios[0], 2)}–${fmt(ratios[ratios.length - 1], 2)}×)`,
  ];
}

async function hungReplica(): Promise<Array<Record<string, string>>> {
  const dir = benchDir('replicas');
  const nodes = ['n0', 'n1', 'n2'];
  const files = await writeCluster(
    dir,
    { nodes: nodes.map((name) => ({ name })), replicas: [0, 1, 2].map(() => nodes.map((n) => `${n}/disk1`)), keySize: KEY_SIZE },
    { quorum: 2, operationTimeout: '1s', checkInterval: '500ms' },
  );
  const procs = await Promise.all(nodes.map((n) => startNode(files, n)));
  try {
    await new Promise((r) => setTimeout(r, 1500));
    const clients = procs.slice(0, 2).map((p) => restClient(p.url, 8));
    const value = Buffer.alloc(VALUE, 1);
    for (let k = 0; k < 1000; k++) await clients[k % 2].send('POST', `/data/${k}`, value);
    const measure = async (what: string): Promise<Record<string, string>> => {
      const ms: number[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: 16 }, async (_, w) => {
          while (next < HUNG_GETS) {
            const k = next++ % 1000;
            const t = performance.now();
            const r = await clients[w % 2].send('GET', `/data/${k}`);
            if (r.status !== 200) throw new Error(`GET ${k}: ${r.status}`);
            ms.push(performance.now() - t);
          }
        }),
      );
      ms.sort((a, b) => a - b);
      const at = (q: number) => ms[Math.min(ms.length - 1, Math.floor(ms.length * q))];
      return { state: what, GETs: fmt(ms.length), 'p50 ms': fmt(at(0.5), 2), 'p99 ms': fmt(at(0.99), 2), 'max ms': fmt(ms[ms.length - 1], 1) };
    };
    const rows = [await measure('3 replicas up')];
    procs[2].child.kill('SIGSTOP');
    rows.push(await measure('n2 stopped (SIGSTOP), right away'));
    await new Promise((r) => setTimeout(r, 3000));
    rows.push(await measure('n2 stopped, marked down'));
    procs[2].child.kill('SIGCONT');
    for (const c of clients) await c.close();
    return rows;
  } finally {
    procs[2].child.kill('SIGCONT');
    await Promise.all(procs.map((p) => p.stop()));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// --only=anti-entropy,refill,hung runs a part of it.
const ONLY = (process.argv.find((x) => x.startsWith('--only='))?.slice(7) ?? 'anti-entropy,refill,hung').split(',');

async function main(): Promise<void> {
  console.log(`# Replicas benchmark\n\n${machine()}\n`);
  if (ONLY.includes('anti-entropy')) for (const line of await antiEntropy()) console.log(line);
  if (ONLY.includes('refill')) for (const line of await refill()) console.log(line);
  if (!ONLY.includes('hung')) return;
  console.log('\nGET through n0 and n1 with 16 in flight, 1 KiB values, 3 nodes, 3 replicas, quorum 2, operation_timeout 1s:\n');
  console.log(table(await hungReplica()));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
