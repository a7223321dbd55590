// The HTTP/2 stream under a grpc-js call, a server's or a client's.
// grpc-js keeps it to itself; the budgets need it, to pause a message's
// bytes and to learn when an answer has left. undefined should grpc-js keep
// it elsewhere one day: the budgets then do without, and
// test/cluster/grpc-budget.test.ts (a server's) or
// test/cluster/bob-peer-budget.test.ts (a client's) fails.
import http2, { type Http2Stream } from 'node:http2';
import type * as grpc from '@grpc/grpc-js';

// A server call: grpc-js's own intercepting call holds it as `stream`, and a
// handler's call reaches that one as `call`.
export function callStream(call: object): Http2Stream | undefined {
  const own = call as { stream?: Http2Stream; call?: { stream?: Http2Stream } };
  const stream = own.stream ?? own.call?.stream;
  return stream !== undefined && typeof stream.pause === 'function' ? stream : undefined;
}

// A client's unary call, once its answer's headers arrived: the call holds
// its intercepting call as `call`, whose innermost `call` is the channel's
// resolving call; that one's `child` retries (even with retries off)
// through `underlyingCalls`, each a load-balancing call whose `child`, the
// call on a connection, holds the stream as `http2Stream`.
export function clientCallStream(call: object): Http2Stream | undefined {
  let at = (call as { call?: unknown }).call;
  for (let i = 0; i < 4 && (at as { call?: unknown } | undefined)?.call !== undefined; i++) at = (at as { call: unknown }).call;
  const retrying = (at as { child?: { underlyingCalls?: Array<{ call?: { child?: { http2Stream?: Http2Stream } } }> } } | undefined)?.child;
  const attempts = retrying?.underlyingCalls ?? [];
  const stream = attempts[attempts.length - 1]?.call?.child?.http2Stream;
  return stream !== undefined && typeof stream.pause === 'function' ? stream : undefined;
}

// The gRPC frame prefix: a flag byte, then the message's length, u32 big-endian.
const PREFIX = 5;

/**
 * Calls `then` with the length of the first message `stream` carries, as
 * soon as its first bytes arrive (they go on to grpc-js as they came).
 */
export function firstMessageLength(stream: Http2Stream, then: (length: number) => void): void {
  let head: Buffer | null = null;
  const onData = (chunk: Buffer) => {
    head = head === null ? chunk : Buffer.concat([head, chunk]);
    if (head.length < PREFIX) return;
    stream.off('data', onData);
    then(head.readUInt32BE(1));
    head = null;
  };
  stream.on('data', onData);
}

/**
 * Calls `admit` with the length of each message `stream` carries, as soon
 * as its prefix arrives (the bytes go on to grpc-js as they came), and
 * `arrived` once its last byte came. When `admit` returns false, the bytes
 * after that prefix are looked at only once the `next` it was given is
 * called.
 */
export function eachMessageLength(stream: Http2Stream, admit: (length: number, next: () => void) => boolean, arrived: () => void): void {
  const head = Buffer.alloc(PREFIX);
  let headFill = 0;
  // Bytes of the current message's body still to come.
  let body = 0;
  let held: Buffer | null = null;
  const next = () => {
    const rest = held;
    held = null;
    if (rest !== null) walk(rest);
  };
  const walk = (chunk: Buffer): void => {
    let at = 0;
    while (at < chunk.length) {
      if (body > 0) {
        const n = Math.min(body, chunk.length - at);
        body -= n;
        at += n;
        if (body === 0) arrived();
        continue;
      }
      const n = Math.min(PREFIX - headFill, chunk.length - at);
      chunk.copy(head, headFill, at, at + n);
      headFill += n;
      at += n;
      if (headFill < PREFIX) return;
      headFill = 0;
      body = head.readUInt32BE(1);
      if (!admit(body, next)) {
        held = chunk.subarray(at);
        return;
      }
      if (body === 0) arrived();
    }
  };
  stream.on('data', (chunk: Buffer) => {
    if (held !== null) held = Buffer.concat([held, chunk]);
    else walk(chunk);
  });
}

/**
 * Ends a server call with `code` and resets its stream: the rest of its
 * request is never read, and a client that keeps its side open holds
 * nothing. The reset says NO_ERROR, as HTTP/2 has a server that answered
 * stop a request's upload: a client takes the status sent before it, where
 * a CANCEL could reach it first and stand for the status (grpc-js then
 * reports CANCELLED).
 */
export function endCall(stream: Http2Stream, call: grpc.ServerInterceptingCallInterface, code: grpc.status, details: string): void {
  call.sendStatus({ code, details });
  stream.close(http2.constants.NGHTTP2_NO_ERROR);
}
