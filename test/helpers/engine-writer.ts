// A write load in a child process, for crash tests: writes keys 0, 1, 2, ...
// (every 5th key twice, the second time as version 2, every 7th deleted
// afterwards; each write of a key at a later tick of the same second) with
// `concurrency` writes in flight, and prints "<n> <version>" for every write
// once it is acknowledged (a tombstone prints version 0).
// The parent kills it with SIGKILL at a moment of its choosing.
// Usage: node engine-writer.js <dir> <syncWrites 0|1> <concurrency> <maxDataInBlob>
import { Engine } from '../../src/store/engine';
import { keyOf, sizeOf, valueOf, ver } from './records';

async function main(): Promise<void> {
  const [dir, sync, concurrency, maxDataInBlob] = process.argv.slice(2);
  const e = await Engine.open(dir, { syncWrites: sync === '1', maxDataInBlob: Number(maxDataInBlob) });
  let next = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const n = next++;
      await e.put(keyOf(n), ver(1000 + n), valueOf(n, 1, sizeOf(n, 8192)));
      process.stdout.write(`${n} 1\n`);
      if (n % 5 === 0) {
        await e.put(keyOf(n), ver(1000 + n, 2), valueOf(n, 2, sizeOf(n + 1, 8192)));
        process.stdout.write(`${n} 2\n`);
      }
      if (n % 7 === 0) {
        await e.delete(keyOf(n), ver(1000 + n, 3));
        process.stdout.write(`${n} 0\n`);
      }
    }
  };
  process.stdout.write('ready\n');
  await Promise.all(Array.from({ length: Number(concurrency) }, worker));
}

main().catch((err) => {
  process.stderr.write(String(err?.stack ?? err) + '\n');
  process.exit(1);
});
