// Finding the partition directories under a path given to `oyster blob`:
// every directory holding engine files (docs/FORMAT.md §2), at any depth, so
// that a disk, a vdisk or a single partition can be named alike. A file
// stands for itself (a blob, or a kept copy of one).
import fs from 'node:fs';
import path from 'node:path';
import { Failure } from './exit-codes';

export interface Target {
  /** The partition directory. */
  dir: string;
  /** Its path relative to the path given ('' for the path itself). */
  relative: string;
  /** For a file given by name: that file only. */
  only?: string;
}

const ENGINE_FILE = /^[^./]+\.(0|[1-9][0-9]{0,18})\.(blob|index|index\.tmp|blob\.new|index\.new)$/;
// Quarantined blobs are reported with their partition, never walked into.
const QUARANTINE = 'corrupted';

export async function findTargets(given: string): Promise<Target[]> {
  let st: fs.Stats;
  try {
    st = await fs.promises.stat(given);
  } catch (err) {
    throw new Failure(`${given}: ${(err as Error).message}`);
  }
  if (!st.isDirectory()) return [{ dir: path.dirname(given), relative: '', only: path.basename(given) }];
  const targets: Target[] = [];
  const walk = async (dir: string): Promise<void> => {
    let entries: fs.Dirent[];
    try {
      entries = await fs.promises.readdir(dir, { withFileTypes: true });
    } catch (err) {
      throw new Failure(`${dir}: ${(err as Error).message}`);
    }
    if (entries.some((e) => e.isFile() && ENGINE_FILE.test(e.name))) targets.push({ dir, relative: path.relative(given, dir) });
    const subdirs = entries.filter((e) => e.isDirectory() && e.name !== QUARANTINE).map((e) => e.name).sort();
    for (const name of subdirs) await walk(path.join(dir, name));
  };
  await walk(given);
  if (targets.length === 0) throw new Failure(`${given}: no partition directory (no .blob or .index files) found`);
  return targets;
}
