// A latency histogram of bounded size: log-linear buckets over microseconds,
// 64 per power of two (about 1.5% resolution), so that a long benchmark
// keeps percentiles without keeping every sample.

const SUB = 64;
const SUB_BITS = 6;

export class LatencyHistogram {
  private counts: number[] = [];
  count = 0;
  maxUs = 0;
  private sumUs = 0;

  record(ms: number): void {
    const us = Math.max(0, Math.round(ms * 1000));
    const i = bucketOf(us);
    while (this.counts.length <= i) this.counts.push(0);
    this.counts[i]++;
    this.count++;
    this.sumUs += us;
    if (us > this.maxUs) this.maxUs = us;
  }

  /** The latency (ms) below which a fraction q of the samples fall; 0 without samples. */
  percentile(q: number): number {
    if (this.count === 0) return 0;
    const rank = Math.max(1, Math.ceil(q * this.count));
    let seen = 0;
    for (let i = 0; i < this.counts.length; i++) {
      seen += this.counts[i];
      if (seen >= rank) return Math.min(upperOf(i), this.maxUs) / 1000;
    }
    return this.maxUs / 1000;
  }

  get maxMs(): number {
    return this.maxUs / 1000;
  }

  get meanMs(): number {
    return this.count === 0 ? 0 : this.sumUs / this.count / 1000;
  }
}

function bucketOf(us: number): number {
  if (us < SUB) return us;
  const e = Math.floor(Math.log2(us));
  const sub = Math.floor(us / 2 ** (e - SUB_BITS)) - SUB;
  return SUB + (e - SUB_BITS) * SUB + sub;
}

// The largest value that falls into bucket i.
function upperOf(i: number): number {
  if (i < SUB) return i;
  const e = Math.floor((i - SUB) / SUB) + SUB_BITS;
  const sub = (i - SUB) % SUB;
  return (SUB + sub + 1) * 2 ** (e - SUB_BITS) - 1;
}
