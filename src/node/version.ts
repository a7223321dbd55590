// Version information for /version, --version and oyster_build_info.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '..', '..', '..');

export interface VersionInfo {
  version: string;
  /** When the native engine was built. */
  buildTime: string;
  engine: string;
  /** The source revision: REVISION beside package.json (the package writes it), else the checkout's commit, else "unknown". */
  revision: string;
}

let revision: string | undefined;

export function versionInfo(): VersionInfo {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };
  const addon = path.join(root, 'build', 'Release', 'oyster.node');
  const built = fs.existsSync(addon) ? fs.statSync(addon).mtime : new Date(0);
  revision ??= readRevision();
  return { version: pkg.version, buildTime: built.toISOString(), engine: `oyster-engine ${pkg.version} (format 1)`, revision };
}

function readRevision(): string {
  try {
    return fs.readFileSync(path.join(root, 'REVISION'), 'utf8').trim();
  } catch {
    // a checkout, not the package
  }
  // Only this checkout's own history: not that of a repository it was unpacked into.
  if (!fs.existsSync(path.join(root, '.git'))) return 'unknown';
  try {
    return execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 5000 }).trim();
  } catch {
    return 'unknown';
  }
}
