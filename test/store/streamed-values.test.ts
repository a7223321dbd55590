// Values written piece by piece (Engine.beginStream) and read in parts
// (EngineSet.openNewest), through the real addon on real files: byte-exact
// reads at any offset, nothing readable of a stream aborted, refused or
// dropped, and damage reported with the record's version.
import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import v8 from 'node:v8';
import t from 'tap';
import { OpenedValue } from '../../src/model/value';
import { Engine, EngineSet, isEngineError, PutStream } from '../../src/store/engine';
import { StoredRecord } from '../../src/model/version';
import { keyOf, valueOf, ver } from '../helpers/records';
import { tempDir } from '../helpers/tmpdir';

const MiB = 1 << 20;

// Uneven pieces, several per append.
function piecesOf(value: Buffer): Buffer[][] {
  const calls: Buffer[][] = [];
  for (let at = 0, call = 0; at < value.length; call++) {
    const pieces: Buffer[] = [];
    for (let i = 0; i <= call % 4 && at < value.length; i++) {
      const n = Math.min(value.length - at, 1 + ((call * 7919 + i * 104729) % 300_000));
      pieces.push(value.subarray(at, at + n));
      at += n;
    }
    calls.push(pieces);
  }
  return calls;
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

function opened(r: StoredRecord | OpenedValue | null): OpenedValue {
  if (r === null || !('reader' in r)) throw new Error(`expected a reader, got ${JSON.stringify(r)}`);
  return r;
}

t.test('a streamed value reads back exactly, in parts and whole', async (t) => {
  const dir = tempDir(t);
  const e = await Engine.open(dir);
  const set = new EngineSet([e]);
  const key = keyOf(1);
  const value = valueOf(1, 2, 3 * MiB + 12_345);
  const stream = await e.beginStream(key, ver(2, 5, 1), value.length);
  for (const pieces of piecesOf(value)) await stream.append(pieces);
  await stream.finish();

  const r = opened(await set.openNewest(key, 64 * 1024));
  t.same(r.version, ver(2, 5, 1));
  t.equal(r.size, value.length);
  t.equal(r.reader.size, value.length);
  const block = 65536;
  for (const [offset, n] of [
    [0, 1],
    [0, value.length],
    [block - 1, 2],
    [block, block],
    [5 * block + 17, 3 * block + 5],
    [MiB - 3, 100_000],
    [value.length - 1, 1],
    [value.length - 70_000, 70_000],
  ]) {
    const target = Buffer.alloc(n);
    await r.reader.read(offset, target);
    t.ok(target.equals(value.subarray(offset, offset + n)), `[${offset}, +${n})`);
  }
  const err = await rejection(r.reader.read(value.length - 1, Buffer.alloc(2)));
  t.ok(isEngineError(err, 'OYSTER_INVALID_ARGUMENT'), 'a range past the end is refused');
  t.type(await rejection(r.reader.read(-1, Buffer.alloc(1))), RangeError, 'argument errors come as rejections');
  r.reader.close();
  r.reader.close();
  t.ok(isEngineError(await rejection(r.reader.read(0, Buffer.alloc(1))), 'OYSTER_CLOSED'), 'closed readers refuse');

  const whole = await set.openNewest(key, value.length);
  t.equal(whole?.kind, 'found');
  t.ok(whole !== null && 'value' in whole && whole.value.equals(value), 'up to wholeUpTo the value comes in memory');
  t.same(await set.openNewest(keyOf(2), 0), null, 'absent');
  t.same(await new EngineSet([]).openNewest(key, 0), null, 'an empty set holds nothing');
  await e.close();
});

t.test('appends made without waiting take effect in order', async (t) => {
  const e = await Engine.open(tempDir(t));
  const value = valueOf(3, 1, 2 * MiB + 1);
  const stream = await e.beginStream(keyOf(3), ver(1), value.length);
  await Promise.all([...piecesOf(value).map((pieces) => stream.append(pieces)), stream.finish()]);
  const got = await e.get(keyOf(3));
  t.ok(got?.kind === 'found' && got.value.equals(value), 'the value as appended');
  await e.close();
});

t.test('aborted, refused and dropped streams leave the previous value', async (t) => {
  const dir = tempDir(t);
  let e = await Engine.open(dir);
  const key = keyOf(7);
  const old = valueOf(7, 1, 1000);
  await e.put(key, ver(1), old);
  const newest = async () => {
    const r = await new EngineSet([e]).openNewest(key, 1 << 30);
    return r !== null && 'value' in r && r.value.equals(old) && r.version.timestamp === 1;
  };
  const value = valueOf(7, 2, MiB);

  const aborted = await e.beginStream(key, ver(2), value.length);
  await aborted.append([value.subarray(0, 1000), value.subarray(1000, 5000)]);
  await aborted.abort();
  await aborted.abort();
  t.ok(isEngineError(await rejection(aborted.finish()), 'OYSTER_CLOSED'), 'an aborted stream cannot finish');
  t.ok(await newest(), 'abort: the previous value stays the newest');

  // Aborted while an append is in flight: after it.
  const racing = await e.beginStream(key, ver(3), value.length);
  const appended = racing.append([value.subarray(0, 500_000)]);
  await racing.abort();
  await appended;
  t.ok(await newest(), 'abort during an append');

  const over = await e.beginStream(key, ver(4), 10);
  const err = await rejection(over.append([Buffer.alloc(6), Buffer.alloc(5)]));
  t.ok(isEngineError(err, 'OYSTER_INVALID_ARGUMENT'), 'more bytes than announced are refused');
  t.ok(isEngineError(await rejection(over.finish()), 'OYSTER_CLOSED'), 'and the stream is aborted');
  t.ok(await newest(), 'refused');

  const short = await e.beginStream(key, ver(5), 10);
  await short.append([Buffer.alloc(4)]);
  t.ok(isEngineError(await rejection(short.finish()), 'OYSTER_INVALID_ARGUMENT'), 'fewer bytes than announced');
  await short.abort();
  t.ok(await newest(), 'short');

  const done = await e.beginStream(keyOf(8), ver(1), 3);
  await done.append([Buffer.from('abc')]);
  await done.finish();
  await done.abort();
  const kept = await e.get(keyOf(8));
  t.ok(kept?.kind === 'found' && kept.value.toString() === 'abc', 'abort after finish changes nothing');

  // Dropped without finish, then the engine closed (aborting it) and reopened.
  let dropped: PutStream | null = await e.beginStream(key, ver(6), value.length);
  await dropped.append([value.subarray(0, 300_000)]);
  dropped = null;
  await e.close();
  e = await Engine.open(dir);
  t.equal(e.recovery.corruptRecords, 0);
  t.ok(await newest(), 'dropped: the previous value is intact after a reopen');
  await e.close();
});

t.test('a stream collected unfinished is abandoned without harm', async (t) => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const dir = tempDir(t);
  let e = await Engine.open(dir);
  const key = keyOf(9);
  await e.put(key, ver(1), Buffer.from('old'));
  // In a function of their own: a suspended async function keeps what its
  // frame held.
  const leave = async (i: number) => {
    const s = await e.beginStream(key, ver(2 + i), 200_000);
    await s.append([valueOf(9, i, 100_000)]);
  };
  for (let i = 0; i < 20; i++) await leave(i);
  await e.put(keyOf(10), ver(1), Buffer.from('after'));
  // The blob is sealed now, and indexed as soon as its streams end: once
  // their wraps are collected, without a close.
  await e.closeActiveBlob();
  t.equal((await e.stats()).blobsInMemory, 1, 'the streams hold the index back');
  for (let i = 0; i < 100 && (await e.stats()).blobsInMemory > 0; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  t.equal((await e.stats()).blobsInMemory, 0, 'collected streams were aborted');
  const r = await e.get(key);
  t.ok(r?.kind === 'found' && r.value.toString() === 'old');
  await e.close();
  e = await Engine.open(dir);
  t.equal(e.recovery.corruptRecords, 0);
  t.equal(e.recovery.bytesTruncated, 0, 'the abandoned space is no torn tail');
  const after = await e.get(keyOf(10));
  t.ok(after?.kind === 'found' && after.value.toString() === 'after', 'records behind the space are intact');
  t.same((await e.get(key))?.version, ver(1));
  await e.close();
});

t.test('closing the engine under open streams and readers', async (t) => {
  const e = await Engine.open(tempDir(t));
  const value = valueOf(11, 1, 500_000);
  await e.put(keyOf(11), ver(1), value);
  const r = opened(await new EngineSet([e]).openNewest(keyOf(11), 0));
  const s = await e.beginStream(keyOf(12), ver(1), 100);
  await e.close();
  t.ok(isEngineError(await rejection(s.append([Buffer.alloc(10)])), 'OYSTER_CLOSED'), 'the stream was aborted');
  await s.abort();
  const target = Buffer.alloc(value.length);
  await r.reader.read(0, target);
  t.ok(target.equals(value), 'the reader keeps reading its record');
  r.reader.close();
});

t.test('a damaged block fails the reads of it, with the version', async (t) => {
  const dir = tempDir(t);
  const e = await Engine.open(dir);
  const value = valueOf(13, 1, 2 * MiB);
  await e.put(keyOf(13), ver(4, 2, 1), value);
  await e.closeActiveBlob();
  const r = opened(await new EngineSet([e]).openNewest(keyOf(13), 0));
  const file = path.join(dir, 'oyster.1.blob');
  const fd = fs.openSync(file, 'r+');
  const at = 32 + 44 + 16 + 1_000_000; // blob header, record header, then value byte 1e6 (block 15)
  const byte = Buffer.alloc(1);
  fs.readSync(fd, byte, 0, 1, at);
  byte[0] ^= 1;
  fs.writeSync(fd, byte, 0, 1, at);
  fs.closeSync(fd);
  const err = await rejection(r.reader.read(999_000, Buffer.alloc(2000)));
  t.ok(isEngineError(err, 'OYSTER_CORRUPTION'));
  t.same((err as { version?: unknown }).version, ver(4, 2, 1));
  const target = Buffer.alloc(65536);
  await r.reader.read(0, target);
  t.ok(target.equals(value.subarray(0, 65536)), 'other blocks read');
  t.equal((await e.stats()).corruptReads, 1);
  r.reader.close();
  await e.close();
});
