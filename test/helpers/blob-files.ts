// Reads the engine's files the way an operator's tools would, to damage them
// on purpose: record offsets follow docs/FORMAT.md.
import fs from 'node:fs';
import path from 'node:path';
import { engineInfo } from '../../src/engine/engine';

export interface RecordLocation {
  offset: number;
  headerSize: number;
  valueSize: number;
  timestamp: number;
  key: Buffer;
}

/** Walks a blob file record by record (stops at the first malformed header). */
export function recordsIn(blobPath: string, keySize: number): RecordLocation[] {
  const data = fs.readFileSync(blobPath);
  const headerSize = engineInfo.format.recordFixedSize + keySize;
  const out: RecordLocation[] = [];
  let off = engineInfo.format.blobHeaderSize;
  while (off + headerSize <= data.length && data.readUInt32LE(off) === 0x4352594f) {
    const valueSize = data.readUInt32LE(off + 24);
    out.push({
      offset: off,
      headerSize,
      valueSize,
      timestamp: Number(data.readBigUInt64LE(off + 16)),
      key: Buffer.from(data.subarray(off + 28, off + 28 + keySize)),
    });
    off += headerSize + valueSize;
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
