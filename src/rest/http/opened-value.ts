// A value too large to hold whole, sent as it is read. On a plain socket
// it goes from the blob's file to the socket in sends of up to SEND bytes,
// each as far as the socket's buffer takes it (sendfile: the bytes cross no
// memory of ours); the next CHUNK bytes a send left are read into a buffer
// and written through Node's stream, which waits for the socket to drain,
// and the sends go on once they are written. Every part of a value on a TLS
// socket, or held by a peer, is read into the buffer and written the same
// way. An answer holds one such buffer whatever the value's size, taken
// from the node's budget of values in flight (http_body_memory_limit),
// which keeps the buffer for the next values; an answer of a value in a
// local file while that budget is more than half used takes a buffer of
// DRAIN_PART bytes instead. A value held whole in memory (a bob peer's,
// which holds its own room) is written as it is, with no buffer.
//
// Each part is checked before it is sent, and the headers leave with the
// first: a damaged first part is answered with the error. A later part that
// fails its checksum ends the answer by closing the connection: the client
// has received fewer bytes than Content-Length announced and cannot take
// what it got for the whole value. (A value stored without block checksums,
// from before they existed, is checked as a whole when its last part is
// read, and a range short of its end reads the rest before its own last
// part: the parts before were sent unchecked, and the connection is closed
// all the same.)
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Context } from 'koa';
import { isOysterError } from '../../model/errors';
import { OpenedValue } from '../../model/value';
import { BodyBudget, VALUE_BUFFER } from '../body-budget';
import { sniffContentType } from '../content-type';

// A part fills one of the budget's buffers.
export const CHUNK = VALUE_BUFFER;
// A send is checked window by window as it goes, and each is a trip to an
// engine thread and back: asking for more than the socket's buffer takes
// (Linux lets it grow to 4 MiB) leaves it to the kernel to say how much.
// With sends of one CHUNK a 64 MiB answer cost about a tenth more CPU
// (docs/BENCHMARKS.md).
const SEND = 8 * CHUNK;
// A client that reads nothing keeps its part waiting in Node's stream until
// http_request_timeout: with parts of DRAIN_PART once the budget is half
// used, it takes eight times as many such clients to fill it. Smaller parts
// cost a client that reads fast a fifth or more of its rate
// (docs/BENCHMARKS.md), hence only then; a peer's value keeps parts of
// CHUNK, each of which is a read from the peer.
const DRAIN_PART = CHUNK / 8;
/**
 * Answers with value bytes [start, end] (inclusive) of `v`, the status and
 * headers set on ctx, and the Content-Type guessed from the value's first
 * bytes; the caller closes the reader once this settles. Rejects before
 * anything is sent (503 when the budget has no room; a damaged first part:
 * the headers leave with it, once it is checked); once the headers are out,
 * a failure closes the connection and the promise resolves.
 */
export async function sendOpened(
  ctx: Context,
  v: OpenedValue,
  start: number,
  end: number,
  { bodyBudget: budget, sendTimeoutMs }: { bodyBudget: BodyBudget; sendTimeoutMs: number },
): Promise<void> {
  const length = end - start + 1;
  const type = sniffContentType(v.head);
  if (ctx.method === 'HEAD') {
    // Koa answers a HEAD with the headers set, Content-Length included, and no body.
    ctx.set('Content-Type', type);
    ctx.length = length;
    return;
  }
  const part = v.reader.inFile && budget.inUse + CHUNK > budget.limit / 2 ? DRAIN_PART : CHUNK;
  const room = v.reader.bytes ? 0 : Math.min(part, length);
  if (room > 0 && !(await budget.take(room))) {
    ctx.set('Retry-After', '5');
    ctx.throw(503, budget.refusal);
  }
  const res = ctx.res;
  let buffer: Buffer | null = null;
  // Until the answer is committed, an error is still the answer.
  let committed = false;
  const commit = () => {
    if (committed) return;
    committed = true;
    ctx.set('Content-Type', type);
    ctx.respond = false;
    res.statusCode = ctx.status;
    res.setHeader('Content-Length', length);
  };
  // While nothing was sent, an error can still be the answer.
  const uncommit = () => {
    committed = false;
    ctx.respond = true;
    res.removeHeader('Content-Type');
    res.removeHeader('Content-Length');
  };
  let closed: (() => void) | undefined;
  const gone = new Promise<never>((_, reject) => res.once('close', (closed = () => reject(new Error('connection closed')))));
  gone.catch(() => undefined);
  // On a plain socket the header block leaves with the value's first bytes,
  // by the first send, or else on its own before them.
  let header: string | null = null;
  try {
    const plain = plainSocketFd(res.socket) !== null;
    if (plain) {
      commit();
      header = takeHeader(res);
      if (header === null) await Promise.race([flushHeaders(res), gone]);
    }
    let restChecked = false;
    for (let pos = start; pos <= end; ) {
      const n = Math.min(plain ? SEND : CHUNK, end + 1 - pos);
      // A range that stops short of the value's end: a value without block
      // checksums is checked whole, once, before the range's last part goes out.
      if (!restChecked && pos + n > end && end + 1 < v.size) {
        await Promise.race([v.reader.checkRest(), gone]);
        restChecked = true;
      }
      let sent = plain ? await Promise.race([v.reader.sendTo(liveFd(res), pos, n, header ?? undefined), gone]) : 0;
      if (header !== null) {
        // The socket took only part of the header (then none of the value).
        if (sent < header.length) await Promise.race([writeRaw(res, header.slice(sent)), gone]);
        sent = Math.max(0, sent - header.length);
        header = null;
      }
      if (sent < n) {
        let piece: Buffer;
        if (v.reader.bytes) {
          piece = v.reader.bytes(pos + sent, n - sent);
        } else {
          buffer ??= budget.buffer(part);
          piece = await Promise.race([read(v, buffer, pos + sent, pos + n - 1), gone]);
        }
        commit();
        await Promise.race([write(res, piece, sendTimeoutMs), gone]);
        pos += sent + piece.length;
      } else {
        pos += n;
      }
    }
    res.end();
  } catch (err) {
    // Storage failed the first part before anything was sent (the header
    // block leaves with it): the failure is still the answer.
    if (header !== null && isOysterError(err)) {
      giveHeaderBack(res);
      uncommit();
    }
    // Before the first byte the error is the answer; after it, the
    // connection is closed (storage counted and logged a damaged part; a
    // client that left is no news).
    if (!committed) throw err;
    res.destroy();
  } finally {
    // An answer that ended is closed too: no error to make for it.
    res.off('close', closed!);
    if (room > 0) budget.give(room);
    // A buffer may still be read into when the answer failed: not used again then.
    if (buffer !== null && res.writableFinished) budget.keep(buffer);
  }
}

