// CallLimit: the gRPC calls open at once on this node, all connections
// together, within grpc_max_calls, and a call's request in within
// http_request_timeout. Each open call holds memory whatever its message's
// size — grpc-js's own objects, about 10 KB, and the bytes of a message
// that has begun to arrive, up to HTTP/2's window of 64 KiB before any
// limit on messages (./receive-budget.ts) can tell: 4,096 calls that never
// finished a request of 60 KB took the node from 72 to 359 MiB, and
// grpc_max_connections with 256 calls each let in 64 times as many.
// A call past the limit is refused at once with RESOURCE_EXHAUSTED (a
// client tries again later): a call held back would hold the same memory
// as one let in. A call whose client has not sent its whole request within
// http_request_timeout of the call's start ends with DEADLINE_EXCEEDED, as
// a REST request does with 408; calls that stream their requests
// (Replicas.Operations) are timed by each batch (./arrival-deadline.ts).
import type { Http2Stream } from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { callStream, endCall } from './call-stream';

export interface CallLimitParts {
  /** Calls open at once (node.yaml grpc_max_calls). */
  maxCalls: number;
  /** Time for a call's whole request to arrive (node.yaml http_request_timeout), ms. */
  receiveTimeoutMs: number;
  /** The number of calls open changed. */
  onOpen?: (open: number) => void;
  /** A call was refused: too many open, or its request came too slowly. */
  onRefused?: (reason: 'max_calls' | 'request_timeout') => void;
}

export class CallLimit {
  private open = 0;
  // Calls whose request comes in one message, with when each began: the
  // sweep ends those whose client has not finished it in time.
  private readonly receiving = new Map<Http2Stream, { started: number; call: grpc.ServerInterceptingCallInterface }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly parts: CallLimitParts) {
    // As Node's HTTP server checks its requests' time: a quarter of the timeout, at most 30 s.
    const every = Math.min(30_000, Math.max(100, Math.floor(parts.receiveTimeoutMs / 4)));
    this.sweeper = setInterval(() => this.sweep(), every).unref();
  }

  /** The interceptor that counts each call, first of the server's. */
  readonly interceptor: grpc.ServerInterceptor = (method, call) => {
    const stream = callStream(call);
    if (stream === undefined) return call as grpc.ServerInterceptingCall;
    if (this.open >= this.parts.maxCalls) {
      this.parts.onRefused?.('max_calls');
      endCall(stream, call, grpc.status.RESOURCE_EXHAUSTED, `the node has ${this.open} gRPC calls open (grpc_max_calls ${this.parts.maxCalls}); retry later`);
      return call as grpc.ServerInterceptingCall;
    }
    this.open++;
    this.parts.onOpen?.(this.open);
    if (!method.requestStream) this.receiving.set(stream, { started: performance.now(), call });
    stream.once('close', () => {
      this.open--;
      this.receiving.delete(stream);
      this.parts.onOpen?.(this.open);
    });
    return call as grpc.ServerInterceptingCall;
  };

  /** Stops the sweep (the node is stopping). */
  close(): void {
    clearInterval(this.sweeper);
  }

  private sweep(): void {
    const late = performance.now() - this.parts.receiveTimeoutMs;
    for (const [stream, { started, call }] of this.receiving) {
      if (stream.readableEnded) {
        this.receiving.delete(stream);
        continue;
      }
      if (started > late) continue;
      this.receiving.delete(stream);
      this.parts.onRefused?.('request_timeout');
      endCall(stream, call, grpc.status.DEADLINE_EXCEEDED, `the request did not arrive within http_request_timeout (${this.parts.receiveTimeoutMs} ms)`);
    }
  }
}
