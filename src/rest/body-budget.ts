// BodyBudget bounds the memory values in flight take over REST and gRPC,
// across connections (node.yaml http_body_memory_limit): a body of
// SMALL_BODY bytes or more held whole holds its bytes, one written as it
// arrives its windows (middleware/streamed-body.ts), a large value being
// sent its buffer (http/opened-value.ts), a gRPC request message its length
// (../grpc/receive-budget.ts; an Exist 32 times it), a value read whole for
// a gRPC answer, a peer's part or a read repair its length
// (../grpc/answer-budget.ts), a bob peer's answer of a large value its
// length (../grpc/bob-answer.ts) — from the first byte until the response is
// done.
// What does not fit waits, in order of arrival, and is refused with 503 and
// Retry-After if it still does not fit after MAX_WAIT_MS, unread. Nothing
// larger than the budget is ever held whole (StreamedBody.whole refuses it),
// so the budget is the bound. Smaller bodies are not counted: they are
// bounded by http_max_connections, and they keep the node usable while
// large uploads wait. Windows and parts pass through buffers of
// VALUE_BUFFER bytes (an answer sent from a file, through smaller ones),
// which the budget keeps for the next values once they are free, up to its
// limit: a fresh 1 MiB buffer per value costs page faults and garbage
// collections.

/** Bodies below this many bytes take no budget. */
export const SMALL_BODY = 64 * 1024;
/** How long a body waits for room before it is refused. */
export const MAX_WAIT_MS = 5000;
/** The size of a streamed body's windows and of a large answer's parts. */
export const VALUE_BUFFER = 1024 * 1024;

/** One that holds rooms and may wait for more (../grpc/message-rooms.ts). */
export interface Holder {
  /** What it holds that waits with it: given back only once its wait ended. */
  parked(): number;
}

export class BodyBudget {
  private used = 0;
  private readonly waiting: Array<{ bytes: number; holder: Holder | null; admit: () => void }> = [];
  // Kept buffers by size, of the sizes buffer() was asked for.
  private readonly spare = new Map<number, Buffer[]>();
  private spareBytes = 0;

  constructor(
    readonly limit: number,
    private readonly onChange: (inUse: number) => void = () => undefined,
    private readonly onRefused: () => void = () => undefined,
  ) {}

  /** Bytes of bodies held now. */
  get inUse(): number {
    return this.used;
  }

  /** What a value refused for want of room is told (REST answers, gRPC messages and answers). */
  get refusal(): string {
    return `the node holds ${this.used} bytes of values in flight (http_body_memory_limit ${this.limit}); retry later`;
  }

  /** Takes `bytes` now if they fit (or nothing else is held) and nobody waits; false otherwise (nothing taken). */
  takeNow(bytes: number): boolean {
    if (this.waiting.length > 0 || !this.fits(bytes, 0)) return false;
    this.used += bytes;
    this.onChange(this.used);
    return true;
  }

  /**
   * Takes `bytes`, waiting up to `waitMs` behind earlier waiters; resolves
   * false if there is no room by then (nothing taken).
   */
  take(bytes: number, waitMs = MAX_WAIT_MS): Promise<boolean> {
    if (this.takeNow(bytes)) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        leave();
        this.onRefused();
      }, waitMs);
      const leave = this.queue(bytes, null, (ok) => {
        clearTimeout(timer);
        resolve(ok);
      });
    });
  }

  /**
   * Takes `bytes` for `holder`, waiting behind earlier waiters for as long as
   * it takes; resolves false (nothing taken) once `cancel` aborts first.
   * What the holders of waiters hold parked (held, and going nowhere until
   * their wait ends) does not count against waiters: a waiter is let in
   * once what the others hold and it fits (or they hold nothing), however
   * much is parked. Two holders each waiting for room the other holds
   * would otherwise wait for ever; so the budget may hold up to the limit
   * more than it, parked.
   *
   * `park` is called the moment the room is taken, before the next waiter
   * is looked at, and must count it in what `holder` holds (its parked(),
   * should it wait again): a room taken and counted nowhere until the
   * promise settles would keep the next waiter out, and nothing would look
   * at that waiter again once it was counted.
   */
  takeEventually(bytes: number, holder: Holder, cancel: AbortSignal, park: () => void): Promise<boolean> {
    if (cancel.aborted) return Promise.resolve(false);
    if (this.takeNow(bytes)) {
      park();
      return Promise.resolve(true);
    }
    return new Promise<boolean>((resolve) => {
      const leave = this.queue(bytes, holder, (ok) => {
        cancel.removeEventListener('abort', leave);
        if (ok) park();
        resolve(ok);
      });
      cancel.addEventListener('abort', leave);
      this.admitWaiting();
    });
  }

  /** Queues a waiter for `bytes`, told true once admitted; returns what takes it out of the queue, telling it false. */
  private queue(bytes: number, holder: Holder | null, settle: (ok: boolean) => void): () => void {
    const entry = { bytes, holder, admit: () => settle(true) };
    this.waiting.push(entry);
    return () => {
      const at = this.waiting.indexOf(entry);
      if (at < 0) return;
      this.waiting.splice(at, 1);
      this.admitWaiting();
      settle(false);
    };
  }

  /** Gives back bytes taken. */
  give(bytes: number): void {
    this.used -= bytes;
    this.admitWaiting();
    this.onChange(this.used);
  }

  /** A buffer of `size` bytes: one kept, or a new one. */
  buffer(size = VALUE_BUFFER): Buffer {
    let kept = this.spare.get(size);
    if (kept === undefined) this.spare.set(size, (kept = []));
    const b = kept.pop();
    if (b === undefined) return Buffer.allocUnsafeSlow(size);
    this.spareBytes -= size;
    return b;
  }

  /**
   * Keeps a buffer nobody uses any more for the next values, if buffer()
   * hands out buffers of its size and the kept ones stay within the limit
   * (others are left to the collector).
   */
  keep(b: Buffer): void {
    const kept = this.spare.get(b.length);
    if (kept === undefined || this.spareBytes + b.length > this.limit) return;
    kept.push(b);
    this.spareBytes += b.length;
  }

  private fits(bytes: number, parked: number): boolean {
    const held = this.used - parked;
    return held <= 0 || held + bytes <= this.limit;
  }

  // What the waiters' holders hold parked, each holder once.
  private parked(): number {
    let sum = 0;
    const seen = new Set<Holder>();
    for (const w of this.waiting) {
      if (w.holder === null || seen.has(w.holder)) continue;
      seen.add(w.holder);
      sum += w.holder.parked();
    }
    return sum;
  }

  private admitWaiting(): void {
    while (this.waiting.length > 0 && this.fits(this.waiting[0].bytes, this.waiting[0].holder === null ? 0 : this.parked())) {
      const next = this.waiting.shift()!;
      this.used += next.bytes;
      this.onChange(this.used);
      next.admit();
    }
  }
}
