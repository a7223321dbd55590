// LinkStream: the sending end of an operations link to one peer, as an
// OperationStream uses a gRPC stream of Replicas.Operations (write, 'data',
// 'error', 'end', 'drain', cancel). It connects to the peer's gRPC port and
// greets it; batches written before the peer answered wait and go once it
// did. A peer that does not speak links (a bob node, an Oyster node from
// before them) or refuses one (it serves gRPC with TLS only, or does not
// take these credentials) gets the same batches over the gRPC stream
// `fallback` opens, and this stream passes that one's events on: nothing
// written is lost either way.
//
// A peer that cannot be reached (no connection, or no answer to the
// greeting within `greetingMs`: a stopped process) fails this stream with
// UNAVAILABLE, as a gRPC stream to it would fail.
import net from 'node:net';
import { EventEmitter } from 'node:events';
import * as grpc from '@grpc/grpc-js';
import { decodeResultBatch, encodeAroundValue, encodeOperationBatch } from '../grpc/operation-codec';
import { OperationsDuplex } from '../grpc/operation-stream';
import { OperationBatchMsg, OperationMsg } from '../grpc/proto';
import { parseHostPort } from '../config/address';
import { BATCH, decodeStatus, encodeHello, FramePool, FrameReader, KEEPALIVE_MS, parseWelcome, STATUS, writeFrame } from './wire';

/** A frame from a peer at most: results carry values, bounded by the peer's own limits. */
const MAX_FRAME = 2 ** 31 - 2;
/** The buffer a link's bytes are read into. */
const READ_BUFFER = 64 * 1024;

export interface LinkStreamOptions {
  /** The peer's gRPC address, host:port. */
  address: string;
  /** What a gRPC call to the peer carries as `authorization` ("" for nothing). */
  authorization: string;
  greetingMs: number;
  /** Opens the gRPC stream the batches go on when the peer does not speak links. */
  fallback: () => OperationsDuplex;
  /** Called once: the link is open, the peer takes none (the batches went over gRPC), or it could not be reached. */
  onOutcome: (outcome: LinkOutcome) => void;
}

export type LinkOutcome = 'linked' | 'refused' | 'unreachable';

type Failure = Error & { code: number; details: string };

function failure(code: number, details: string): Failure {
  return Object.assign(new Error(`${grpc.status[code]}: ${details}`), { code, details });
}

export class LinkStream extends EventEmitter implements OperationsDuplex {
  private readonly socket: net.Socket;
  /** Batches written before the peer answered the greeting, kept as they are. */
  private held: Array<{ batch: OperationBatchMsg; written?: () => void }> | null = [];
  private seen: Buffer | null = null;
  private delegate: OperationsDuplex | null = null;
  private over = false;
  private readonly timer: NodeJS.Timeout;
  private connected = false;
  /** Buffers for the frames of batches, given back once written. */
  private readonly sent = new FramePool();
  /** Where the bytes read go: the greeting, then the frames. */
  private onBytes: (into: Buffer, n: number) => void;
  /** The frames' reader, once the greeting is in. */
  private reader: FrameReader | null = null;

  constructor(private readonly o: LinkStreamOptions) {
    super();
    this.onBytes = this.onGreeting;
    const spare = Buffer.allocUnsafe(READ_BUFFER);
    // cluster.yaml's address, which the configuration checked with the same parser.
    // Bytes are read into one buffer, over and over, and the rest of a large
    // frame straight into the frame's buffer (FrameReader.target): results
    // carry values, and a fresh 64 KiB per read (Node's default) would have
    // V8 collect its whole heap every few tens of MiB received.
    this.socket = net.connect({
      ...parseHostPort(o.address),
      noDelay: true,
      onread: {
        buffer: () => this.reader?.target(spare) ?? spare,
        callback: (n, into) => {
          this.onBytes(into as Buffer, n);
          return true;
        },
      },
    });
    this.socket.setKeepAlive(true, KEEPALIVE_MS);
    this.socket.write(encodeHello(o.authorization));
    this.timer = setTimeout(
      () => this.fail(failure(grpc.status.UNAVAILABLE, `${o.address} did not answer a link's greeting within ${o.greetingMs} ms`)),
      o.greetingMs,
    );
    this.socket.on('connect', () => (this.connected = true));
    this.socket.on('error', (err) => {
      // A peer that took the connection and dropped it at the greeting is one
      // that speaks no links (an HTTP/2 server hanging up on a bad preface).
      if (this.held !== null && this.connected) this.fallBack();
      else this.fail(failure(grpc.status.UNAVAILABLE, `${o.address}: ${err.message}`));
    });
    this.socket.on('close', () => {
      if (this.held !== null) this.fallBack();
      else if (this.delegate === null) this.finish('end');
    });
  }

