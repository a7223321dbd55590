// The node's gRPC port, served by a listener of our own: each connection's
// first bytes say what it is. An operations link's greeting (./wire.ts) goes
// to the Operations endpoint over plain TCP; anything else — HTTP/2's
// preface, a TLS ClientHello — is handed whole to grpc-js, which serves
// BobApi and Replicas on it as if it had accepted it itself. Bob clients and
// bob peers see an ordinary gRPC server.
//
// Links are plaintext, so a node whose gRPC is TLS refuses them: its peers
// reach it over gRPC with TLS only.
import net from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { EventEmitter } from 'node:events';
import { Logger } from '../logging/logger';
import { authorizeCall, failureStatus } from '../grpc/server';
import { encodeResultBatch } from '../grpc/operation-codec';
import { OperationsCall } from '../grpc/operations-service';
import { ResultBatchMsg, ResultMsg } from '../grpc/proto';
import { Authenticator } from '../auth/authenticator';
import { ArrivalDeadline } from '../grpc/arrival-deadline';
import { MessageRooms } from '../grpc/message-rooms';
import { BodyBudget } from '../rest/body-budget';
import { parseHostPort } from '../config/address';
import { BATCH, encodeStatus, encodeWelcome, FramePool, FrameReader, KEEPALIVE_MS, parseHello, STATUS, writeFrame } from './wire';

/** How long a new connection may take to say what it is. */
const GREETING_MS = 10_000;

export interface ServingPortOptions {
  /** host:port to listen on, as gRPC's bind address ("[::1]:20000", "0.0.0.0:20000"). */
  address: string;
  grpc: grpc.Server;
  /** TLS for gRPC; null: plaintext, and links are accepted. */
  credentials: grpc.ServerCredentials | null;
  auth: Authenticator;
  log: Logger;
  /** Largest batch a peer may send on a link (as gRPC's largest message). */
  maxMessageBytes: number;
  /** Connections open at once (grpc_max_connections); more are closed as they arrive. */
  maxConnections: number;
  /** What a link's batches are let in within (../grpc/message-rooms.ts). */
  budget: BodyBudget;
  /** How long a batch let in may take to arrive, of the link being read (http_request_timeout, ../grpc/arrival-deadline.ts). */
  receiveTimeoutMs: number;
  /** Serves an accepted link as it serves an Operations stream, its batches let in by `rooms`. */
  serve: (call: OperationsCall, rooms: MessageRooms) => void;
  /** A link was accepted (true) or refused (false). */
  onLink?: (accepted: boolean) => void;
}

export class ServingPort {
  private readonly listener: net.Server;
  private readonly links = new Set<net.Socket>();
  private readonly injector: ReturnType<grpc.Server['createConnectionInjector']>;

  private constructor(private readonly o: ServingPortOptions) {
    this.injector = o.grpc.createConnectionInjector(o.credentials ?? grpc.ServerCredentials.createInsecure());
    this.listener = net.createServer({ noDelay: true }, (socket) => this.accept(socket));
    this.listener.maxConnections = o.maxConnections;
  }

  /** Listens on the address; resolves once it does. */
  static async start(o: ServingPortOptions): Promise<ServingPort> {
    const p = new ServingPort(o);
    await new Promise<void>((resolve, reject) => {
      p.listener.once('error', reject);
      p.listener.listen(parseHostPort(o.address), () => {
        p.listener.off('error', reject);
        resolve();
      });
    });
    return p;
  }

  /** The port listened on (the one asked for, or the one given for port 0). */
  get port(): number {
    return (this.listener.address() as net.AddressInfo).port;
  }

  /** Stops accepting connections; links already open stay until their streams end (or `destroyLinks`). */
  close(): void {
    this.listener.close();
  }

  destroyLinks(): void {
    for (const s of this.links) s.destroy();
  }

  private accept(socket: net.Socket): void {
    socket.on('error', () => undefined);
    // A peer whose host vanished without closing leaves no socket behind.
    socket.setKeepAlive(true, KEEPALIVE_MS);
    const timer = setTimeout(() => socket.destroy(), GREETING_MS).unref();
    let seen: Buffer | null = null;
    const onData = (chunk: Buffer) => {
      seen = seen === null ? chunk : Buffer.concat([seen, chunk]);
      if (seen[0] !== 0x00) {
        // gRPC: grpc-js reads the connection from its first byte on.
        clearTimeout(timer);
        socket.off('data', onData);
        socket.pause();
        socket.unshift(seen);
        this.injector.injectConnection(socket);
        return;
      }
      const hello = parseHello(seen);
      if (hello === 'short') return;
      clearTimeout(timer);
      socket.off('data', onData);
      if ('error' in hello) {
        socket.destroy();
        return;
      }
      socket.pause();
      void this.greet(socket, hello.value, seen.subarray(hello.used));
    };
    socket.on('data', onData);
  }

