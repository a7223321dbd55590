// Backoff: runs an attempt again later, waiting twice as long after each
// failure up to a limit — how a disk out of service is retried.
export class Backoff {
  private timer: NodeJS.Timeout | null = null;
  private attempts = 0;

  constructor(
    private readonly initialMs: number,
    private readonly maxMs: number,
    /** The attempt; it schedules the next one itself when it fails. */
    private readonly attempt: () => void,
  ) {}

  /** Schedules the next attempt (once: a pending one stays); returns its delay, or null if one was pending. */
  schedule(): number | null {
    if (this.timer) return null;
    const delay = Math.min(this.maxMs, this.initialMs * 2 ** this.attempts++);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.attempt();
    }, delay);
    this.timer.unref();
    return delay;
  }

  /** Cancels a pending attempt. */
  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** After a success: the next failure starts again from the initial delay. */
  reset(): void {
    this.attempts = 0;
  }
}
