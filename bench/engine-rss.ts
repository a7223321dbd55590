// Child of bench/engine.ts: opens one partition in a fresh process and
// reports how much RSS the open added, so that the figure is not blurred by
// the parent's heap. Usage: node --expose-gc engine-rss.js <dir> <records>
import { Engine } from '../src/store/engine';
import { gc } from './lib';

async function main(): Promise<void> {
  const [dir, records] = process.argv.slice(2);
  const n = Number(records);
  const k = Buffer.alloc(16);
  // Load the addon and warm up the allocator before the first reading.
  const warm = await Engine.open(`${dir}-warmup`, { keySize: 16 });
  await warm.close();
  gc();
  await new Promise((r) => setTimeout(r, 50));
  const before = process.memoryUsage().rss;
  const start = process.hrtime.bigint();
  const e = await Engine.open(dir, { keySize: 16 });
  const openSeconds = Number(process.hrtime.bigint() - start) / 1e9;
  for (let i = 0; i < n; i += Math.max(1, Math.floor(n / 64))) {
    k.writeUInt32LE(i >>> 0, 0);
    await e.get(k);
  }
  gc();
  await new Promise((r) => setTimeout(r, 50));
  const after = process.memoryUsage().rss;
  const stats = await e.stats();
  process.stdout.write(JSON.stringify({ openSeconds, rssBytes: after - before, stats, recovery: e.recovery }) + '\n');
  await e.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
