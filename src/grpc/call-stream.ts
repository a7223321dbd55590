// The HTTP/2 stream under a grpc-js server call. grpc-js keeps it to itself
// (its own intercepting call holds it as `stream`, and a handler's call
// reaches that one as `call`); the budgets need it, to pause a request's
// bytes and to learn when an answer has left. undefined should grpc-js keep
// it elsewhere one day: the budgets then do without, and
// test/cluster/grpc-budget.test.ts fails.
import type { Http2Stream } from 'node:http2';

export function callStream(call: object): Http2Stream | undefined {
  const own = call as { stream?: Http2Stream; call?: { stream?: Http2Stream } };
  const stream = own.stream ?? own.call?.stream;
  return stream !== undefined && typeof stream.pause === 'function' ? stream : undefined;
}
