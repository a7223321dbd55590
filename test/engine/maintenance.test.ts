// Compaction and scrub through the addon: a scrub reports a flipped byte with
// its key and version once, and passes over it after a repair; both refuse
// bad arguments, blobs they cannot work on, and calls after close.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { Test } from 'tap';
import { Engine, EngineErrorCode, EngineSet, isEngineError, ScrubDamage } from '../../src/store/engine';
import { native } from '../../src/store/native';
import { flipByte, recordsIn } from '../helpers/blob-files';
import { keyOf, ver } from '../helpers/records';
import { tempDir } from '../helpers/tmpdir';

const value = (i: number) => Buffer.alloc(3000, `value ${i} `);

/** Opens an engine holding keys 0..39 in closed blob 1 (and an empty active blob). */
async function filled(t: Test): Promise<{ engine: Engine; set: EngineSet; blob: string }> {
  const dir = tempDir(t);
  const engine = await Engine.open(dir);
  for (let i = 0; i < 40; i++) await engine.put(keyOf(i), ver(10), value(i));
  await engine.closeActiveBlob();
  const blob = fs.readdirSync(dir).find((n) => n.endsWith('.1.blob'))!;
  return { engine, set: new EngineSet([engine]), blob: path.join(dir, blob) };
}

async function scrubAll(set: EngineSet, engine: Engine, blobId: number): Promise<{ damaged: ScrubDamage[]; visited: number; superseded: number }> {
  const scrub = await set.beginScrub(engine, blobId);
  const damaged: ScrubDamage[] = [];
  try {
    for (;;) {
      const r = await scrub.step(16 * 1024);
      damaged.push(...r.damaged);
      if (r.done) return { damaged, visited: r.stats.visited, superseded: r.stats.superseded };
    }
  } finally {
    await scrub.close();
  }
}

t.test('a scrub reports a damaged value once, with its key and version, and passes over it once repaired', async (t) => {
  const { engine, set, blob } = await filled(t);
  const record = recordsIn(blob, 16).find((r) => r.key.equals(keyOf(7)))!;
  flipByte(blob, record.offset + record.headerSize + 100);
  const first = await scrubAll(set, engine, 1);
  t.equal(first.visited, 40, 'every record visited');
  t.equal(first.damaged.length, 1, 'one damaged record');
  t.same(first.damaged[0].key, keyOf(7));
  t.same(first.damaged[0].version, ver(10));
  t.equal(first.damaged[0].tombstone, false);
  t.equal(first.damaged[0].offset, record.offset);
  t.match(first.damaged[0].message, /record CRC/);
  // The repair scrub's callers make: the healthy copy written again at its version.
  await engine.put(keyOf(7), ver(10), value(7));
  t.same((await engine.get(keyOf(7)))?.kind, 'found');
  const second = await scrubAll(set, engine, 1);
  t.same(second.damaged, [], 'the damaged record is garbage now: not reported again');
  t.equal(second.superseded, 1, 'passed over');
  await engine.close();
});

t.test('compaction and scrub refuse what they cannot do', async (t) => {
  const { engine, set } = await filled(t);
  await engine.put(keyOf(100), ver(11), value(100));
  await t.rejects(set.beginScrub(engine, 2), { code: EngineErrorCode.invalidArgument }, 'the active blob is not closed');
  await t.rejects(set.beginScrub(engine, 9), { code: EngineErrorCode.notFound }, 'no such blob');
  await t.rejects(set.beginCompaction(engine, 9, { graceSeconds: 0, drop: true }), { code: EngineErrorCode.notFound });
  const other = await filled(t);
  await t.rejects(set.beginScrub(other.engine, 1), { code: EngineErrorCode.invalidArgument }, "another set's engine");
  await t.rejects(set.beginCompaction(other.engine, 1, { graceSeconds: 0, drop: true }), { code: EngineErrorCode.invalidArgument });
  await other.engine.close();
  const handle = new native.EngineSet([engine.handle], Buffer.alloc(16), new Float64Array(3));
  t.throws(() => handle.beginScrub({} as never, 1), TypeError, 'not an engine');
  t.throws(() => handle.beginScrub(engine.handle, -1), RangeError);
  t.throws(() => handle.beginScrub(engine.handle, '1' as unknown as number), TypeError);
  t.throws(() => handle.beginCompaction(engine.handle, 1, 0, 'yes' as unknown as boolean, 0), TypeError);
  t.throws(() => handle.countGarbage(-5, true, 0), RangeError);

  const scrub = await set.beginScrub(engine, 1);
  t.throws(() => (scrub as unknown as { handle: { step(b: unknown): unknown } }).handle.step(-1), RangeError, 'a negative budget');
  await scrub.close();
  await scrub.close();
  await t.rejects(scrub.step(1), { code: EngineErrorCode.closed }, 'a closed scrub');
  const compaction = await set.beginCompaction(engine, 1, { graceSeconds: 0, drop: true });
  await compaction.close();
  await t.rejects(compaction.step(1), { code: EngineErrorCode.closed }, 'a closed compaction');

  const late = await set.beginScrub(engine, 1);
  await engine.close();
  const err = await late.step(1 << 20).catch((e: unknown) => e);
  t.ok(isEngineError(err, EngineErrorCode.closed), 'a scrub of a closed engine: OYSTER_CLOSED');
  await late.close();
});
