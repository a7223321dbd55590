// The node's small state files kept as JSON (a disk's identity, the node's
// record of its disks, where a disk's scrub stands): read whole, and
// replaced atomically and durably, so that a crash leaves the old file or
// the new one, never a torn one.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { files } from './files';

/** The JSON in `file`: undefined when there is no such file, null when it is not JSON. */
export async function readJson(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await fs.promises.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

/** Replaces `file` with `text`: a new file beside it, synced, renamed over it, the directory synced. */
export async function writeAtomically(file: string, text: string): Promise<void> {
  const tmp = `${file}.${process.pid}.${crypto.randomBytes(4).toString('hex')}.tmp`;
  try {
    await files.write(tmp, 0, Buffer.from(text), true);
    await files.sync(tmp);
    await files.rename(tmp, file);
  } catch (err) {
    await files.remove(tmp).catch(() => undefined);
    throw err;
  }
  await files.syncDir(path.dirname(file));
}
