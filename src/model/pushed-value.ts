// PushedValue: an IncomingValue whose pieces are handed to it as they come,
// rather than read from a socket: the parts of a value another node streams
// to this one (src/grpc/put-parts.ts), or one target's share of a value the
// coordinator receives from a client (src/cluster/value-tee.ts). Whoever
// pushes a lot learns when the consumer wrote it (its `written` callback),
// and pushes no more than the consumer's pace allows: memory is the
// pusher's to bound.
import { errors } from './errors';
import { IncomingValue } from './value';

/** What a value read whole holds its room in: the node's memory for values in flight (src/rest/body-budget.ts). */
export interface ValueRoom {
  readonly limit: number;
  /** What a value refused for want of room is told. */
  readonly refusal: string;
  /** Takes `bytes` once they fit, within a wait; false when they did not in time. */
  take(bytes: number): Promise<boolean>;
  give(bytes: number): void;
}

/**
 * Takes room in `room` for a value of `size` bytes to be held whole, to be
 * given back by the caller; rejects with Unavailable when it is larger than
 * the room's limit or found no room in time.
 */
export async function takeWhole(room: ValueRoom, size: number): Promise<void> {
  if (size > room.limit || !(await room.take(size))) throw errors.unavailable(`no room in http_body_memory_limit for a value of ${size} bytes`);
}

interface Lot {
  pieces: Buffer[];
  written: () => void;
}

export class PushedValue implements IncomingValue {
  // Pushed and not handed out yet, oldest first; then handed out and not written.
  private readonly lots: Lot[] = [];
  private readonly handed: Lot[] = [];
  private pushed = 0;
  private failure: Error | null = null;
  private wake: (() => void) | null = null;
  private started = false;
  private _cancelled = false;
  // Room whole() holds in the budget.
  private held = 0;

  /**
   * `budget`: what whole() holds the value within. `onCancel`: the
   * consumer wants no more (cancel()).
   */
  constructor(
    readonly size: number,
    private readonly budget: ValueRoom,
    private readonly onCancel: () => void = () => undefined,
  ) {}

  /** Bytes pushed so far. */
  get received(): number {
    return this.pushed;
  }

  /** The consumer called cancel(): nothing pushed from now on is wanted. */
  get cancelled(): boolean {
    return this._cancelled;
  }

  /**
   * Hands over the value's next bytes; `written` is called once the
   * consumer wrote them (never, if it cancels or the value fails first).
   * The pusher keeps within the value's size (checked: an Error otherwise).
   */
  push(pieces: Buffer[], written: () => void): void {
    let n = 0;
    for (const p of pieces) n += p.length;
    if (this.pushed + n > this.size) throw new Error(`${this.pushed + n} bytes pushed of a value of ${this.size}`);
    this.pushed += n;
    if (this._cancelled || this.failure !== null) return;
    this.lots.push({ pieces, written });
    this.woken();
  }

  /** The value will not arrive whole: the consumer's next() rejects with `err` (when it has taken what was pushed). */
  fail(err: Error): void {
    this.failure ??= err;
    this.woken();
  }

  next(): Promise<Buffer[] | null> {
    this.started = true;
    return this.take();
  }

  private async take(): Promise<Buffer[] | null> {
    for (;;) {
      const lot = this.lots.shift();
      if (lot !== undefined) {
        this.handed.push(lot);
        return lot.pieces;
      }
      if (this.failure !== null) throw this.failure;
      if (this.pushed === this.size) return null;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  written(): void {
    this.handed.shift()?.written();
  }

  cancel(): void {
    if (this._cancelled) return;
    this._cancelled = true;
    this.lots.length = 0;
    this.handed.length = 0;
    this.onCancel();
  }

  /**
   * The whole value, gathered as it comes, its room held in `budget` until
   * release(); rejects when the value is larger than the budget or finds no
   * room within its wait.
   */
  async whole(): Promise<Buffer> {
    if (this.started) throw new Error('the value is already being read in pieces');
    this.started = true;
    if (this.size > this.budget.limit) {
      this.cancel();
      throw errors.unavailable(`a value of ${this.size} bytes cannot be held whole here; the most is http_body_memory_limit (${this.budget.limit} bytes)`);
    }
    if (!(await this.budget.take(this.size))) {
      this.cancel();
      throw errors.unavailable(this.budget.refusal);
    }
    this.held = this.size;
    try {
      const value = Buffer.allocUnsafe(this.size);
      let at = 0;
      for (let pieces = await this.take(); pieces !== null; pieces = await this.take()) {
        for (const p of pieces) at += p.copy(value, at);
        this.written();
      }
      return value;
    } catch (err) {
      this.cancel();
      throw err;
    }
  }

  /** Gives back the room whole() holds, once what it returned is let go of. */
  release(): void {
    this.budget.give(this.held);
    this.held = 0;
  }

  private woken(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }
}
