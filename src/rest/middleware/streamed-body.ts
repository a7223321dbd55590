// A request body of known length handed to storage as it arrives
// (IncomingValue): the node holds at most two windows of it — the one being
// written and the one filling meanwhile — and takes them from the body
// budget, whatever the size of the value. Storage that cannot take a value
// in pieces (it goes to other nodes) asks for it whole, which is read as any
// body is, within http_body_memory_limit.
//
// Each piece Node hands over is copied into the window at once and let go.
// Node gives every piece a fresh buffer; pieces kept until their window was
// written outlived V8's young-generation collections, and only collections
// of the whole heap freed them: under 64 uploads of 1 MiB, 79 of those in
// 8 s against 3 with the copy. Full windows go back to the budget for the
// next values.
import type { Context } from 'koa';
import { IncomingValue } from '../../model/value';
import { BodyBudget, VALUE_BUFFER } from '../body-budget';
import { HttpError } from '../status-ext';
import { busy, discardRest, Held, incomplete, readBody } from './body';

/**
 * The request's value: a body of known length of STREAM_FROM bytes or more
 * comes as a StreamedBody, to be written as it arrives (or read whole where
 * it must be); a smaller or chunked one is read whole now. A body announced
 * larger than `limit` is refused with 413 either way.
 */
export function requestValue(ctx: Context, limit: number, budget: BodyBudget): Promise<Buffer | IncomingValue> {
  const declared = ctx.request.length;
  // A chunked body is held whole: no larger than the memory for bodies.
  if (declared === undefined) return readBody(ctx, Math.min(limit, budget.limit), budget);
  if (declared < STREAM_FROM) return readBody(ctx, limit, budget);
  if (declared > limit) {
    discardRest(ctx, declared);
    return Promise.reject(new HttpError(413, `request body of ${declared} bytes exceeds the limit of ${limit} bytes`));
  }
  return Promise.resolve(new StreamedBody(ctx, declared, limit, budget));
}

/**
 * Bodies from this size on are written as they arrive; smaller ones are held
 * whole (within the budget from SMALL_BODY on). Measured with wrk, 64
 * connections: a stream costs less CPU than joining the body and writing it
 * whole from 256 KiB on (256 KiB: 420–470 µs against 730–780 µs per POST;
 * 1 MiB: 1.6–1.8 ms against 2.8–3.2 ms), about the same at 64 KiB.
 */
export const STREAM_FROM = 128 * 1024;

/** The bytes a body collects before it pauses until they are asked for: one of the budget's buffers. */
export const WINDOW = VALUE_BUFFER;

export class StreamedBody implements IncomingValue {
  // The window filling and its bytes; the one next() handed out last (being
  // written until next() is called again); the rest of a piece that found
  // the window full while the one handed out was still being written.
  private window: Buffer | null = null;
  private filled = 0;
  private handedOut: Buffer | null = null;
  private carry: Buffer | null = null;
  // Bytes received, and bytes given a window so far.
  private received = 0;
  private windowed = 0;
  private failure: Error | null = null;
  private wake: (() => void) | null = null;
  private started = false;

  constructor(
    private readonly ctx: Context,
    readonly size: number,
    private readonly limit: number,
    private readonly budget: BodyBudget,
  ) {}

  whole(): Promise<Buffer> {
    if (this.started) return Promise.reject(new Error('the body is already being read in pieces'));
    if (this.size > this.budget.limit) {
      this.ctx.set('Connection', 'close'); // the body stays unread
      return Promise.reject(
        new HttpError(413, `a value of ${this.size} bytes would be held whole in memory to go to other nodes; the most is http_body_memory_limit (${this.budget.limit} bytes)`),
      );
    }
    this.started = true;
    return readBody(this.ctx, this.limit, this.budget);
  }

  async next(): Promise<Buffer[] | null> {
    if (!this.started) await this.start();
    // The caller is done with the window handed out before.
    if (this.handedOut !== null) this.budget.keep(this.handedOut);
    this.handedOut = null;
    for (;;) {
      // A window at a time (the last one the rest of the body): one write each, not one per socket read.
      if (this.window !== null && this.filled === this.window.length) {
        const out = this.window;
        this.handedOut = out;
        this.window = null;
        this.filled = 0;
        const carry = this.carry;
        this.carry = null;
        if (carry !== null) this.take(carry);
        if (this.carry === null && this.ctx.req.isPaused()) this.ctx.req.resume();
        return [out];
      }
      if (this.windowed === this.size && this.window === null) return null;
      if (this.failure) throw this.failure;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  cancel(): void {
    this.ctx.set('Connection', 'close'); // the rest stays unread
    this.ctx.req.removeAllListeners('data');
    // Not kept for other bodies: a write of the window handed out may still be under way.
    this.window = null;
    this.handedOut = null;
    this.carry = null;
  }

  // Copies a piece into windows; what finds the window full and the other
  // one still being written waits, with the request paused, for next().
  private take(piece: Buffer): void {
    for (let at = 0; at < piece.length; ) {
      if (this.window === null) this.window = this.newWindow();
      if (this.filled === this.window.length) {
        this.carry = piece.subarray(at);
        this.ctx.req.pause();
        return;
      }
      const n = piece.copy(this.window, this.filled, at);
      this.filled += n;
      at += n;
    }
  }

  // The next window: WINDOW bytes, or the rest of the body if less.
  private newWindow(): Buffer {
    const n = Math.min(WINDOW, this.size - this.windowed);
    this.windowed += n;
    return n === WINDOW ? this.budget.buffer() : Buffer.allocUnsafeSlow(n);
  }

  private async start(): Promise<void> {
    this.started = true;
    // Two windows at most (one being written, one filling), never more than the body.
    if (!(await new Held(this.ctx, this.budget).take(Math.min(2 * WINDOW, this.size)))) throw busy(this.ctx, this.budget);
    const req = this.ctx.req;
    if (req.destroyed) throw incomplete();
    const woken = () => {
      const w = this.wake;
      this.wake = null;
      w?.();
    };
    req.on('data', (chunk: Buffer) => {
      this.received += chunk.length;
      this.take(chunk);
      // next() waits for a full window, not for every piece.
      if (this.window !== null && this.filled === this.window.length) woken();
    });
    req.on('end', woken);
    req.on('error', () => {
      this.failure ??= incomplete();
      woken();
    });
    req.on('close', () => {
      if (this.received < this.size) this.failure ??= incomplete();
      woken();
    });
  }
}
