// The operations link's bytes (docs/FORMAT.md §14): a greeting each way,
// then frames. A link is a plain TCP connection to a node's gRPC port that
// carries the Replicas.Operations batches of one peer without HTTP/2; the
// greeting's first byte (NUL) is one neither HTTP/2's preface nor TLS can
// start with, which is how the port tells the two apart.
import type { Socket } from 'node:net';

/** What a link's greetings start with: NUL, "OYSTER", the link's version. */
export const MAGIC = Buffer.from([0x00, 0x4f, 0x59, 0x53, 0x54, 0x45, 0x52, 0x01]);
/** A greeting's authorization or details at most, bytes. */
export const MAX_TEXT = 4096;
/** Idle time before TCP keepalive probes a link (both ends): a peer whose host vanished leaves no socket behind. */
export const KEEPALIVE_MS = 30_000;
/** Frame types. */
export const BATCH = 1;
export const STATUS = 2;
/** A frame's length field counts its type byte and payload. */
const HEAD = 5;

// A greeting's reserved bytes (zero): they make it at least as long as
// HTTP/2's 24-byte preface, so that an HTTP/2 server that reads the whole
// preface before it compares (and would wait for more) hangs up at once.
const RESERVED = 14;
const HELLO = MAGIC.length + RESERVED + 2;

/** The client's greeting: the authorization a gRPC call would carry as metadata ("" without). */
export function encodeHello(authorization: string): Buffer {
  const text = Buffer.from(authorization, 'utf8');
  const out = Buffer.alloc(HELLO + text.length);
  MAGIC.copy(out, 0);
  out.writeUInt16LE(text.length, HELLO - 2);
  text.copy(out, HELLO);
  return out;
}

/** The server's answer to a greeting: a gRPC status code (0: the link is open) and its details. */
export function encodeWelcome(code: number, details: string): Buffer {
  const text = Buffer.from(details.slice(0, MAX_TEXT / 4), 'utf8');
  const out = Buffer.allocUnsafe(MAGIC.length + 6 + text.length);
  MAGIC.copy(out, 0);
  out.writeUInt32LE(code, MAGIC.length);
  out.writeUInt16LE(text.length, MAGIC.length + 4);
  text.copy(out, MAGIC.length + 6);
  return out;
}

export type Parsed<T> = { value: T; used: number } | 'short' | { error: string };

/** Reads a greeting from the start of `b`: the authorization, or 'short' while more bytes are needed. */
export function parseHello(b: Buffer): Parsed<string> {
  const prefix = magicPrefix(b);
  if (prefix !== null) return prefix;
  if (b.length < HELLO) return 'short';
  const n = b.readUInt16LE(HELLO - 2);
  if (n > MAX_TEXT) return { error: `a greeting's authorization of ${n} bytes (at most ${MAX_TEXT})` };
  if (b.length < HELLO + n) return 'short';
  return { value: b.toString('utf8', HELLO, HELLO + n), used: HELLO + n };
}

/** Reads the server's answer from the start of `b`. */
export function parseWelcome(b: Buffer): Parsed<{ code: number; details: string }> {
  const prefix = magicPrefix(b);
  if (prefix !== null) return prefix;
  if (b.length < MAGIC.length + 6) return 'short';
  const code = b.readUInt32LE(MAGIC.length);
  const n = b.readUInt16LE(MAGIC.length + 4);
  if (n > MAX_TEXT) return { error: `an answer's details of ${n} bytes (at most ${MAX_TEXT})` };
  if (b.length < MAGIC.length + 6 + n) return 'short';
  return { value: { code, details: b.toString('utf8', MAGIC.length + 6, MAGIC.length + 6 + n) }, used: MAGIC.length + 6 + n };
}

// 'short' while `b` may still become the magic, an error once it cannot.
function magicPrefix(b: Buffer): 'short' | { error: string } | null {
  const n = Math.min(b.length, MAGIC.length);
  if (!b.subarray(0, n).equals(MAGIC.subarray(0, n))) return { error: 'not an operations link' };
  return n < MAGIC.length ? 'short' : null;
}

/**
 * Writes one frame (header and payload, one buffer or pieces in order, in
 * one writev); false once the socket's buffer is full: wait for 'drain'.
 * `written` is called once the payload has left (or the socket failed):
 * its buffers are free again.
 */
export function writeFrame(socket: Socket, type: number, payload: Buffer | Buffer[], written?: () => void): boolean {
  const pieces = Array.isArray(payload) ? payload : [payload];
  const head = Buffer.allocUnsafe(HEAD);
  head.writeUInt32LE(pieces.reduce((n, p) => n + p.length, 0) + 1, 0);
  head[4] = type;
  socket.cork();
  socket.write(head);
  let more = true;
  // Written in order: the last one's callback comes once the kernel has them all, or the socket dropped them.
  pieces.forEach((p, i) => (more = socket.write(p, i === pieces.length - 1 ? written : undefined)));
  socket.uncork();
  return more;
}

/**
 * Buffers kept for the frames of one link: a part of a large value is a
 * frame of about 1 MiB, and a fresh buffer for each (memory the kernel
 * must fault in and zero, then V8 collect, its whole heap every few tens
 * of MiB) cost more than the rest of moving it. A frame from SMALL_FRAME
 * bytes up to FRAME_BUFFER takes a kept buffer, KEPT_FRAMES of them at
 * most; others get one of their own.
 */
export class FramePool {
  static readonly SMALL_FRAME = 64 * 1024;
  static readonly FRAME_BUFFER = 1024 * 1024 + 64 * 1024;
  static readonly KEPT_FRAMES = 4;
  private readonly free: Buffer[] = [];
  // The buffers handed out, by their memory, until given back (one never
  // given back is collected as any other).
  private readonly out = new WeakSet<ArrayBufferLike>();

