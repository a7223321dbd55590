// The addon's whole-file operations (src/store/files.ts) on a real
// directory: what each does, the errors it rejects with, and the arguments
// it refuses.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { EngineErrorCode, isEngineError } from '../../src/store/engine';
import { files } from '../../src/store/files';
import { tempDir } from '../helpers/tmpdir';

/** Rejects with OYSTER_IO_ERROR carrying this errno name (and a number). */
async function rejectsWith(p: Promise<unknown>, syscallCode: string | string[]): Promise<boolean> {
  try {
    await p;
    return false;
  } catch (err) {
    const names = Array.isArray(syscallCode) ? syscallCode : [syscallCode];
    return (
      isEngineError(err, EngineErrorCode.io) &&
      typeof err.errno === 'number' &&
      err.errno > 0 &&
      names.includes(err.syscallCode ?? '')
    );
  }
}

/** The bytes files.read puts into a fresh Buffer of `length`. */
async function readBytes(file: string, offset: number, length: number): Promise<Buffer> {
  const target = Buffer.alloc(length);
  const n = await files.read(file, offset, target);
  return target.subarray(0, n);
}

const bytes = (n: number, seed = 1) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff));

t.test('write creates a file exclusively, then writes at offsets; read returns what is there', async (t) => {
  const dir = tempDir(t);
  const f = path.join(dir, 'a.blob');
  await files.write(f, 0, Buffer.from('hello'), true);
  t.same(fs.readFileSync(f), Buffer.from('hello'));
  t.ok(await rejectsWith(files.write(f, 0, Buffer.from('x'), true), 'EEXIST'), 'create refuses an existing file');
  t.same(fs.readFileSync(f), Buffer.from('hello'), 'and leaves it alone');

  await files.write(f, 5, Buffer.from(' world'), false);
  await files.write(f, 0, Buffer.from('J'), false);
  await files.write(f, 14, Buffer.from('!'), false); // past the end: a hole of zeros
  t.same(fs.readFileSync(f), Buffer.concat([Buffer.from('Jello world'), Buffer.alloc(3), Buffer.from('!')]));
  t.ok(await rejectsWith(files.write(path.join(dir, 'missing'), 0, Buffer.from('x'), false), 'ENOENT'), 'without create the file must exist');
  t.notOk(fs.existsSync(path.join(dir, 'missing')));

  t.same(await readBytes(f, 0, 5), Buffer.from('Jello'));
  t.same(await readBytes(f, 6, 5), Buffer.from('world'));
  t.same(await readBytes(f, 11, 100), Buffer.from('\0\0\0!'), 'short only at the end of the file');
  t.same(await readBytes(f, 15, 10), Buffer.alloc(0), 'nothing at the end');
  t.same(await readBytes(f, 1000, 10), Buffer.alloc(0), 'nothing past the end');
  t.same(await readBytes(f, 3, 0), Buffer.alloc(0));
  t.ok(await rejectsWith(files.read(path.join(dir, 'missing'), 0, Buffer.alloc(1)), 'ENOENT'));
});

t.test('an empty Buffer creates an empty file', async (t) => {
  const f = path.join(tempDir(t), 'empty');
  await files.write(f, 0, Buffer.alloc(0), true);
  t.equal(fs.statSync(f).size, 0);
  t.same(await readBytes(f, 0, 1), Buffer.alloc(0));
});

