// Reading values out of a Prometheus text exposition.

/** Labels of one sample line `name{a="x",b="y"} value`. */
function parseLabels(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) out[m[1]] = m[2];
  return out;
}

/** Sum of the samples of `name` whose labels include `labels` (0 when none). */
export function sample(exposition: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of exposition.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^(\w+)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = parseLabels(m[2] ?? '');
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

/** Bytes the node at `url` holds of http_body_memory_limit now (oyster_rest_body_bytes). */
export async function bodyBytes(url: string): Promise<number> {
  return sample(await (await fetch(`${url}/metrics`)).text(), 'oyster_rest_body_bytes');
}

/** Bytes peers' batches hold at the node at `url` now, of their own http_body_memory_limit (oyster_peer_batch_bytes). */
export async function batchBytes(url: string): Promise<number> {
  return sample(await (await fetch(`${url}/metrics`)).text(), 'oyster_peer_batch_bytes');
}