  /** A buffer of exactly `bytes`: a view of a kept one where its size fits. */
  take(bytes: number): Buffer {
    if (bytes < FramePool.SMALL_FRAME || bytes > FramePool.FRAME_BUFFER) return Buffer.allocUnsafe(bytes);
    const kept = this.free.pop() ?? Buffer.allocUnsafeSlow(FramePool.FRAME_BUFFER);
    this.out.add(kept.buffer);
    return kept.subarray(0, bytes);
  }

  /** `frame`, from take(), is not read or written any more: a kept buffer goes back (once). */
  give(frame: Buffer): void {
    if (!this.out.delete(frame.buffer)) return;
    if (this.free.length < FramePool.KEPT_FRAMES) this.free.push(Buffer.from(frame.buffer, 0, FramePool.FRAME_BUFFER));
  }
}

/** A STATUS frame's payload: a gRPC status code and its details. */
export function encodeStatus(code: number, details: string): Buffer {
  const text = Buffer.from(details.slice(0, MAX_TEXT / 4), 'utf8');
  const out = Buffer.allocUnsafe(4 + text.length);
  out.writeUInt32LE(code, 0);
  text.copy(out, 4);
  return out;
}

export function decodeStatus(payload: Buffer): { code: number; details: string } {
  if (payload.length < 4) throw new Error(`a status frame of ${payload.length} bytes`);
  return { code: payload.readUInt32LE(0), details: payload.toString('utf8', 4) };
}

/**
 * Cuts a byte stream into frames. A frame that arrives within one chunk is
 * handed on as a view of it (a copy, with `copyViews`: the chunks are one
 * buffer read into again); a larger one is gathered into a buffer of its
 * own size, allocated once its header is in (never more than `maxBytes`),
 * and a stream read through target() and took() reads the rest of it
 * there, uncopied.
 * `admit`, when given, is asked about each frame once its header is in:
 * false holds the frame and the bytes after it until `resume` is called.
 * `frames`, when given, holds the buffers gathered frames go into: their
 * reader gives each back once done with it.
 */
export class FrameReader {
  private readonly head = Buffer.alloc(HEAD);
  private headFill = 0;
  // The payload's size of the frame whose header is in; -1 between frames.
  private size = -1;
  private body: Buffer | null = null;
  private bodyFill = 0;
  private type = 0;
  private held: Buffer | null = null;
  // The rest of the frame being gathered, when the last target() was it.
  private inPlace: Buffer | null = null;

  constructor(
    private readonly maxBytes: number,
    private readonly onFrame: (type: number, payload: Buffer) => void,
    private readonly copyViews = false,
    private readonly admit?: (type: number, size: number) => boolean,
    private readonly frames?: FramePool,
  ) {}

  /** A frame waits for `resume`. */
  get holding(): boolean {
    return this.held !== null;
  }

  /** Takes the next bytes; throws (the stream is unusable) on a frame of length 0 or over maxBytes. */
  push(chunk: Buffer): void {
    // A read into the frame's buffer would overwrite these bytes.
    if (this.inPlace !== null) throw new Error('bytes pushed while a read into a frame is under way');
    if (this.held !== null) {
      this.held = Buffer.concat([this.held, chunk]);
      return;
    }
    let at = 0;
    while (at < chunk.length) {
      if (this.size < 0) {
        const n = Math.min(HEAD - this.headFill, chunk.length - at);
        chunk.copy(this.head, this.headFill, at, at + n);
        this.headFill += n;
        at += n;
        if (this.headFill < HEAD) return;
        const length = this.head.readUInt32LE(0);
        if (length === 0 || length - 1 > this.maxBytes) throw new Error(`a frame of ${length} bytes (at most ${this.maxBytes + 1})`);
        this.type = this.head[4];
        this.headFill = 0;
        this.size = length - 1;
        if (this.admit !== undefined && !this.admit(this.type, this.size)) {
          this.held = chunk.subarray(at);
          return;
        }
      }
      if (this.body === null) {
        if (chunk.length - at >= this.size) {
          const view = chunk.subarray(at, at + this.size);
          at += this.size;
          this.size = -1;
          this.onFrame(this.type, this.copyViews ? Buffer.from(view) : view);
          continue;
        }
        this.body = this.frames?.take(this.size) ?? Buffer.allocUnsafe(this.size);
        this.bodyFill = 0;
      }
      const n = Math.min(this.body.length - this.bodyFill, chunk.length - at);
      chunk.copy(this.body, this.bodyFill, at, at + n);
      this.bodyFill += n;
      at += n;
      if (this.bodyFill === this.body.length) this.gathered();
    }
  }

  /**
   * Where the stream's next read should go: the rest of the frame being
   * gathered (never past its end), else `spare`. What was read there goes
   * to took(), before anything is pushed (push throws meanwhile).
   */
  target(spare: Buffer): Buffer {
    this.inPlace = this.body !== null && this.held === null ? this.body.subarray(this.bodyFill) : null;
    return this.inPlace ?? spare;
  }

  /** `n` bytes were read into `into`, a target(); throws as push does. */
  took(into: Buffer, n: number): void {
    if (into !== this.inPlace) {
      this.inPlace = null;
      this.push(into.subarray(0, n));
      return;
    }
    this.inPlace = null;
    this.bodyFill += n;
    if (this.bodyFill === this.body!.length) this.gathered();
  }

  // The frame being gathered is whole.
  private gathered(): void {
    const body = this.body!;
    this.body = null;
    this.size = -1;
    this.onFrame(this.type, body);
  }

  /** Goes on with the frame `admit` held, and the bytes that came after it; throws as push does. */
  resume(): void {
    const rest = this.held;
    this.held = null;
    if (rest !== null) this.push(rest);
  }
}
