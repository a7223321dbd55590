// Small helpers shared by the benchmarks.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Runs fn(i) for i in [0, total) with at most `concurrency` calls in flight; returns seconds taken. */
export async function runWindow(total: number, concurrency: number, fn: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const start = process.hrtime.bigint();
  const worker = async () => {
    while (next < total) await fn(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
  return Number(process.hrtime.bigint() - start) / 1e9;
}

export function arg(name: string, fallback: number): number {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  return a ? Number(a.slice(name.length + 3)) : fallback;
}

export function benchDir(name: string): string {
  const base = process.env.OYSTER_BENCH_DIR ?? os.tmpdir();
  return fs.mkdtempSync(path.join(base, `oyster-bench-${name}-`));
}


export function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

export function machine(): string {
  const cpus = os.cpus();
  return `${cpus.length} × ${cpus[0]?.model ?? 'unknown CPU'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB RAM, Node ${process.version}, ${os.type()} ${os.release()}`;
}

export const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** Prints a table and also returns it as markdown. */
export function table(rows: Array<Record<string, string>>): string {
  const cols = Object.keys(rows[0]);
  const lines = [
    `| ${cols.join(' | ')} |`,
    `|${cols.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${cols.map((c) => r[c]).join(' | ')} |`),
  ];
  return lines.join('\n');
}
