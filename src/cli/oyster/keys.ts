// Keys on the command line, as bob's bobc takes them and more: every REST
// key form (decimal, 0x hex, GUID, {GUID}), ranges of decimal keys `a-b`,
// comma lists mixing both, and file paths with a `{key}` placeholder.
import fs from 'node:fs';
import path from 'node:path';
import { KeyError, parseRestKey } from '../../keys/key';
import { UsageError } from './exit-codes';

/** A key as written (its REST path form) and its bytes for gRPC. */
export interface Key {
  text: string;
  bytes: Buffer;
}

// A range never looks like a GUID: those have five hyphenated groups.
const RANGE = /^(\d+)-(\d+)$/;
/** Ranges beyond this many keys are almost certainly a typo. */
const MAX_KEYS = 10_000_000;

function parseKey(text: string, keySize: number): Key {
  try {
    return { text, bytes: parseRestKey(text, keySize) };
  } catch (err) {
    if (err instanceof KeyError) throw new UsageError(`key ${JSON.stringify(text)}: ${err.message}`);
    throw err;
  }
}

/** Expands `1,5-8,0x0a,{guid}` into keys, in the order written. */
export function expandKeys(expression: string, keySize: number): Key[] {
  const keys: Key[] = [];
  for (const item of expression.split(',').map((s) => s.trim())) {
    if (item === '') throw new UsageError(`empty key in ${JSON.stringify(expression)}`);
    const range = RANGE.exec(item);
    if (!range) {
      keys.push(parseKey(item, keySize));
      continue;
    }
    const [from, to] = [BigInt(range[1]), BigInt(range[2])];
    if (from > to) throw new UsageError(`key range ${item}: the first key is greater than the last`);
    if (to - from >= BigInt(MAX_KEYS - keys.length)) throw new UsageError(`key range ${item}: more than ${MAX_KEYS} keys`);
    for (let k = from; k <= to; k++) keys.push(parseKey(k.toString(), keySize));
  }
  return keys;
}

/** The path for one key: `{key}` replaced by the key as written. */
export function keyPath(pattern: string, key: Key): string {
  return pattern.replace('{key}', key.text);
}

export function hasPlaceholder(pattern: string): boolean {
  return pattern.includes('{key}');
}

/**
 * The keys of the files matching a pattern such as `out/{key}.bin` (bobc's
 * put without -k): every file in the pattern's directory whose name fits.
 */
export function keysFromFiles(pattern: string, keySize: number): Key[] {
  const dir = path.dirname(pattern);
  const base = path.basename(pattern);
  if (!hasPlaceholder(base)) throw new UsageError(`--file ${pattern}: the {key} placeholder must be in the file name`);
  const [before, after] = [base.slice(0, base.indexOf('{key}')), base.slice(base.indexOf('{key}') + 5)];
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch (err) {
    throw new UsageError(`--file ${pattern}: cannot list ${dir}: ${(err as Error).message}`);
  }
  const keys: Key[] = [];
  for (const name of names.sort()) {
    if (name.length <= before.length + after.length || !name.startsWith(before) || !name.endsWith(after)) continue;
    // Other files that happen to fit the pattern are not keys: left alone.
    const text = name.slice(before.length, name.length - after.length);
    try {
      keys.push({ text, bytes: parseRestKey(text, keySize) });
    } catch (err) {
      if (!(err instanceof KeyError)) throw err;
    }
  }
  return keys;
}
