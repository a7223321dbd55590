// A request body of known length handed to storage as it arrives
// (IncomingValue): the node holds at most WINDOWS windows of it — the one
// being written, and those behind it, full and queued or filling — and takes
// them from the body budget, whatever the size of the value. Storage that
// cannot take a value in pieces (it goes to other nodes) asks for it whole,
// which is read as any body is, within http_body_memory_limit.
//
// On a plain connection the body is read from the socket straight into the
// window (../http/socket-body.ts), past Node's HTTP parser; over TLS, each
// piece Node hands over is copied into the window at once and let go (Node
// gives every piece a fresh buffer; pieces kept until their window was
// written outlived V8's young-generation collections, and only collections
// of the whole heap freed them: under 64 uploads of 1 MiB, 79 of those in
// 8 s against 3 with the copy). The windows' buffers come from the budget
// and go back to it for the next values.
import type { Context } from 'koa';
import { IncomingValue } from '../../model/value';
import { BodyBudget, VALUE_BUFFER } from '../body-budget';
import { SocketBody } from '../http/socket-body';
import { HttpError } from '../status-ext';
import { busy, discardRest, Held, incomplete, readBody } from './body';
import { askForBody } from './expect-continue';

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

/**
 * The windows a body fills ahead of the storage writing them. The event
 * loop learns that a window was written only between its turns of reading
 * the socket, 1–2 ms late under a 64 MiB upload, in which time the socket
 * fills two or three more: with two windows, reading stopped for half of
 * them and the upload ran 0.90× as fast (docs/BENCHMARKS.md); three did as
 * well as four and eight, four leave room for a faster client.
 */
export const WINDOWS = 4;

export class StreamedBody implements IncomingValue {
  // Window k of the body is bytes [k × WINDOW, (k + 1) × WINDOW) of it, in
  // buffer k % WINDOWS. Windows before `filling` are full; `filled` bytes of
  // that one arrived. Those before `handed` were handed out by next(), and
  // those before `released` said written (written()): window k can fill once
  // window k − WINDOWS, in the same buffer, was released.
  private buffers: Buffer[] = [];
  private filling = 0;
  private filled = 0;
  private handed = 0;
  private released = 0;
  // The rest of a piece from Node that found no window to fill.
  private carry: Buffer | null = null;
  private socketBody: SocketBody | null = null;
  private received = 0;
  private failure: Error | null = null;
  private wake: (() => void) | null = null;
  private started = false;
  private readonly windows: number;

  constructor(
    private readonly ctx: Context,
    readonly size: number,
    private readonly limit: number,
    private readonly budget: BodyBudget,
  ) {
    this.windows = Math.ceil(size / WINDOW);
  }

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
    for (;;) {
      // A window at a time (the last one the rest of the body): one write each, not one per read.
      if (this.handed < this.filling) return [this.window(this.handed++)];
      if (this.handed === this.windows) return null;
      if (this.failure) throw this.failure;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  written(): void {
    if (this.released === this.handed) return;
    this.released++;
    if (this.released < this.windows) {
      // Its buffer may fill again.
      this.readOn();
      return;
    }
    for (const b of this.buffers) this.budget.keep(b);
    this.buffers = [];
  }

  cancel(): void {
    // Not kept for other bodies: writes of the windows handed out may still be under way.
    this.buffers = [];
    this.ctx.set('Connection', 'close'); // the rest stays unread
    this.socketBody?.stop();
    this.ctx.req.removeAllListeners('data');
    this.carry = null;
  }

  private window(k: number): Buffer {
    return this.buffers[k % WINDOWS].subarray(0, Math.min(WINDOW, this.size - k * WINDOW));
  }

  // Whether the window filling has a buffer free for it.
  private get canFill(): boolean {
    return this.filling < this.windows && this.filling - WINDOWS < this.released;
  }

  // Counts `n` bytes arrived into the window filling; true while it, or the
  // next one, can take more.
  private arrived(n: number): boolean {
    this.received += n;
    this.filled += n;
    if (this.filled === this.window(this.filling).length) {
      this.filling++;
      this.filled = 0;
      this.woken();
    }
    return this.canFill;
  }

  // Copies a piece from Node into windows; what finds no window to fill
  // waits, with the request paused, for next().
  private take(piece: Buffer): void {
    for (let at = 0; at < piece.length; ) {
      if (!this.canFill) {
        this.carry = piece.subarray(at);
        this.ctx.req.pause();
        return;
      }
      const n = piece.copy(this.window(this.filling), this.filled, at);
      at += n;
      this.arrived(n);
    }
  }

  // A window was released: reading goes on where it waited for one.
  private readOn(): void {
    if (!this.canFill) return;
    if (this.socketBody !== null) {
      this.socketBody.resume();
      return;
    }
    const carry = this.carry;
    this.carry = null;
    if (carry !== null) this.take(carry);
    if (this.carry === null && this.ctx.req.isPaused()) this.ctx.req.resume();
  }

  private woken(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  private fail(err: Error): void {
    this.failure ??= err;
    this.woken();
  }

  private async start(): Promise<void> {
    this.started = true;
    // WINDOWS windows at most, never more than the body.
    const windows = Math.min(WINDOWS, this.windows);
    if (!(await new Held(this.ctx, this.budget).take(Math.min(windows * WINDOW, this.size)))) throw busy(this.ctx, this.budget);
    const req = this.ctx.req;
    if (req.destroyed) throw incomplete();
    askForBody(req, this.ctx.res);
    this.buffers = Array.from({ length: windows }, () => this.budget.buffer());
    const socketBody = SocketBody.take(req);
    if (socketBody !== null) {
      // What Node's parser read before the connection was taken, then the rest from the socket.
      for (let piece: Buffer | null; (piece = req.read() as Buffer | null) !== null; ) this.take(piece);
      if (this.carry === null) {
        this.socketBody = socketBody;
        socketBody.read(this.size - this.received, {
          target: () => (this.filling < this.windows ? this.window(this.filling).subarray(this.filled) : this.buffers[0]),
          arrived: (n) => this.arrived(n),
          failed: () => this.fail(incomplete()),
        });
        return;
      }
      // More than WINDOWS windows were buffered (never seen): read as over TLS.
      socketBody.release();
    }
    req.on('data', (chunk: Buffer) => this.take(chunk));
    req.on('end', () => this.woken());
    req.on('error', () => this.fail(incomplete()));
    req.on('close', () => {
      if (this.received < this.size) this.fail(incomplete());
      this.woken();
    });
  }
}