  private async greet(socket: net.Socket, authorization: string, rest: Buffer): Promise<void> {
    const call = new LinkCall(socket, authorization, this.o, this.o.log);
    let refusal: Partial<grpc.StatusObject> | null = null;
    if (this.o.credentials !== null) {
      refusal = { code: grpc.status.FAILED_PRECONDITION, details: 'this node serves gRPC with TLS only: no plaintext links' };
    } else {
      try {
        await authorizeCall(this.o.auth, 'Operations', call);
      } catch (err) {
        refusal = failureStatus(err, 'Operations', this.o.log);
      }
    }
    this.o.onLink?.(refusal === null);
    if (socket.destroyed) return;
    if (refusal !== null) {
      // Read on (and drop) what the client still sends, so that its close is seen.
      socket.resume();
      socket.end(encodeWelcome(refusal.code ?? grpc.status.UNKNOWN, refusal.details ?? ''));
      setTimeout(() => socket.destroy(), GREETING_MS).unref();
      return;
    }
    socket.write(encodeWelcome(0, ''));
    this.links.add(socket);
    socket.once('close', () => this.links.delete(socket));
    this.o.serve(call, call.rooms);
    call.start(rest);
  }
}

/**
 * An accepted link as the Operations endpoint sees a gRPC call: batches in
 * as 'data' (their bytes), results out by write(), a failure status by emit('error')
 * (sent as a STATUS frame, then the link ends), flow control by pause and
 * resume of the socket. The socket is also not read while a batch waits
 * for room (`rooms`).
 */
class LinkCall extends EventEmitter implements OperationsCall {
  cancelled = false;
  readonly metadata = new grpc.Metadata();
  readonly rooms: MessageRooms;
  private readonly reader: FrameReader;
  // The endpoint asked for no more batches for now.
  private paused = false;
  // The endpoint ended the stream: frames that still come are not its.
  private over = false;
  // Buffers for the frames of results, given back once written, and for
  // those of batches, given back once their operations answered.
  private readonly sent = new FramePool();
  private readonly received = new FramePool();

  constructor(
    private readonly socket: net.Socket,
    authorization: string,
    limits: Pick<ServingPortOptions, 'maxMessageBytes' | 'budget' | 'receiveTimeoutMs'>,
    private readonly log: Logger,
  ) {
    super();
    if (authorization !== '') this.metadata.set('authorization', authorization);
    const rooms = (this.rooms = new MessageRooms(limits.budget, new ArrivalDeadline(socket, limits.receiveTimeoutMs, (details) => this.stalled(details))));
    this.reader = new FrameReader(
      limits.maxMessageBytes,
      (type, payload) => {
        if (type !== BATCH) throw new Error(`a frame of type ${type} from the client`);
        rooms.arrived();
        if (!this.over) this.emit('data', payload);
      },
      false,
      (type, size) => type !== BATCH || rooms.admit(size, () => this.admitted()),
      this.received,
    );
    this.on('error', (status: Partial<grpc.StatusObject>) => {
      this.over = true;
      if (this.socket.destroyed) return;
      writeFrame(this.socket, STATUS, encodeStatus(status.code ?? grpc.status.UNKNOWN, status.details ?? ''));
      this.socket.end();
    });
  }

  /** Reads the link, from `rest` (what came after the greeting) on. */
  start(rest: Buffer): void {
    const s = this.socket;
    s.on('data', (chunk: Buffer) => this.take(chunk));
    s.on('end', () => this.emit('end'));
    s.on('close', () => {
      this.rooms.close();
      this.cancelled = true;
      this.emit('cancelled');
    });
    s.on('drain', () => this.emit('drain'));
    if (rest.length > 0) this.take(rest);
    this.flow();
  }

  getPeer(): string {
    return `${this.socket.remoteAddress}:${this.socket.remotePort}`;
  }

  release(batch: Buffer): void {
    this.received.give(batch);
  }

  write(batch: ResultBatchMsg, written?: () => void): boolean {
    // A result with a large value goes in a frame of its own, which a kept
    // buffer holds. The batch's bytes are copied into the frames at once.
    const small: ResultMsg[] = [];
    let more = true;
    for (const r of batch.results) {
      if ((r.value?.length ?? 0) < FramePool.SMALL_FRAME) small.push(r);
      else more = this.writeResults([r]) && more;
    }
    if (small.length > 0) more = this.writeResults(small) && more;
    written?.();
    return more;
  }

  private writeResults(results: ResultMsg[]): boolean {
    const payload = encodeResultBatch({ results }, (bytes) => this.sent.take(bytes));
    return writeFrame(this.socket, BATCH, payload, () => this.sent.give(payload));
  }

  end(): void {
    this.over = true;
    this.socket.end();
  }

  pause(): this {
    this.paused = true;
    this.flow();
    return this;
  }

  resume(): this {
    this.paused = false;
    this.flow();
    return this;
  }

  // The socket is read while the endpoint wants batches and none waits for room.
  private flow(): void {
    if (this.paused || this.reader.holding) this.socket.pause();
    else this.socket.resume();
  }

  private take(chunk: Buffer): void {
    this.read(() => this.reader.push(chunk));
    // The batch whose header was in `chunk` waits for room.
    if (this.reader.holding) this.flow();
  }

  // A batch let in did not come whole in time: the link ends, and with it
  // the batch's room, even if the sender keeps its side open.
  private stalled(details: string): void {
    this.log.warn({ peer: this.getPeer(), details }, 'operations link closed: a batch stalled');
    this.emit('error', { code: grpc.status.DEADLINE_EXCEEDED, details });
    this.socket.destroySoon();
  }

  // A batch held for room has it.
  private admitted(): void {
    this.read(() => this.reader.resume());
    this.flow();
  }

  private read(frames: () => void): void {
    try {
      frames();
    } catch (err) {
      // Framing lost: nothing after can be read.
      this.log.warn({ peer: this.getPeer(), err: (err as Error).message }, 'operations link closed: malformed frame');
      this.socket.destroy();
    }
  }
}
