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
import { native } from '../store/native';
import { BATCH, encodeStatus, encodeWelcome, FramePool, FrameReader, KEEPALIVE_MS, parseHello, STATUS, writeFrame } from './wire';

/** How long a new connection may take to say what it is. */
const GREETING_MS = 10_000;
/** A link's bytes are read this many at a time. */
const READ_BUFFER = 64 * 1024;

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
    const metadata = new grpc.Metadata();
    if (authorization !== '') metadata.set('authorization', authorization);
    const peer = `${socket.remoteAddress}:${socket.remotePort}`;
    let refusal: Partial<grpc.StatusObject> | null = null;
    if (this.o.credentials !== null) {
      refusal = { code: grpc.status.FAILED_PRECONDITION, details: 'this node serves gRPC with TLS only: no plaintext links' };
    } else {
      try {
        await authorizeCall(this.o.auth, 'Operations', { metadata, getPeer: () => peer });
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
    // Made, served and started in one go: its reads begin with it.
    const call = new LinkCall(socket, metadata, this.o, this.o.log);
    this.o.serve(call, call.rooms);
    call.start(rest);
  }
}

/**
 * An accepted link as the Operations endpoint sees a gRPC call: batches in
 * as 'data' (their bytes), results out by write(), a failure status by emit('error')
 * (sent as a STATUS frame, then the link ends), flow control by pause and
 * resume of its reads. Nor is it read while a batch waits for room
 * (`rooms`).
 *
 * The connection is read into one buffer over and over, and the rest of a
 * large frame straight into the frame's buffer, through a second socket on
 * a duplicate of its descriptor (`input`, with `onread`): Node reads a
 * socket it accepted into a fresh 64 KiB buffer each time, and those, a
 * part of a value after another, had V8 collect its whole heap every few
 * tens of MiB received; read into one buffer, every byte of a part was
 * copied once more. Results are written on the socket
 * accepted, which is never read again; it is closed once the peer's side
 * has ended too (its unread bytes would reset the connection, results and
 * all), or on a failure.
 */
class LinkCall extends EventEmitter implements OperationsCall {
  cancelled = false;
  readonly rooms: MessageRooms;
  private readonly reader: FrameReader;
  // What the link is read through (the socket itself where its descriptor
  // could not be duplicated), and whether the peer's side ended.
  private readonly input: net.Socket;
  private inputEnded = false;
  // Bytes the accepted socket had read past the greeting, before `input` took over.
  private readonly early: Buffer;
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
    readonly metadata: grpc.Metadata,
    limits: Pick<ServingPortOptions, 'maxMessageBytes' | 'budget' | 'receiveTimeoutMs'>,
    private readonly log: Logger,
  ) {
    super();
    const spare = Buffer.allocUnsafeSlow(READ_BUFFER);
    // The first target is asked for before the reader is made: nothing is gathered yet.
    const read = readInto(
      socket,
      () => (this.reader === undefined ? spare : this.reader.target(spare)),
      (into, n) => this.took(into, n),
    );
    this.input = read?.input ?? socket;
    this.early = read?.early ?? Buffer.alloc(0);
    const rooms = (this.rooms = new MessageRooms(limits.budget, new ArrivalDeadline(this.input, limits.receiveTimeoutMs, (details) => this.stalled(details))));
    this.reader = new FrameReader(
      limits.maxMessageBytes,
      (type, payload) => {
        if (type !== BATCH) throw new Error(`a frame of type ${type} from the client`);
        rooms.arrived();
        if (!this.over) this.emit('data', payload);
      },
      // Read into one buffer again and again: a frame within a read is copied.
      this.input !== socket,
      (type, size) => type !== BATCH || rooms.admit(size, () => this.admitted()),
      this.received,
    );
    this.on('error', (status: Partial<grpc.StatusObject>) => {
      this.over = true;
      if (this.socket.destroyed) return;
      writeFrame(this.socket, STATUS, encodeStatus(status.code ?? grpc.status.UNKNOWN, status.details ?? ''));
      this.endSocket();
    });
  }

  /** Reads the link, from `rest` (what came after the greeting) on. */
  start(rest: Buffer): void {
    const s = this.socket;
    const input = this.input;
    if (input === s) s.on('data', (chunk: Buffer) => this.take(chunk));
    input.on('end', () => {
      this.inputEnded = true;
      this.emit('end');
      if (input !== s && s.writableEnded) s.destroySoon();
    });
    input.on('error', () => s.destroy());
    s.on('close', () => {
      if (input !== s) input.destroy();
      this.rooms.close();
      this.cancelled = true;
      this.emit('cancelled');
    });
    s.on('drain', () => this.emit('drain'));
    if (rest.length > 0) this.take(rest);
    if (this.early.length > 0) this.take(this.early);
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
    this.endSocket();
  }

  // Our side ends; the socket closes once the peer's has too (the socket
  // read closes of itself: the one accepted, not read, is closed here).
  private endSocket(): void {
    this.socket.end();
    if (this.input !== this.socket && this.inputEnded) this.socket.destroySoon();
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
    if (this.paused || this.reader.holding) this.input.pause();
    else this.input.resume();
  }

  private take(chunk: Buffer): void {
    this.read(() => this.reader.push(chunk));
    // The batch whose header was in `chunk` waits for room.
    if (this.reader.holding) this.flow();
  }

  private took(into: Buffer, n: number): void {
    this.read(() => this.reader.took(into, n));
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

/**
 * A second socket on a duplicate of `socket`'s descriptor, reading into the
 * buffer `target` gives for each read and handing the bytes read to `took`
 * (from the next turn of the event loop on); `socket` reads no more, and
 * `early` is what it had read and not handed on. null where `socket` has no
 * descriptor to duplicate: it is read as it was.
 */
function readInto(socket: net.Socket, target: () => Buffer, took: (into: Buffer, n: number) => void): { input: net.Socket; early: Buffer } | null {
  const handle = (socket as net.Socket & { _handle?: { fd?: number; reading?: boolean; readStop(): number } | null })._handle;
  if (typeof handle?.fd !== 'number' || handle.fd < 0) return null;
  let fd: number;
  try {
    fd = native.socket.duplicate(handle.fd);
  } catch {
    return null;
  }
  // A paused socket still reads until its buffer is full: its reads stop
  // here, in the same turn as the duplicate's start, so that no byte goes
  // to it afterwards. Node is left believing they run, so that draining its
  // buffer starts none.
  handle.readStop();
  handle.reading = true;
  const early: Buffer[] = [];
  for (let more: Buffer | null; (more = socket.read() as Buffer | null) !== null; ) early.push(more);
  // net.Socket takes `onread` for any socket, though Node's types list it for connect() only.
  const options: net.SocketConstructorOpts & { onread: net.OnReadOpts } = {
    fd,
    readable: true,
    writable: false,
    // Its end must not shut the connection down: results still go out on `socket`.
    allowHalfOpen: true,
    onread: {
      buffer: target,
      callback: (n: number, into: Uint8Array) => {
        took(into as Buffer, n);
        return true;
      },
    },
  };
  return { input: new net.Socket(options), early: Buffer.concat(early) };
}
