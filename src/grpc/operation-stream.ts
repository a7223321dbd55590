// OperationStream: the sending end of Replicas.Operations to one Oyster peer
// (oyster.proto). A gRPC call per operation costs both nodes a new HTTP/2
// stream, headers, metadata and deadline timers; here one long-lived stream
// carries every operation, and those sent within one turn of the event loop
// travel as one message. Results are matched to operations by id.
//
// An operation for a peer the link manager holds down fails at once.
// Bounded: at most `maxInFlight` operations and `maxBytes` of their values
// wait for a peer at once; beyond, an operation fails at once (the peer is
// slow or stopped, and the caller has other replicas or alien copies), it is
// never queued without bound. An operation unanswered after `timeoutMs`
// fails with Timeout (one sweep timer, not a timer per operation). A stream
// that fails fails the operations sent on it; the next operation opens a
// new one on the same channel, whose reconnects the channel's back-off paces.
import * as grpc from '@grpc/grpc-js';
import { errors, OysterError } from '../model/errors';
import { OperationBatchMsg, OperationMsg, ResultBatchMsg, ResultMsg } from './proto';
import { fromStatus } from './status';
import { operationWeight } from './operation-codec';

/**
 * A batch is cut once its operations weigh this many bytes, what they will
 * hold at the peer (operationWeight: values, an Exist's keys many times
 * over); an operation heavier than that goes alone.
 */
const BATCH_BYTES = 4 * 1024 * 1024;
/**
 * An operation with a value of this many bytes or more (a part of a large
 * value, 1 MiB) goes in a batch of its own: its frame on a link then fits
 * one of the link's kept buffers (FramePool, src/link/wire.ts). Parts
 * queued together went out as one frame of 2–4 MiB, each in a fresh
 * buffer: V8 collected the whole heap twice per 64 MiB forwarded.
 */
const LONE_VALUE = 64 * 1024;
/** Operations held back while a batch awaits its first results are sent anyway once this many wait… */
const HOLD_OPS = 256;
/** …or once they waited this long, ms (unless the options say otherwise). */
const HOLD_MS = 1;

/** A stream of batches to one peer and of its results back: a gRPC call of Replicas.Operations, or an operations link (src/link). */
export interface OperationsDuplex {
  /**
   * Sends `batch`; `written` is called once the stream needs its
   * operations' buffers no more (it serialized or copied them, or dropped
   * them with the stream). Until then a value's bytes must stay as they are:
   * a stream that cannot write yet may keep the batch as it is.
   */
  write(batch: OperationBatchMsg, written?: () => void): boolean;
  cancel(): void;
  on(event: 'data', listener: (batch: ResultBatchMsg) => void): unknown;
  on(event: 'error', listener: (err: grpc.ServiceError) => void): unknown;
  on(event: 'end' | 'drain', listener: () => void): unknown;
  once(event: 'drain', listener: () => void): unknown;
}

export interface OperationStreamOptions {
  peer: string;
  /** Opens a stream to the peer, with its credentials; `waitForReady`: a gRPC stream waits through a reconnect (the peer is known to be up). */
  open: (waitForReady: boolean) => OperationsDuplex;
  isAvailable: () => boolean;
  timeoutMs: number;
  maxInFlight: number;
  maxBytes: number;
  /** How long operations wait at most for a batch's first results (HOLD_MS). */
  holdMs?: number;
  /** An operation refused because too many wait for the peer. */
  onRefused?: () => void;
}

class Pending {
  /** The stream it was written to; null while queued. */
  stream: OperationsDuplex | null = null;
  /** The stream needs its value's buffer no more (OperationsDuplex.write's `written`). */
  written = false;

  constructor(
    readonly resolve: (r: ResultMsg) => void,
    readonly reject: (err: Error) => void,
    readonly started: number,
    readonly bytes: number,
    readonly weight: number,
    private released?: () => void,
  ) {}

  /** Nothing will read its value's buffer any more: the caller's `released`, once. */
  release(): void {
    const r = this.released;
    this.released = undefined;
    r?.();
  }
}

