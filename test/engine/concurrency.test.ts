// Many puts and gets in flight at once on one engine, across rotations and
// background index builds: no lost or mixed-up values.
import t from 'tap';
import { Engine } from '../../src/store/engine';
import { keyOf, valueOf, ver } from '../helpers/records';
import { tempDir } from '../helpers/tmpdir';

t.test('concurrent writers and readers see consistent values', async (t) => {
  const dir = tempDir(t);
  const e = await Engine.open(dir, { maxDataInBlob: 500, keySize: 8 });
  const KEYS = 2000;
  const WRITERS = 32;
  const READERS = 32;
  const ROUNDS = 10;
  const size = (n: number, v: number) => (n * 31 + v * 17) % 3000;
  // versions[n] = highest version of key n acknowledged so far
  const versions = new Int32Array(KEYS);
  let mismatches = 0;
  let mixed = 0;
  let stop = false;

  const writer = async (w: number) => {
    for (let round = 1; round <= ROUNDS; round++) {
      for (let n = w; n < KEYS; n += WRITERS) {
        await e.put(keyOf(n, 8), ver(round, round * 1000 + w, 1), valueOf(n, round, size(n, round)));
        versions[n] = round;
        const r = await e.get(keyOf(n, 8));
        // The writer owns key n: its own latest write must be what it reads.
        if (r?.kind !== 'found' || r.version.timestamp !== round || !r.value.equals(valueOf(n, round, size(n, round)))) mismatches++;
      }
    }
  };
  const reader = async (seed: number) => {
    let x = seed + 1;
    while (!stop) {
      x = (x * 1103515245 + 12345) % 2 ** 31;
      const n = x % KEYS;
      const floor = versions[n];
      const r = await e.get(keyOf(n, 8));
      if (floor === 0 && r === null) continue;
      // Whatever version is read must be one written for this very key, and
      // not older than one acknowledged before the read started.
      if (r?.kind !== 'found' || r.version.timestamp < floor || !r.value.equals(valueOf(n, r.version.timestamp, size(n, r.version.timestamp)))) {
        mixed++;
      }
    }
  };
  const readers = Array.from({ length: READERS }, (_, i) => reader(i));
  await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
  stop = true;
  await Promise.all(readers);

  t.equal(mismatches, 0, 'every writer reads back its own latest write');
  t.equal(mixed, 0, 'readers never see a value of another key or version');
  const st = await e.stats();
  t.equal(st.records, KEYS * ROUNDS);
  t.ok(st.blobs >= (KEYS * ROUNDS) / 500, `${st.blobs} blobs after rotations`);
  const results = await e.exists(Array.from({ length: KEYS }, (_, n) => keyOf(n, 8)));
  t.ok(results.every((r) => r?.kind === 'found' && r.version.timestamp === ROUNDS), 'exists sees the last version of every key');
  await e.close();

  const again = await Engine.open(dir, { maxDataInBlob: 500, keySize: 8 });
  const all = await Promise.all(Array.from({ length: KEYS }, (_, n) => again.get(keyOf(n, 8))));
  t.ok(
    all.every((r, n) => r?.kind === 'found' && r.value.equals(valueOf(n, ROUNDS, size(n, ROUNDS)))),
    'after reopen every key holds its last version',
  );
  await again.close();
});
