// Operations in flight on something that stops and remounts (a vdisk),
// counted as they start and end, so that a stop or remount can wait for
// them to finish before it closes what they use.
export class InFlight {
  private count = 0;
  private drained: (() => void) | null = null;

  enter(): void {
    this.count++;
  }

  leave(): void {
    if (--this.count === 0 && this.drained) this.drained();
  }

  /** Resolves once no operation is in flight (at once when none is). */
  drain(): Promise<void> {
    if (this.count === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.drained = () => {
        this.drained = null;
        resolve();
      };
    });
  }
}
