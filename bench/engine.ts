// npm run bench:engine -- [--records=1000000] [--sync-records=100000] [--reopen-records=10000000] [--concurrency=256]
//
// Measures the native engine from JavaScript, in one process:
//  - put and get of 1 KiB values, without and with sync_writes;
//  - the same access pattern through Node's own fs (fs.promises write/read
//    through libuv) as the baseline measured in the same run;
//  - RSS and index/filter RAM per million records of closed blobs;
//  - reopen time of a partition holding 10 million records.
// Data goes to $OYSTER_BENCH_DIR (default: the OS temp dir) and is removed.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Engine, EngineStats, engineInfo, RecoveryReport } from '../src/store/engine';
import { arg, benchDir, fmt, machine, runWindow, table } from './lib';

// Every put carries a version as a coordinator stamps it: bob's second, the
// next tick of its clock and its node id. (With one version for every record
// a lookup could not skip older blobs: a tombstone of the same version would
// win there.)
const SECOND = 1_700_000_000;
const version = (i: number) => ({ timestamp: SECOND, tick: SECOND * 1_000_000 + i, node: 1 });

const RECORDS = arg('records', 1_000_000);
const SYNC_RECORDS = arg('sync-records', 100_000);
const REOPEN_RECORDS = arg('reopen-records', 10_000_000);
const CONCURRENCY = arg('concurrency', 256);
const VALUE = 1024;
const KEY = 16;

function key(i: number): Buffer {
  const k = Buffer.alloc(KEY);
  k.writeUInt32LE(i >>> 0, 0);
  k.writeUInt32LE(Math.floor(i / 2 ** 32), 4);
  return k;
}

