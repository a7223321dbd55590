// The space of the file systems holding some directories, each file system
// counted once however many of the directories it holds.
import fs from 'node:fs';

export interface Space {
  total: number;
  /** What an unprivileged user may still use (statfs f_bavail). */
  free: number;
  /** Taken by anything, the blocks reserved for root included. */
  used: number;
}

export async function spaceOf(dirs: readonly string[]): Promise<Space> {
  const seen = new Set<number>();
  const space: Space = { total: 0, free: 0, used: 0 };
  for (const dir of dirs) {
    const st = await fs.promises.stat(dir).catch(() => null);
    if (!st || seen.has(st.dev)) continue;
    const s = await fs.promises.statfs(dir).catch(() => null);
    if (!s) continue;
    seen.add(st.dev);
    space.total += s.blocks * s.bsize;
    space.free += s.bavail * s.bsize;
    space.used += (s.blocks - s.bfree) * s.bsize;
  }
  return space;
}
