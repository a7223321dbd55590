// Temporary directories for tests, removed when the test ends.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

interface Teardown {
  teardown(fn: () => void | Promise<void>): void;
}

export function tempDir(t: Teardown, prefix = 'oyster-test-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}