t.test('large chunks, written concurrently at their offsets, and a view into a larger Buffer', async (t) => {
  const f = path.join(tempDir(t), 'big');
  const chunk = 3 * 1024 * 1024 + 17;
  const chunks = [1, 2, 3, 4].map((seed) => bytes(chunk, seed));
  await files.write(f, 0, Buffer.alloc(0), true);
  await Promise.all(chunks.map((c, i) => files.write(f, i * chunk, c, false)));
  await files.sync(f);
  const whole = Buffer.concat(chunks);
  t.ok(fs.readFileSync(f).equals(whole));
  t.ok((await readBytes(f, 0, whole.length)).equals(whole), 'one read of all of it');
  t.ok((await readBytes(f, chunk - 5, chunk)).equals(whole.subarray(chunk - 5, 2 * chunk - 5)));
  t.ok((await readBytes(f, whole.length - 10, 1000)).equals(whole.subarray(whole.length - 10)));

  // Into a view: its bytes only, the rest of the backing memory untouched.
  const backingRead = Buffer.alloc(chunk + 20, 0xee);
  t.equal(await files.read(f, 7, backingRead.subarray(10, 10 + chunk)), chunk);
  t.ok(backingRead.subarray(10, 10 + chunk).equals(whole.subarray(7, 7 + chunk)), 'read into the view');
  t.ok(backingRead.subarray(0, 10).equals(Buffer.alloc(10, 0xee)) && backingRead.subarray(10 + chunk).equals(Buffer.alloc(10, 0xee)), 'nothing outside it');

  // The bytes of the view, not those of the start of its ArrayBuffer.
  const g = path.join(path.dirname(f), 'view');
  const backing = bytes(1000, 9);
  await files.write(g, 0, backing.subarray(100, 110), true);
  t.same(fs.readFileSync(g), backing.subarray(100, 110));
});

t.test('sync and syncDir', async (t) => {
  const dir = tempDir(t);
  const f = path.join(dir, 'a');
  await files.write(f, 0, Buffer.from('data'), true);
  await files.sync(f);
  await files.syncDir(dir);
  t.ok(await rejectsWith(files.sync(path.join(dir, 'missing')), 'ENOENT'));
  t.ok(await rejectsWith(files.syncDir(path.join(dir, 'missing')), 'ENOENT'));
  t.ok(await rejectsWith(files.syncDir(f), 'ENOTDIR'));
});

t.test('createDir creates one level and accepts an existing directory', async (t) => {
  const dir = tempDir(t);
  const sub = path.join(dir, 'sub');
  await files.createDir(sub);
  await files.createDir(sub);
  t.ok(fs.statSync(sub).isDirectory());
  t.ok(await rejectsWith(files.createDir(path.join(dir, 'x', 'y')), 'ENOENT'), 'one level only');
  fs.writeFileSync(path.join(dir, 'file'), '');
  t.ok(await rejectsWith(files.createDir(path.join(dir, 'file')), 'EEXIST'), 'a file of that name is no directory');
});

t.test('rename moves files and directories; an empty directory is replaced, a non-empty one is not', async (t) => {
  const dir = tempDir(t);
  const a = path.join(dir, 'a');
  await files.write(a, 0, Buffer.from('A'), true);
  await files.rename(a, path.join(dir, 'b'));
  t.same(fs.readdirSync(dir), ['b']);
  t.ok(await rejectsWith(files.rename(a, path.join(dir, 'c')), 'ENOENT'));

  // A refill: a temporary directory renamed into place.
  const tmp = path.join(dir, '.tmp');
  await files.createDir(tmp);
  await files.write(path.join(tmp, 'x.0.blob'), 0, Buffer.from('X'), true);
  const target = path.join(dir, 'part');
  fs.mkdirSync(target);
  await files.rename(tmp, target);
  t.same(fs.readdirSync(target), ['x.0.blob']);
  t.notOk(fs.existsSync(tmp));

  await files.createDir(tmp);
  await files.write(path.join(tmp, 'y.0.blob'), 0, Buffer.from('Y'), true);
  t.ok(await rejectsWith(files.rename(tmp, target), ['ENOTEMPTY', 'EEXIST']));
  t.same(fs.readdirSync(target), ['x.0.blob'], 'the directory in place is untouched');

  // A file replaces a file.
  await files.rename(path.join(tmp, 'y.0.blob'), path.join(target, 'x.0.blob'));
  t.same(fs.readFileSync(path.join(target, 'x.0.blob')), Buffer.from('Y'));
  t.ok(await rejectsWith(files.rename(path.join(dir, 'b'), target), 'EISDIR'), 'a file does not replace a directory');
});