  write(batch: OperationBatchMsg, written?: () => void): boolean {
    if (this.delegate !== null) return this.delegate.write(batch, written);
    if (this.held !== null) {
      this.held.push({ batch, written });
      return true;
    }
    if (this.over) {
      written?.();
      return true;
    }
    const op = batch.ops.length === 1 ? batch.ops[0] : null;
    if (op?.value !== undefined && op.value.length >= FramePool.SMALL_FRAME) {
      // A part of a large value, alone in its batch (OperationStream): sent
      // from the caller's buffer, which stays as it is until `written`.
      const [before, after] = encodeAroundValue(op as OperationMsg & { value: Buffer });
      return writeFrame(this.socket, BATCH, [before, op.value, after], written);
    }
    // Encoded now: the frame holds a copy of the values.
    const payload = encodeOperationBatch(batch, (bytes) => this.sent.take(bytes));
    written?.();
    return writeFrame(this.socket, BATCH, payload, () => this.sent.give(payload));
  }

  cancel(): void {
    this.over = true;
    clearTimeout(this.timer);
    this.socket.destroy();
    this.delegate?.cancel();
  }

  private readonly onGreeting = (into: Buffer, n: number): void => {
    // A copy: the chunk is the read buffer, read into again.
    const chunk = into.subarray(0, n);
    this.seen = this.seen === null ? Buffer.from(chunk) : Buffer.concat([this.seen, chunk]);
    const welcome = parseWelcome(this.seen);
    if (welcome === 'short') return;
    clearTimeout(this.timer);
    // Anything but the magic (an HTTP/2 server's SETTINGS) is no link; an
    // Oyster node that refused one (it serves gRPC with TLS only, or not these
    // credentials) answers the same batches over gRPC as it would without
    // links, its refusal, if it is one, coming as gRPC's.
    if ('error' in welcome || welcome.value.code !== 0) return this.fallBack();
    const held = this.held ?? [];
    this.held = null;
    this.o.onOutcome('linked');
    const reader = (this.reader = new FrameReader(
      MAX_FRAME,
      (type, payload) => {
        if (type === BATCH) this.emit('data', decodeResultBatch(payload));
        else if (type === STATUS) {
          const s = decodeStatus(payload);
          this.fail(failure(s.code, s.details));
        } else throw new Error(`a frame of type ${type}`);
      },
      true,
    ));
    const frames = (read: () => void) => {
      try {
        read();
      } catch (err) {
        this.fail(failure(grpc.status.INTERNAL, `${this.o.address} sent ${(err as Error).message}`));
      }
    };
    this.onBytes = (into, n) => frames(() => reader.took(into, n));
    this.socket.on('drain', () => this.emit('drain'));
    const rest = this.seen.subarray(welcome.used);
    this.seen = null;
    for (const b of held) this.write(b.batch, b.written);
    if (rest.length > 0) frames(() => reader.push(rest));
  };

  private fallBack(): void {
    if (this.over || this.delegate !== null) return;
    clearTimeout(this.timer);
    this.socket.destroy();
    this.o.onOutcome('refused');
    const held = this.held ?? [];
    this.held = null;
    const d = this.o.fallback();
    this.delegate = d;
    d.on('data', (b) => this.emit('data', b));
    d.on('error', (err) => this.finish('error', err));
    d.on('end', () => this.finish('end'));
    d.on('drain', () => this.emit('drain'));
    for (const b of held) d.write(b.batch, b.written);
  }

  private fail(err: Failure): void {
    if (this.delegate !== null || this.over) return;
    if (this.held !== null) this.o.onOutcome('unreachable');
    this.held = null;
    this.socket.destroy();
    this.finish('error', err);
  }

  private finish(event: 'error' | 'end', err?: unknown): void {
    if (this.over) return;
    this.over = true;
    clearTimeout(this.timer);
    if (event === 'error') this.emit('error', err);
    else this.emit('end');
  }
}

/** A stream that fails with UNAVAILABLE as soon as it is listened to: for a peer not tried again yet. */
export function unreachable(details: string): OperationsDuplex {
  const s = new (class extends EventEmitter implements OperationsDuplex {
    write(): boolean {
      return true;
    }
    cancel(): void {}
  })();
  setImmediate(() => s.emit('error', failure(grpc.status.UNAVAILABLE, details)));
  return s;
}
