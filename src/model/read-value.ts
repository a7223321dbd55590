// ReadValue: a value in storage (an OpenedValue: this node's, or a peer's)
// read again as an IncomingValue, so that it is written elsewhere as it is
// read, whatever its size — by read repair and by anti-entropy — in the same
// way a client's body is written as it arrives.
import { errors } from './errors';
import { ValueRoom } from './pushed-value';
import { IncomingValue, OpenedValue } from './value';

/** Bytes read at a time. */
export const READ_PART = 1024 * 1024;

/**
 * Runs `write` with `opened` read again as a ReadValue, the memory of its
 * two parts taken from `room` for as long as it runs, as a client's windows
 * are: rejects with Unavailable (`room.refusal`), nothing written, when they
 * found no room in time.
 */
export async function copyWithin<T>(room: ValueRoom, opened: OpenedValue, write: (value: ReadValue) => Promise<T>): Promise<T> {
  const bytes = 2 * Math.min(READ_PART, opened.size);
  if (!(await room.take(bytes))) throw errors.unavailable(room.refusal);
  try {
    return await write(new ReadValue(opened));
  } finally {
    room.give(bytes);
  }
}

/**
 * A stored value read again as an IncomingValue, READ_PART bytes at a time
 * into two buffers of its own: a part is read when asked for, once at most
 * one other is out and not yet written. Each part is checked as the reader
 * checks it (a value without block checksums by the read of its last part).
 */
export class ReadValue implements IncomingValue {
  readonly size: number;
  private at = 0;
  private handed = 0;
  private released = 0;
  private readonly buffers: Buffer[] = [];
  private wake: (() => void) | null = null;
  private cancelled = false;

  constructor(private readonly opened: OpenedValue) {
    this.size = opened.size;
  }

  whole(): Promise<Buffer> {
    return Promise.reject(errors.unavailable(`a value of ${this.size} bytes is copied in parts, not held whole`));
  }

  async next(): Promise<Buffer[] | null> {
    while (!this.cancelled && this.handed - this.released >= 2) await new Promise<void>((resolve) => (this.wake = resolve));
    if (this.cancelled) throw new Error('the copy was cancelled');
    if (this.at >= this.size) return null;
    const piece = (this.buffers[this.handed % 2] ??= Buffer.allocUnsafe(Math.min(READ_PART, this.size))).subarray(0, Math.min(READ_PART, this.size - this.at));
    await this.opened.reader.read(this.at, piece);
    this.at += piece.length;
    this.handed++;
    return [piece];
  }

  written(): void {
    this.released++;
    this.woken();
  }

  cancel(): void {
    this.cancelled = true;
    this.woken();
  }

  private woken(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }
}
