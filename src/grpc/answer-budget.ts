// gRPC answers of large values within the node's memory for values in flight
// (http_body_memory_limit, ../rest/body-budget.ts), as REST's answers are:
// a gRPC answer carries its value in one message, which grpc-js builds
// whole, so a value the store leaves opened (over 64 KiB) is read only once
// the budget has room for its size, and holds that room until its answer
// has left. A value larger than the whole budget is never read for gRPC
// (REST reads it in parts). What finds no room within the budget's wait is
// refused with RESOURCE_EXHAUSTED, unread.
import http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { OpenedValue } from '../model/value';
import { StoredValue } from '../model/version';
import { BodyBudget, VALUE_BUFFER } from '../rest/body-budget';
import { callStream } from './call-stream';
import { StatusError } from './status';

/** A value read whole for an answer, and the room it holds in the budget until give() (once; later calls do nothing). */
export interface HeldValue {
  record: StoredValue;
  give(): void;
}

/**
 * Reads `v` whole — or its bytes [offset, offset + length) — within
 * `budget`, closing its reader. With `pooled`, bytes that fit in one of the
 * budget's buffers are read into one, which give() hands back to it: the
 * caller must be done with them by then (they are copied into an answer).
 * Rejects with StatusError(RESOURCE_EXHAUSTED) when they are more than the
 * budget or no room came within its wait, and as the reader does when the
 * read fails; nothing is held then.
 */
export async function readWithinBudget(v: OpenedValue, budget: BodyBudget, offset = 0, length = v.size - offset, pooled = false): Promise<HeldValue> {
  try {
    if (length > budget.limit) {
      throw new StatusError(
        grpc.status.RESOURCE_EXHAUSTED,
        `a value of ${length} bytes is larger than http_body_memory_limit (${budget.limit}): a gRPC answer holds it whole; read it over REST`,
      );
    }
    if (!(await budget.take(length))) {
      throw new StatusError(grpc.status.RESOURCE_EXHAUSTED, budget.refusal);
    }
    // A fresh buffer per answer would have V8 collect its whole heap every few tens of MiB.
    const buffer = pooled && length <= VALUE_BUFFER ? budget.buffer() : null;
    let held = true;
    const give = () => {
      if (!held) return;
      held = false;
      budget.give(length);
      if (buffer !== null) budget.keep(buffer);
    };
    try {
      const value = buffer !== null ? buffer.subarray(0, length) : Buffer.allocUnsafe(length);
      await v.reader.read(offset, value);
      return { record: { kind: 'found', version: v.version, value }, give };
    } catch (err) {
      // Not the buffer: a failed read is not known to be done writing into it.
      held = false;
      budget.give(length);
      throw err;
    }
  } finally {
    v.reader.close();
  }
}

/**
 * Gives `held` back once the answer of `call` (a handler's call, or
 * grpc-js's own) has left: its HTTP/2 stream closed. A client that has not
 * taken the whole answer within `sendTimeoutMs` (http_request_timeout) has
 * its stream reset, which gives the room back too.
 */
export function holdUntilSent(call: object, held: HeldValue, sendTimeoutMs: number): void {
  const stream = callStream(call);
  if (stream === undefined || stream.closed || stream.destroyed) {
    // Nothing to watch: the answer is built and handed over by the time this runs.
    setImmediate(held.give);
    return;
  }
  const timer = setTimeout(() => stream.close(http2.constants.NGHTTP2_CANCEL), sendTimeoutMs);
  stream.once('close', () => {
    clearTimeout(timer);
    held.give();
  });
}
