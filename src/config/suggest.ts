// "Did you mean …?" for an unknown key: the known keys a typo is closest to.
// A key already set is not a candidate: the typo did not mean it.

/** The candidates `key` is most likely a misspelling of (none when nothing is close). */
export function closest(key: string, candidates: Iterable<string>): string[] {
  const k = key.toLowerCase();
  let best = Infinity;
  let found: string[] = [];
  for (const c of candidates) {
    const d = likeness(k, c.toLowerCase());
    if (d === null || d > best) continue;
    if (d < best) found = [];
    best = d;
    found.push(c);
  }
  return found.slice(0, 3);
}

/** How far apart two keys are, or null when they are not alike at all. */
function likeness(a: string, b: string): number | null {
  if (a === b) return 0;
  // The same words in another order: rest_read for read_rest.
  if (a.split('_').sort().join('_') === b.split('_').sort().join('_')) return 1;
  const d = distance(a, b);
  if (d <= Math.max(1, Math.floor(Math.max(a.length, b.length) / 4))) return d;
  // A word short or a word too many: prometheus for prometheus_addr.
  if (b.startsWith(`${a}_`) || a.startsWith(`${b}_`)) return 3;
  return null;
}

/** Edit distance with adjacent transpositions (optimal string alignment). */
function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}
