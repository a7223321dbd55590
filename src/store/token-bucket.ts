// TokenBucket paces background work that shares a resource with requests
// (anti-entropy's copies, compaction's and scrub's disk I/O).
/** At most `rate` units per second, in bursts of up to one second's worth. */
export class TokenBucket {
  private tokens: number;
  private last = Date.now();

  constructor(private readonly rate: number) {
    this.tokens = rate;
  }

  async take(n: number): Promise<void> {
    for (;;) {
      const now = Date.now();
      this.tokens = Math.min(this.rate, this.tokens + ((now - this.last) / 1000) * this.rate);
      this.last = now;
      if (this.tokens >= n || this.tokens >= this.rate) {
        this.tokens -= n;
        return;
      }
      await new Promise((r) => setTimeout(r, Math.ceil(((n - this.tokens) / this.rate) * 1000)));
    }
  }
}
