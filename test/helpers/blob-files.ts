// Reads the engine's files the way an operator's tools would, to damage them
// on purpose: record offsets follow docs/FORMAT.md.
import fs from 'node:fs';
import path from 'node:path';
import { engineInfo } from '../../src/store/engine';
import { Version } from '../../src/model/version';

export interface RecordLocation {
  offset: number;
  headerSize: number;
  valueSize: number;
  version: Version;
  tombstone: boolean;
  key: Buffer;
}

/** The blob format a blob file's header states (1 or 2). */
export function blobFormatOf(blobPath: string): number {
  const fd = fs.openSync(blobPath, 'r');
  try {
    const b = Buffer.alloc(12);
    fs.readSync(fd, b, 0, 12, 0);
    return b.readUInt32LE(8);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Walks a blob file record by record (stops at the first malformed header).
 * Format 2 records have a 44 + K byte header with the stamp at 24; format 1
 * (the previous engine's) 36 + K bytes without a stamp.
 */
export function recordsIn(blobPath: string, keySize: number): RecordLocation[] {
  const data = fs.readFileSync(blobPath);
  const format = data.readUInt32LE(8);
  const fixed = format === 1 ? 36 : engineInfo.format.recordFixedSize;
  const keyAt = fixed - 8;
  const headerSize = fixed + keySize;
  const out: RecordLocation[] = [];
  let off = engineInfo.format.blobHeaderSize;
  while (off + headerSize <= data.length && data.readUInt32LE(off) === 0x4352594f) {
    const valueSize = data.readUInt32LE(off + keyAt - 4);
    const stamp = format === 1 ? 0n : data.readBigUInt64LE(off + 24);
    out.push({
      offset: off,
      headerSize,
      valueSize,
      version: {
        timestamp: Number(data.readBigUInt64LE(off + 16)),
        tick: Number(stamp >> 12n),
        node: Number(stamp & 0xfffn),
      },
      tombstone: (data[off + 4] & 1) === 1,
      key: Buffer.from(data.subarray(off + keyAt, off + keyAt + keySize)),
    });
    // A value with block checksums (flag 0x04) is followed by a CRC per 64 KiB (docs/FORMAT.md §3.2).
    const blocks = (data[off + 4] & 4) === 4 ? 4 * Math.ceil(valueSize / 65536) : 0;
    off += headerSize + valueSize + blocks;
  }
  return out;
}

export function blobFiles(dir: string, prefix = 'oyster'): string[] {
  return fs
    .readdirSync(dir)
    .filter((n) => n.startsWith(prefix + '.') && n.endsWith('.blob'))
    .sort((a, b) => Number(a.split('.')[1]) - Number(b.split('.')[1]))
    .map((n) => path.join(dir, n));
}

export function indexFiles(dir: string): string[] {
  return fs
    .readdirSync(dir)
    .filter((n) => n.endsWith('.index'))
    .map((n) => path.join(dir, n));
}

/**
 * A partition written by the previous engine (blob format 1, a version-1
 * index, an active blob without index): test/fixtures/format-1/README.md.
 */
export const FORMAT1_FIXTURE = path.resolve(__dirname, '..', '..', '..', 'test', 'fixtures', 'format-1', 'partition');

/** Copies the regular files of a partition directory: a crash image while the engine keeps running. */
export function copyPartition(from: string, to: string): void {
  fs.mkdirSync(to, { recursive: true });
  for (const name of fs.readdirSync(from)) {
    const src = path.join(from, name);
    if (fs.statSync(src).isFile()) fs.copyFileSync(src, path.join(to, name));
  }
}

export function flipByte(file: string, offset: number): void {
  const fd = fs.openSync(file, 'r+');
  try {
    const b = Buffer.alloc(1);
    fs.readSync(fd, b, 0, 1, offset);
    b[0] ^= 0x5a;
    fs.writeSync(fd, b, 0, 1, offset);
  } finally {
    fs.closeSync(fd);
  }
}
