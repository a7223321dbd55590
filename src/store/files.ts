// Whole-file operations for code outside the engine that copies blob and
// index files itself (anti-entropy refilling an empty disk with a peer's
// closed partitions). The addon owns all blob and index file I/O: the work
// runs on the engine threads, which are sized for disks, not on libuv's
// small pool, which Node's fs shares with DNS lookups and zlib.
// Each call opens the file anew: chunks are large, so no handles are kept.
// Reads and writes go around the page cache where the file system allows
// it and the range is aligned (native/util/uncached_io.h): a disk's worth
// of copied files must not push the records the node serves out of memory.
//
// Failures reject with an EngineError (./engine): `code` OYSTER_IO_ERROR with
// `errno` and `syscallCode` ('ENOENT', 'EEXIST', ...) for the system's
// errors; bad arguments reject with a TypeError or RangeError.
import { native } from './native';

export const files = {
  /**
   * Reads the file's bytes at `offset` into `target` (all of it, fewer only
   * at the end of the file) and returns how many. The caller owns the
   * memory: it may place the bytes after a header it writes itself, and
   * must not touch `target` until this settles.
   */
  async read(path: string, offset: number, target: Buffer): Promise<number> {
    return native.files.read(path, offset, target);
  },

  /**
   * Writes all of `data` at `offset`. With `create` the file must not exist
   * yet (EEXIST otherwise); without it, it must (ENOENT otherwise). `data`
   * is written from where it lies, so it must not change until this settles.
   * A failed write may have written part of `data`, and a failed create may
   * leave the file behind.
   */
  async write(path: string, offset: number, data: Buffer, create: boolean): Promise<void> {
    return native.files.write(path, offset, data, create);
  },

  /** Makes the file's data durable (fdatasync). */
  async sync(path: string): Promise<void> {
    return native.files.sync(path);
  },

  /** Makes the directory's entries (files created, renamed, removed in it) durable. */
  async syncDir(dir: string): Promise<void> {
    return native.files.syncDir(dir);
  },

  /** Creates one directory level; fine if it already exists as a directory. */
  async createDir(dir: string): Promise<void> {
    return native.files.createDir(dir);
  },

  /**
   * rename(2): atomically replaces `to` if it is a file (and `from` is one)
   * or an empty directory (and `from` is one); fails with ENOTEMPTY or EEXIST
   * if `to` is a directory with entries, EISDIR or ENOTDIR if the kinds
   * differ, EXDEV across file systems. syncDir of both parents makes it durable.
   */
  async rename(from: string, to: string): Promise<void> {
    return native.files.rename(from, to);
  },

  /** Removes a file (unlink(2): not a directory). */
  async remove(path: string): Promise<void> {
    return native.files.remove(path);
  },

  /** The names of the directory's entries, without '.' and '..', in no particular order. */
  async list(dir: string): Promise<string[]> {
    return native.files.list(dir);
  },
};
