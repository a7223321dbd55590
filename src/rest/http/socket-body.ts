// The rest of a request body read straight from its socket into the
// caller's buffers, past Node's HTTP parser. The parser hands every piece of
// a body over in a fresh 64 KiB buffer, which the caller then copies into
// its window; for a 64 MiB upload that was half of the node's CPU, and the
// pieces kept V8's collector busy (docs/BENCHMARKS.md). Here the kernel
// copies the bytes once, into the window being filled.
//
// How: the connection is paused the way Node's server pauses it itself when
// answers pile up (`socket._paused`, which also keeps it paused against
// resumes from the request's stream); the caller takes what the parser had
// already read (the request's buffered pieces); a second handle on a
// duplicate of the socket's descriptor then reads the rest, with net's
// `onread` putting each read where the caller says. After the last byte of
// the body — never past it: a pipelined request behind it stays in the
// kernel — the parser is told the body was read (it skips as many bytes,
// its body callback off, which is all its state holds of a body of known
// length) and the connection is resumed: the next request on it is parsed
// as before.
import { IncomingMessage } from 'node:http';
import { OnReadOpts, Socket, SocketConstructorOpts } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { native } from '../../store/native';

/** Where a body read from its socket goes. */
export interface BodySink {
  /** The buffer the next bytes go into: where the body goes on, even while reading is paused. */
  target(): Buffer;
  /** `n` bytes arrived at the start of the last target; false pauses reading until resume(). */
  arrived(n: number): boolean;
  /** The body ended before its last byte (the client closed, or the connection failed). */
  failed(err: Error): void;
}

// What of Node's HTTP server this relies on; a connection without it (TLS,
// or a Node whose server differs) is read as any other.
interface HttpSocket extends Socket {
  _paused?: boolean;
  _handle?: { fd?: number } | null;
  parser?: HttpParser | null;
}
interface HttpParser {
  execute(data: Buffer): number | Error;
  resume(): void;
  constructor: { kOnBody?: unknown };
  [index: number]: unknown;
}

// The parser skips a body this much at a time (it reads none of it).
const SKIP = Buffer.alloc(64 * 1024);

export class SocketBody {
  private reader: Socket | null = null;
  private sink: BodySink | null = null;
  // The bytes the parser will not see, and those of them still to come.
  private unseen = 0;
  private left = 0;
  private over = false;

  private constructor(
    private readonly socket: HttpSocket,
    private readonly parser: HttpParser,
    private readonly onBody: number,
  ) {}

  /**
   * Takes the request's connection from Node's parser if it can (plain TCP,
   * a server as expected, no output waiting): reading stops now, and what the
   * parser had read stays buffered in `req` for the caller to drain. null
   * leaves everything as it was.
   */
  static take(req: IncomingMessage): SocketBody | null {
    const socket = req.socket as HttpSocket;
    const parser = socket.parser;
    const onBody = parser?.constructor.kOnBody;
    if ((socket as TLSSocket).encrypted || socket.destroyed || socket._paused !== false) return null;
    // Node's server resumes a paused connection when output waiting on it
    // drains: with none waiting, and none written until the body is in,
    // that never happens meanwhile.
    if (socket.writableLength > 0 || socket.writableNeedDrain) return null;
    if (typeof socket._handle?.fd !== 'number' || socket._handle.fd < 0) return null;
    if (!parser || typeof onBody !== 'number' || typeof parser.execute !== 'function' || typeof parser.resume !== 'function') return null;
    socket._paused = true;
    socket.pause();
    const body = new SocketBody(socket, parser, onBody);
    // The server closes the connection itself when the request takes longer
    // than http_request_timeout: the duplicate descriptor would keep it open.
    socket.once('close', body.onClose);
    return body;
  }

  /** Reads the body's last `n` bytes into `sink`'s targets; with n = 0, the same as release(). */
  read(n: number, sink: BodySink): void {
    this.unseen = n;
    this.left = n;
    this.sink = sink;
    if (n === 0) {
      this.giveBack();
      return;
    }
    let fd: number;
    try {
      fd = native.socket.duplicate(this.socket._handle!.fd!);
    } catch (err) {
      this.fail(err as Error);
      return;
    }
    // net.Socket takes `onread` for any socket, though Node's types list it for connect() only.
    const options: SocketConstructorOpts & { onread: OnReadOpts } = {
      fd,
      readable: true,
      writable: false,
      // Its end must not shut the connection down: Node's socket answers on it.
      allowHalfOpen: true,
      onread: {
        buffer: () => sink.target(),
        callback: (got: number) => {
          this.left -= got;
          const more = sink.arrived(got);
          if (this.left === 0) {
            this.giveBack();
            return false;
          }
          return more;
        },
      },
    };
    const reader = new Socket(options);
    this.reader = reader;
    reader.on('end', () => this.fail(new Error('the client closed the connection')));
    reader.on('error', (err: Error) => this.fail(err));
    reader.resume();
  }

  /** Reads on after arrived() paused it (nothing when it reads already). */
  resume(): void {
    if (!this.over) this.reader?.resume();
  }

  /** Gives the connection back to Node's parser without reading: the caller reads the body's rest from `req`. */
  release(): void {
    this.giveBack();
  }

  /**
   * Stops reading; the connection stays paused, to carry the answer and then
   * be closed (the caller says Connection: close): the rest of the body is
   * never read.
   */
  stop(): void {
    if (this.over) return;
    this.over = true;
    this.socket.off('close', this.onClose);
    this.reader?.destroy();
  }

  /** Stops reading and closes the connection at once. */
  abort(): void {
    if (this.over) return;
    this.over = true;
    this.reader?.destroy();
    this.socket.destroy();
  }

  private readonly onClose = (): void => this.fail(new Error('the connection was closed'));

  // The body cannot be read to its end: the connection is closed, the sink told.
  private fail(err: Error): void {
    if (this.over) return;
    this.abort();
    this.sink?.failed(err);
  }

  private giveBack(): void {
    if (this.over) return;
    this.over = true;
    this.socket.off('close', this.onClose);
    this.reader?.destroy();
    const skipped = this.skip();
    if (skipped !== null) {
      this.socket.destroy(skipped);
      return;
    }
    // As Node's server resumes a connection it paused.
    this.socket._paused = false;
    this.socket.resume();
  }

  // The parser counts the body's bytes it did not see as read; null, or
  // the error it found.
  private skip(): Error | null {
    const saved = this.parser[this.onBody];
    this.parser[this.onBody] = undefined;
    try {
      this.parser.resume();
      for (let n = this.unseen; n > 0; n -= SKIP.length) {
        const chunk = n < SKIP.length ? SKIP.subarray(0, n) : SKIP;
        const r = this.parser.execute(chunk);
        if (r instanceof Error) return r;
      }
      return null;
    } finally {
      this.parser[this.onBody] = saved;
    }
  }
}