t.test('remove unlinks files only', async (t) => {
  const dir = tempDir(t);
  const f = path.join(dir, 'a');
  await files.write(f, 0, Buffer.from('A'), true);
  await files.remove(f);
  t.notOk(fs.existsSync(f));
  t.ok(await rejectsWith(files.remove(f), 'ENOENT'));
  fs.mkdirSync(path.join(dir, 'd'));
  t.ok(await rejectsWith(files.remove(path.join(dir, 'd')), 'EISDIR'));
});

t.test('list names the entries of a directory', async (t) => {
  const dir = tempDir(t);
  t.same(await files.list(dir), []);
  for (const name of ['a.0.blob', 'a.0.index', '.hidden']) await files.write(path.join(dir, name), 0, Buffer.from('x'), true);
  await files.createDir(path.join(dir, 'sub'));
  t.same((await files.list(dir)).sort(), ['.hidden', 'a.0.blob', 'a.0.index', 'sub']);
  t.ok(await rejectsWith(files.list(path.join(dir, 'missing')), 'ENOENT'));
  t.ok(await rejectsWith(files.list(path.join(dir, 'a.0.blob')), 'ENOTDIR'));
});

t.test('errors carry the code, errno and its name, and the path', async (t) => {
  const missing = path.join(tempDir(t), 'missing');
  const err = await files.read(missing, 0, Buffer.alloc(1)).then(
    () => null,
    (e: unknown) => e,
  );
  t.ok(isEngineError(err, EngineErrorCode.io));
  t.match(err, { errno: 2, syscallCode: 'ENOENT' });
  t.ok(err instanceof Error && err.message.includes(missing), err instanceof Error ? err.message : 'no error');
});

t.test('unusable arguments are refused before any work, as rejections', async (t) => {
  const f = path.join(tempDir(t), 'a');
  await files.write(f, 0, Buffer.from('A'), true);
  const any = (v: unknown) => v as never;
  const one = Buffer.alloc(1);
  await t.rejects(files.read(any(1), 0, one), TypeError);
  await t.rejects(files.read(`${f}\0.x`, 0, one), TypeError, 'a NUL would cut the path short');
  await t.rejects(files.read(f, any('0'), one), TypeError);
  await t.rejects(files.read(f, -1, one), RangeError);
  await t.rejects(files.read(f, 0.5, one), RangeError);
  await t.rejects(files.read(f, 2 ** 53, one), RangeError);
  await t.rejects(files.read(f, NaN, one), RangeError);
  await t.rejects(files.read(f, 0, any(1)), TypeError);
  await t.rejects(files.read(f, 0, any(new Uint16Array(2))), TypeError);
  await t.rejects(files.read(f, 0, any(undefined)), TypeError);

  await t.rejects(files.write(f, 0, any('text'), false), TypeError);
  await t.rejects(files.write(f, 0, any(new Uint16Array(2)), false), TypeError);
  await t.rejects(files.write(f, 0, Buffer.from('x'), any(1)), TypeError);
  await t.rejects(files.write(f, -5, Buffer.from('x'), false), RangeError);
  await t.rejects(files.write(any(null), 0, Buffer.from('x'), false), TypeError);

  await t.rejects(files.sync(any(undefined)), TypeError);
  await t.rejects(files.syncDir(any({})), TypeError);
  await t.rejects(files.createDir(any(5)), TypeError);
  await t.rejects(files.rename(f, any(undefined)), TypeError);
  await t.rejects(files.rename(any(undefined), f), TypeError);
  await t.rejects(files.remove(`${f}\0`), TypeError);
  await t.rejects(files.list(any([])), TypeError);
  t.same(fs.readFileSync(f), Buffer.from('A'), 'nothing was changed');
});