export class OperationStream {
  private stream: OperationsDuplex | null = null;
  private writable = true;
  private readonly pending = new Map<number, Pending>();
  private queue: OperationMsg[] = [];
  private bytes = 0;
  private lastId = 0;
  private scheduled = false;
  private holding: NodeJS.Timeout | null = null;
  /** A batch was written and no result came back since. */
  private awaitingReply = false;
  private queuedWeight = 0;
  private sweeper: NodeJS.Timeout | null = null;
  private closed = false;
  private _unsupported = false;

  constructor(private readonly o: OperationStreamOptions) {}

  /** The peer answered the stream UNIMPLEMENTED (a bob node): its operations failed with Unsupported. */
  get unsupported(): boolean {
    return this._unsupported;
  }

  /** Operations waiting for the peer. */
  get inFlight(): number {
    return this.pending.size;
  }

  /**
   * Sends `op` (newOperation's; its id is set here) with `bytes` of value;
   * resolves with its result, whatever its code. `released` is called once
   * nothing will read `op.value` any more — it was sent, answered, or
   * dropped with its stream — which may be after the operation settled: an
   * operation that fails while another of the caller's is still held
   * unsent by the stream (a peer that reads nothing) leaves that one's
   * buffer in use until it times out.
   */
  send(op: OperationMsg, bytes: number, released?: () => void): Promise<ResultMsg> {
    const refused = (err: Error) => {
      released?.();
      return Promise.reject(err);
    };
    if (this.closed) return refused(errors.failed(`the operation stream to ${this.o.peer} is closed`));
    // A peer the link manager found down (its pings fail: stopped, cut off)
    // is not waited for: the caller turns to alien copies and other replicas
    // at once, as bob's quorum does.
    if (!this.o.isAvailable()) return refused(errors.unavailable(`${this.o.peer} is not reachable`));
    if (this.pending.size > 0 && (this.pending.size >= this.o.maxInFlight || this.bytes + bytes > this.o.maxBytes)) {
      this.o.onRefused?.();
      return refused(
        errors.unavailable(`${this.o.peer}: ${this.pending.size} operations and ${this.bytes} bytes wait for it already`),
      );
    }
    const id = this.nextId();
    op.id = id;
    const weight = operationWeight(op);
    return new Promise<ResultMsg>((resolve, reject) => {
      this.pending.set(id, new Pending(resolve, reject, Date.now(), bytes, weight, released));
      this.bytes += bytes;
      this.queue.push(op);
      this.queuedWeight += weight;
      this.schedule();
      this.sweeper ??= setInterval(this.sweep, Math.min(1000, Math.max(50, this.o.timeoutMs / 4))).unref();
    });
  }

  /** Fails what waits, ends the stream. */
  close(): void {
    this.closed = true;
    const s = this.stream;
    this.stream = null;
    this.fail(null, errors.failed(`the operation stream to ${this.o.peer} was closed`));
    s?.cancel();
  }

  private nextId(): number {
    do this.lastId = this.lastId >= 0xfffffffe ? 1 : this.lastId + 1;
    while (this.pending.has(this.lastId));
    return this.lastId;
  }

  /**
   * Sends what is queued at the end of this turn of the event loop — unless
   * a batch sent earlier has had no result back yet: then the queue waits
   * for the first results (at most HOLD_MS, and no more than HOLD_OPS
   * operations or BATCH_BYTES of values), as Nagle's algorithm waits for an
   * acknowledgement. Under load the batches so grow
   * with the peer's round trip, and every batch's fixed cost (a message,
   * HTTP/2 frames, a write on each side) is shared by more operations; a
   * lone operation on an idle stream still leaves at once.
   */
  private schedule(): void {
    if (this.scheduled) return;
    if (this.awaitingReply && this.queue.length < HOLD_OPS && this.queuedWeight < BATCH_BYTES) {
      this.holding ??= setTimeout(this.flush, this.o.holdMs ?? HOLD_MS);
      return;
    }
    // A hold timer still set is cleared by the flush.
    this.scheduled = true;
    setImmediate(this.flush);
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    if (this.holding) {
      clearTimeout(this.holding);
      this.holding = null;
    }
    if (this.queue.length === 0 || !this.writable || this.closed) return;
    const stream = this.stream ?? this.openStream();
    while (this.queue.length > 0) {
      let weight = 0;
      let n = 0;
      for (; n < this.queue.length; n++) {
        const p = this.pending.get(this.queue[n].id);
        const w = p?.weight ?? 0;
        const lone = (this.queue[n].value?.length ?? 0) >= LONE_VALUE;
        if (n > 0 && (weight + w > BATCH_BYTES || lone)) break;
        weight += w;
        if (p) p.stream = stream;
        if (lone) {
          n++;
          break;
        }
      }
      const ops = this.queue.splice(0, n);
      this.queuedWeight -= weight;
      this.awaitingReply = true;
      const sent = ops.map((op) => this.pending.get(op.id));
      const written = () => {
        for (const p of sent) {
          if (!p) continue;
          p.written = true;
          p.release();
        }
      };
      if (!stream.write({ ops }, written)) {
        // The peer takes no more for now: the rest waits for it (bounded above).
        this.writable = false;
        stream.once('drain', () => {
          this.writable = true;
          this.flush();
        });
        return;
      }
    }
  };

