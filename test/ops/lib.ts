// Shared by the operations tests (metrics, TLS, logs): scraping a node,
// promtool, JSON log lines, and running oysterd processes whose teardown
// stops them.
import { spawnSync } from 'node:child_process';
import type { Test } from 'tap';
import { ClusterFiles, OysterProcess, startNode, StartOptions } from '../helpers/oysterd';
import { sample } from '../rest/lib/metrics';

export { sample };

/** GET a Prometheus exposition; throws unless 200 text/plain. */
export async function scrape(url: string): Promise<string> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  if (res.status !== 200 || !/^text\/plain/.test(res.headers.get('content-type') ?? '')) {
    throw new Error(`GET ${url}: ${res.status} ${res.headers.get('content-type')} ${text.slice(0, 200)}`);
  }
  return text;
}

/** Whether the exposition has a sample line of `name` with these labels. */
export function has(exposition: string, name: string, labels: Record<string, string> = {}): boolean {
  return exposition.split('\n').some((line) => {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) return false;
    return Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`));
  });
}

/**
 * `promtool check metrics` over an exposition (Debian's prometheus package;
 * .ci/run installs it). Skips with a message when promtool is missing.
 */
export function promtoolCheck(t: Test, exposition: string, what: string): void {
  const r = spawnSync('promtool', ['check', 'metrics'], { input: exposition, encoding: 'utf8', timeout: 30_000 });
  if ((r.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') {
    t.pass(`SKIP promtool check metrics (${what}): promtool is not installed (apt-get install prometheus)`);
    return;
  }
  t.equal(r.status, 0, `promtool check metrics accepts ${what}${r.status === 0 ? '' : `:\n${r.stdout}${r.stderr}`}`);
  t.equal(`${r.stdout}${r.stderr}`.trim(), '', `promtool has no lint remarks on ${what}`);
}

export interface LogLine {
  level: Level;
  time: string;
  node: string;
  msg: string;
  [field: string]: unknown;
}

/** The levels a line may carry, by name, least severe first. */
export const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
export type Level = (typeof LEVELS)[number];
export const LEVEL = Object.fromEntries(LEVELS.map((l) => [l, l])) as { [L in Level]: L };

/** Whether a line's level is below another's. */
export const below = (level: Level, than: Level): boolean => LEVELS.indexOf(level) < LEVELS.indexOf(than);

/** Every line the process printed, parsed; a line that is not a JSON object is reported as such. */
export function logLines(proc: OysterProcess): Array<LogLine | { notJson: string }> {
  return proc.output
    .filter((l) => l.trim() !== '')
    .map((l) => {
      try {
        const v = JSON.parse(l) as unknown;
        return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as LogLine) : { notJson: l };
      } catch {
        return { notJson: l };
      }
    });
}

/** The parsed log lines of a process (throws if one is not JSON). */
export function logs(proc: OysterProcess): LogLine[] {
  return logLines(proc).map((l) => {
    if ('notJson' in l) throw new Error(`${proc.name} printed a line that is not JSON: ${l.notJson}`);
    return l;
  });
}

/** Starts a node of a written cluster; teardown stops it (SIGKILL after 10 s) unless the test did. */
export async function runNode(t: Test, files: ClusterFiles, name: string, extra: Partial<StartOptions> = {}): Promise<OysterProcess> {
  const proc = await startNode(files, name, extra);
  let done = false;
  void proc.exited.then(() => (done = true));
  const killOnExit = () => proc.child.kill('SIGKILL');
  process.once('exit', killOnExit);
  t.teardown(async () => {
    process.off('exit', killOnExit);
    if (done) return;
    const timer = setTimeout(() => proc.child.kill('SIGKILL'), 10_000);
    await proc.stop();
    clearTimeout(timer);
  });
  return proc;
}

/** SIGTERM and wait; a clean stop exits 0. */
export async function stopNode(proc: OysterProcess): Promise<number | string> {
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), 10_000);
  const code = await proc.stop();
  clearTimeout(timer);
  return code;
}
