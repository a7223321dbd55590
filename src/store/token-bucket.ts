// TokenBucket paces background work that shares a resource with requests
// (anti-entropy's copies, compaction's and scrub's disk I/O).
/**
 * What compaction and scrub pay of their I/O budget for a record they pass
 * over without reading it (dropped, superseded), in bytes: no I/O, but a
 * lookup across the vdisk, so that a blob of garbage is paced too (as a step
 * counts it: RecordWalker::kSkippedCost in native/engine/record_walker.h).
 */
export const PASSED_RECORD_COST = 512;

/**
 * At most `rate` units per second, in bursts of up to `burst` units (one
 * second's worth unless given). A take of more than `burst` waits for a full
 * bucket and leaves it in debt, so the rate holds for large takes too.
 */
export class TokenBucket {
  private tokens: number;
  private last = Date.now();

  constructor(
    private readonly rate: number,
    private readonly burst = rate,
  ) {
    this.tokens = burst;
  }

  async take(n: number): Promise<void> {
    for (;;) {
      const now = Date.now();
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.rate);
      this.last = now;
      const needed = Math.min(n, this.burst);
      if (this.tokens >= needed) {
        this.tokens -= n;
        return;
      }
      await new Promise((r) => setTimeout(r, Math.ceil(((needed - this.tokens) / this.rate) * 1000)));
    }
  }
}
