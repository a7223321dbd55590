// PartitionList opens each partition directory once, however a write's new
// partition and an attachAll (the alien hand-off, a refill) meet: two engines
// on one directory would lose the writes of one when the other is dropped.
import t, { Test } from 'tap';
import { PartitionList } from '../../src/store/partition-list';
import { tempDir } from '../helpers/tmpdir';

/** A PartitionList over a fresh directory, 100 s periods; `roundStarts` as for replicas, else as for aliens. */
async function openList(t: Test, roundStarts: boolean): Promise<PartitionList> {
  const list = new PartitionList(
    { dir: tempDir(t), id: 0, hash: 'h', blobPrefix: 'bob', periodSeconds: 100, roundStarts, engine: { keySize: 8 }, openAttempts: 1, openRetryDelayMs: 0, idleCloseMs: 10_000 },
    () => undefined,
  );
  await list.openAll();
  t.teardown(() => list.closeAll());
  return list;
}

t.test('concurrent partition creation and attachAll open every directory once', async (t) => {
  const list = await openList(t, true);
  const base = 1_700_000_000; // a multiple of 100
  for (let round = 0; round < 20; round++) {
    const ts = base + round * 100;
    // Writes of a new period, and attachAll calls landing all through the opening of its partition.
    const creating = Promise.all([list.partitionFor(ts), list.partitionFor(ts + 1)]);
    let done = false;
    void creating.then(() => (done = true));
    const attaching: Array<Promise<string[]>> = [];
    while (!done) {
      attaching.push(list.attachAll());
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all([creating, ...attaching, list.partitionFor(ts + 2)]);
  }
  const names = list.all.map((p) => p.dirName);
  t.equal(names.length, 20, 'one partition per period');
  t.equal(new Set(names).size, names.length, 'no directory attached twice');
  t.same((await list.attachAll()).length, 0, 'nothing left to attach');
});

t.test('a write of the period of a partition being dropped gets a partition of its own, which survives the drop', async (t) => {
  const list = await openList(t, false);
  const key = Buffer.alloc(8, 7);
  let lost = 0;
  for (let round = 0; round < 20; round++) {
    const ts = 1_700_000_000 + round * 1000;
    const sealed = await list.partitionFor(ts);
    await sealed.write((e) => e.put(key, { timestamp: ts, tick: 1, node: 1 }, Buffer.from('old')));
    await list.seal(sealed);
    // The hand-off drops the sealed partition while a write of its period arrives.
    const dropping = list.dropSealed(sealed);
    await new Promise((r) => setImmediate(r));
    const fresh = await list.partitionFor(ts);
    await fresh.write((e) => e.put(key, { timestamp: ts, tick: 2, node: 1 }, Buffer.from('new')));
    await dropping;
    const r = await list.engines.getNewest(key);
    if (r?.kind !== 'found' || r.value.toString() !== 'new') lost++;
  }
  t.equal(lost, 0, 'the record written during the drop is still there after it, every round');
});