  private openStream(): OperationsDuplex {
    const s = this.o.open(true);
    this.stream = s;
    this.writable = true;
    this._unsupported = false;
    s.on('data', (batch: ResultBatchMsg) => {
      this.awaitingReply = false;
      if (this.queue.length > 0) this.schedule();
      for (const r of batch.results) {
        const p = this.pending.get(r.id);
        if (!p) continue; // timed out meanwhile
        this.pending.delete(r.id);
        this.bytes -= p.bytes;
        // The peer has it all: sent.
        p.release();
        p.resolve(r);
      }
    });
    s.on('error', (err: grpc.ServiceError) => {
      this._unsupported = err.code === grpc.status.UNIMPLEMENTED;
      this.ended(s, fromStatus(err));
    });
    s.on('end', () => this.ended(s, errors.failed(`${this.o.peer} ended the operation stream`)));
    return s;
  }

  private ended(s: OperationsDuplex, err: OysterError): void {
    if (this.stream === s) {
      this.stream = null;
      this.writable = true;
      this.awaitingReply = false;
    }
    this.fail(s, err);
    // Operations queued behind the failed stream go on a new one.
    if (this.queue.length > 0) this.schedule();
  }

  /** Rejects the operations written to `s` (every one, for null). */
  private fail(s: OperationsDuplex | null, err: Error): void {
    for (const [id, p] of this.pending) {
      if (s !== null && p.stream !== s) continue;
      this.pending.delete(id);
      this.bytes -= p.bytes;
      // Its stream ended (close ends it right after), or it was never written.
      p.release();
      p.reject(err);
    }
    if (s === null) {
      this.queue = [];
      this.queuedWeight = 0;
    }
    this.stopSweeper();
  }

  /**
   * Times out what waited operation_timeout. A stream that has not even
   * taken such an operation's value from its buffer (a peer that reads
   * nothing holds back grpc-js's messages and a link's first batches) is
   * ended with it: the caller lets go of the buffer once the operation
   * failed — a part of a large value is a client's window, which then takes
   * the next bytes of the body — and the stream would send those instead.
   */
  private readonly sweep = (): void => {
    const late = Date.now() - this.o.timeoutMs;
    const stuck = new Set<OperationsDuplex>();
    for (const [id, p] of this.pending) {
      if (p.started > late) continue;
      this.pending.delete(id);
      this.bytes -= p.bytes;
      const queued = this.queue.findIndex((op) => op.id === id);
      if (queued >= 0) {
        this.queue.splice(queued, 1);
        this.queuedWeight -= p.weight;
      }
      if (p.stream !== null && !p.written) stuck.add(p.stream);
      // Queued, sent, or on a stream ended below.
      p.release();
      p.reject(new OysterError('Timeout', `Timeout ${this.o.peer} did not answer within ${this.o.timeoutMs} ms`));
    }
    // In the same turn as the rejections, before anything acts on them.
    for (const s of stuck) {
      s.cancel();
      this.ended(s, errors.failed(`${this.o.peer} took no batch on the operation stream within ${this.o.timeoutMs} ms`));
    }
    this.stopSweeper();
  };

  private stopSweeper(): void {
    if (this.pending.size === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
  }
}