// The descriptor of a plain (not TLS) socket, which the kernel can send a
// file's pages to; null for TLS, whose bytes must pass through its cipher.
function plainSocketFd(socket: Socket | null): number | null {
  if (socket === null || (socket as TLSSocket).encrypted) return null;
  const fd = (socket as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : null;
}

// The descriptor of the answer's socket, read in the same turn as the send
// that duplicates it (ValueReader.sendTo): once Node has destroyed the
// socket, its number may already belong to another connection or a file.
function liveFd(res: Context['res']): number {
  const socket = res.socket;
  const fd = socket === null || socket.destroyed ? null : plainSocketFd(socket);
  if (fd === null) throw new Error('connection closed');
  return fd;
}

// The answer's header block, taken from Node's ServerResponse to be sent by
// the first send of the value: Node builds it in writeHead and would write
// it with the first body bytes, on a segment of its own here. Marked sent,
// so that Node does not write it again. Null, and Node sends it as usual,
// when the socket still holds bytes of Node's (they go first) or Node does
// not keep the header block where this expects it.
export function takeHeader(res: Pick<Context['res'], 'socket' | 'writeHead' | 'statusCode'>): string | null {
  const socket = res.socket;
  const node = res as unknown as { _header?: unknown; _headerSent?: unknown };
  if (!socket || socket.writableLength !== 0 || socket.writableCorked !== 0 || node._headerSent !== false) return null;
  res.writeHead(res.statusCode);
  if (typeof node._header !== 'string') return null;
  node._headerSent = true;
  return node._header;
}

// Undoes takeHeader before anything was sent: Node builds the header block
// anew from the headers set when the answer is written.
function giveHeaderBack(res: Context['res']): void {
  const node = res as unknown as { _header: unknown; _headerSent: unknown };
  node._header = null;
  node._headerSent = false;
}

// Writes bytes of the answer (the rest of its header block) to the socket
// itself, past the ServerResponse, and resolves once they are written.
function writeRaw(res: Context['res'], latin1: string): Promise<void> {
  return new Promise((resolve, reject) => res.socket!.write(latin1, 'latin1', (err) => (err ? reject(err) : resolve())));
}

// Sends the headers and resolves once the socket holds nothing of ours:
// bytes sent past Node's stream must come after everything written to it.
function flushHeaders(res: Context['res']): Promise<void> {
  res.flushHeaders();
  const socket = res.socket!;
  if (socket.writableLength === 0 && socket.writableCorked === 0) return Promise.resolve();
  return new Promise((resolve, reject) => socket.write(Buffer.alloc(0), (err) => (err ? reject(err) : resolve())));
}

async function read(v: OpenedValue, buffer: Buffer, pos: number, end: number): Promise<Buffer> {
  const piece = buffer.subarray(0, Math.min(buffer.length, end + 1 - pos));
  await v.reader.read(pos, piece);
  return piece;
}

// A client that takes nothing for `timeoutMs` would hold its share of the
// budget for as long as it keeps the connection: it is cut off.
function write(res: Context['res'], piece: Buffer, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the client read nothing')), timeoutMs);
    res.write(piece, (err) => {
      clearTimeout(timer);
      if (err) reject(err);
      else resolve();
    });
  });
}
