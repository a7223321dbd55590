// Version information for /version and --version.
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '..', '..', '..');

export interface VersionInfo {
  version: string;
  /** When the native engine was built. */
  buildTime: string;
  engine: string;
}

export function versionInfo(): VersionInfo {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };
  const addon = path.join(root, 'build', 'Release', 'oyster.node');
  const built = fs.existsSync(addon) ? fs.statSync(addon).mtime : new Date(0);
  return { version: pkg.version, buildTime: built.toISOString(), engine: `oyster-engine ${pkg.version} (format 1)` };
}