// A pool of distinct values, so the benchmark does not measure allocation.
const values = Array.from({ length: 1024 }, (_, i) => Buffer.alloc(VALUE, i & 0xff));
const valueFor = (i: number) => values[i % values.length];
// A fixed random permutation for gets.
function shuffled(n: number): Uint32Array {
  const a = new Uint32Array(n);
  for (let i = 0; i < n; i++) a[i] = i;
  let x = 88172645;
  for (let i = n - 1; i > 0; i--) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    const j = (x >>> 0) % (i + 1);
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

interface Row {
  what: string;
  ops: number;
  seconds: number;
  baseline?: number; // ops/s of the baseline for the same pattern
}

async function fsBaseline(dir: string, n: number, sync: boolean): Promise<{ write: number; read: number }> {
  // The same pattern with fs.promises: positional 1 KiB writes appended to one
  // file (the offset reserved up front, as an engine would), then random reads.
  const file = path.join(dir, 'baseline.dat');
  const fh = await fs.promises.open(file, 'w+');
  const header = engineInfo.format.recordFixedSize + KEY; // the bytes per record the engine writes besides the value
  const rec = VALUE + header;
  let tail = 0;
  const wsec = await runWindow(n, CONCURRENCY, async (i) => {
    const at = tail;
    tail += rec;
    await fh.write(valueFor(i), 0, VALUE, at);
    if (sync) await fh.datasync();
  });
  const order = shuffled(n);
  const buf = Buffer.alloc(VALUE);
  const rsec = await runWindow(n, CONCURRENCY, async (i) => {
    await fh.read(buf, 0, VALUE, order[i] * rec);
  });
  await fh.close();
  fs.rmSync(file);
  return { write: n / wsec, read: n / rsec };
}

async function putGet(rows: Row[]): Promise<void> {
  const dir = benchDir('putget');
  try {
    const base = await fsBaseline(dir, RECORDS, false);
    let e = await Engine.open(path.join(dir, 'p'), { keySize: KEY });
    const putSec = await runWindow(RECORDS, CONCURRENCY, (i) => e.put(key(i), version(i), valueFor(i)));
    rows.push({ what: 'put 1 KiB (no sync)', ops: RECORDS, seconds: putSec, baseline: base.write });

    const order = shuffled(RECORDS);
    let wrong = 0;
    const getSec = await runWindow(RECORDS, CONCURRENCY, async (i) => {
      const n = order[i];
      const r = await e.get(key(n));
      if (r?.kind !== 'found' || r.value.length !== VALUE || r.value[0] !== (n % values.length & 0xff)) wrong++;
    });
    if (wrong) throw new Error(`${wrong} wrong values read`);
    rows.push({ what: 'get 1 KiB, random keys (written this run)', ops: RECORDS, seconds: getSec, baseline: base.read });

    await e.close();
    e = await Engine.open(path.join(dir, 'p'), { keySize: KEY });
    const get2 = await runWindow(RECORDS, CONCURRENCY, (i) => e.get(key(order[i])));
    rows.push({ what: 'get 1 KiB, random keys, after reopen (closed blobs)', ops: RECORDS, seconds: get2, baseline: base.read });
    await e.close();

    const sbase = await fsBaseline(dir, SYNC_RECORDS, true);
    const s = await Engine.open(path.join(dir, 's'), { keySize: KEY, syncWrites: true });
    const syncSec = await runWindow(SYNC_RECORDS, CONCURRENCY, (i) => s.put(key(i), version(i), valueFor(i)));
    rows.push({ what: 'put 1 KiB, sync_writes (group commit)', ops: SYNC_RECORDS, seconds: syncSec, baseline: sbase.write });
    await s.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function reopen(): Promise<string[]> {
  const dir = benchDir('reopen');
  const out: string[] = [];
  try {
    const small = Buffer.alloc(8, 1);
    const e = await Engine.open(dir, { keySize: KEY });
    const wsec = await runWindow(REOPEN_RECORDS, 1024, (i) => e.put(key(i), version(i), small));
    await e.close();
    out.push(`- loaded ${fmt(REOPEN_RECORDS)} records of 8 B in ${fmt(wsec, 1)} s (${fmt(REOPEN_RECORDS / wsec)} puts/s)`);

    const child = spawnSync(process.execPath, ['--expose-gc', path.join(__dirname, 'engine-rss.js'), dir, String(REOPEN_RECORDS)], {
      encoding: 'utf8',
    });
    if (child.status !== 0) throw new Error(`engine-rss failed: ${child.stderr}`);
    const m = JSON.parse(child.stdout) as { openSeconds: number; rssBytes: number; stats: EngineStats; recovery: RecoveryReport };
    const perRecord = (bytes: number) => fmt(bytes / REOPEN_RECORDS, 2);
    out.push(
      `- reopen of ${fmt(REOPEN_RECORDS)} records in ${m.stats.blobs} closed blobs (fresh process): **${fmt(m.openSeconds, 3)} s** ` +
        `(${m.recovery.indexesLoaded} index files loaded, ${m.recovery.blobsScanned} blobs scanned)`,
    );
    out.push(
      `- RAM held for closed blobs: **${perRecord(m.rssBytes)} bytes/record of RSS** (${fmt(m.rssBytes / 2 ** 20, 1)} MiB for ` +
        `${fmt(REOPEN_RECORDS / 1e6, 0)} M records, ${fmt(m.rssBytes / (REOPEN_RECORDS / 1e6) / 2 ** 20, 2)} MiB per million); ` +
        `engine accounting ${perRecord(m.stats.indexMemory + m.stats.filterMemory)} B/record ` +
        `(fences ${perRecord(m.stats.indexMemory)} + bloom ${perRecord(m.stats.filterMemory)})`,
    );

    // A crash image: the newest blob has no index and is rescanned.
    const active = fs.readdirSync(dir).filter((n) => n.endsWith('.index')).sort((a, b) => Number(b.split('.')[1]) - Number(a.split('.')[1]))[0];
    fs.rmSync(path.join(dir, active));
    fs.rmSync(`${dir}-warmup`, { recursive: true, force: true });
    const cstart = process.hrtime.bigint();
    const c = await Engine.open(dir, { keySize: KEY });
    const csec = Number(process.hrtime.bigint() - cstart) / 1e9;
    const rescanned = REOPEN_RECORDS - 1_000_000 * (m.stats.blobs - 1); // blobs hold max_data_in_blob = 1,000,000 records
    out.push(
      `- reopen after a crash (${c.recovery.blobsScanned} blob without index, ${fmt(rescanned)} records rescanned and verified): ${fmt(csec, 3)} s`,
    );
    await c.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

async function main(): Promise<void> {
  console.log(`# engine benchmark\n\n${machine()}; engine threads ${engineInfo.threads}, CRC32C in hardware: ${engineInfo.crc32cHardware}`);
  console.log(`records ${fmt(RECORDS)}, concurrency ${CONCURRENCY}, values ${VALUE} B, keys ${KEY} B\n`);
  const rows: Row[] = [];
  await putGet(rows);
  console.log(
    table(
      rows.map((r) => ({
        operation: r.what,
        ops: fmt(r.ops),
        'ops/s': fmt(r.ops / r.seconds),
        'fs baseline ops/s': r.baseline ? fmt(r.baseline) : '-',
        'ratio to baseline': r.baseline ? `${fmt(r.ops / r.seconds / r.baseline, 2)}×` : '-',
      })),
    ),
  );
  console.log('');
  for (const line of await reopen()) console.log(line);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
