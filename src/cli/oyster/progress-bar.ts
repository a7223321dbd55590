// A progress bar on standard error for long offline work, drawn only when
// standard error is a terminal (never into logs or pipes).

const WIDTH = 30;
const INTERVAL_MS = 200;

/** One line: label, bar, percentage and bytes. */
export function renderBar(label: string, done: number, total: number): string {
  const fraction = total > 0 ? Math.min(1, done / total) : 0;
  const filled = Math.round(fraction * WIDTH);
  return `${label} [${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${(fraction * 100).toFixed(0).padStart(3)}% ${formatBytes(done)}/${formatBytes(total)}`;
}

export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let u = 0;
  while (n >= 1024 && u < units.length - 1) {
    n /= 1024;
    u++;
  }
  return u === 0 ? `${n} B` : `${n.toFixed(1)} ${units[u]}`;
}

/** Redraws the bar from `poll` until the promise settles; resolves like it. */
export async function withProgress<T>(label: string, promise: Promise<T>, poll: () => { done: number; total: number }): Promise<T> {
  const stream = process.stderr;
  if (!stream.isTTY) return promise;
  const draw = () => {
    const { done, total } = poll();
    // A terminal that does not tell its width (0) gets 80 columns.
    stream.write(`\r${renderBar(label, done, total).slice(0, Math.max(20, (stream.columns || 80) - 1))}\x1b[K`);
  };
  draw();
  const timer = setInterval(draw, INTERVAL_MS);
  try {
    return await promise;
  } finally {
    clearInterval(timer);
    stream.write('\r\x1b[K');
  }
}
