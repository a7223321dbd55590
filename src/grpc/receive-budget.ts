// gRPC request messages within the node's memory for values in flight
// (http_body_memory_limit, ../rest/body-budget.ts), as REST bodies are:
// grpc-js holds a request's message whole before the call sees it, so a
// message of SMALL_BODY bytes or more is read only once the budget has
// room for its length, which its first bytes give (the gRPC frame prefix:
// a flag byte, then the length, u32 big-endian). Until then the call's
// HTTP/2 stream stays paused, and flow control holds the client back after
// one window (64 KiB). The room is given back when the call ends. A message
// that finds no room within the budget's wait is refused with
// RESOURCE_EXHAUSTED, unread; a client that stalls mid-message keeps its
// room only until its call's request is due (http_request_timeout from the
// call's start, ./call-limit.ts). A call with a stream of requests
// (Replicas.Operations) has each of its messages let in so as well
// (./message-rooms.ts), for as long as the call lasts, and each must arrive
// within `receiveTimeoutMs` (http_request_timeout) of its stream being read
// (./arrival-deadline.ts).
//
// An Exist holds far more than its message while it runs: each key becomes
// objects of its own (decoded, grouped by vdisk, answered), about 30 times
// the message at its peak (100,000 keys, a message of 1.8 MB: +57 MB). Its
// room is EXIST_COST times its length, and one whose room would be more
// than the whole budget is refused unread (1,000,000 keys took the node
// from 110 to 616 MB).
import type { Http2Stream } from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { BodyBudget, SMALL_BODY } from '../rest/body-budget';
import { callStream, eachMessageLength, endCall, firstMessageLength } from './call-stream';
import { ArrivalDeadline } from './arrival-deadline';
import { MessageRooms } from './message-rooms';

const EXIST_PATH = '/bob_storage.BobApi/Exist';
/** What an Exist holds while it runs, per byte of its keys. */
export const EXIST_COST = 32;

/** The budgets of the messages clients send, and of peers' batches of operations, apart (../node/node.ts says why). */
export interface ReceiveBudgets {
  messages: BodyBudget;
  batches: BodyBudget;
}

export function receiveWithinBudget(budgets: ReceiveBudgets, receiveTimeoutMs: number): grpc.ServerInterceptor {
  return (method, call) => {
    // grpc-js's own call at the end of the chain holds the stream; it keeps it paused until the call asks to read.
    const stream = callStream(call);
    if (method.requestStream && stream !== undefined) return new GatedStreamCall(call, stream, budgets.batches, receiveTimeoutMs);
    if (stream !== undefined) gate(stream, call, budgets.messages, method.path === EXIST_PATH ? EXIST_COST : 1);
    // grpc-js passes each interceptor's call on through the interface alone:
    // the call itself, without a layer that forwards every event, costs nothing more per call.
    return call as grpc.ServerInterceptingCall;
  };
}

/**
 * A call with a stream of requests, whose messages come within the budget:
 * while a message waits for room, the HTTP/2 stream stays paused, and
 * grpc-js is not asked for the next message, which would resume it.
 */
class GatedStreamCall extends grpc.ServerInterceptingCall {
  private readWanted = false;
  readonly rooms: MessageRooms;

  constructor(
    next: grpc.ServerInterceptingCallInterface,
    private readonly stream: Http2Stream,
    budget: BodyBudget,
    receiveTimeoutMs: number,
  ) {
    super(next);
    const stalled = (details: string) => endCall(stream, this, grpc.status.DEADLINE_EXCEEDED, details);
    this.rooms = new MessageRooms(budget, new ArrivalDeadline(stream, receiveTimeoutMs, stalled));
    eachMessageLength(
      stream,
      (length, next) => this.admit(length, next),
      () => this.rooms.arrived(),
    );
    stream.once('close', () => this.rooms.close());
  }

  private admit(length: number, next: () => void): boolean {
    const admitted = this.rooms.admit(length, () => {
      next();
      if (this.rooms.waiting) return;
      this.stream.resume();
      if (this.readWanted) {
        this.readWanted = false;
        super.startRead();
      }
    });
    if (!admitted) this.stream.pause();
    return admitted;
  }

  override startRead(): void {
    if (this.rooms.waiting) this.readWanted = true;
    else super.startRead();
  }
}

/** The rooms of the messages of a call with a stream of requests (`call` as its handler has it); null for a call not gated. */
export function streamRooms(call: object): MessageRooms | null {
  const gated = (call as { call?: unknown }).call;
  return gated instanceof GatedStreamCall ? gated.rooms : null;
}

// Reads the message's length from its first bytes; from SMALL_BODY bytes of
// room on (`cost` per byte of the message), keeps the stream paused until
// the budget has that room. The room goes back as the stream closes, the
// call over.
function gate(stream: Http2Stream, call: grpc.ServerInterceptingCallInterface, budget: BodyBudget, cost: number): void {
  firstMessageLength(stream, (size) => {
    const room = size * cost;
    if (room < SMALL_BODY) return;
    if (cost > 1 && room > budget.limit) {
      const why = `an Exist of ${size} bytes would hold about ${room} bytes while it runs, more than http_body_memory_limit (${budget.limit}): ask for fewer keys at once`;
      endCall(stream, call, grpc.status.RESOURCE_EXHAUSTED, why);
      return;
    }
    stream.pause();
    void budget.take(room).then((ok) => {
      if (stream.closed || stream.destroyed) {
        if (ok) budget.give(room);
        return;
      }
      if (!ok) {
        endCall(stream, call, grpc.status.RESOURCE_EXHAUSTED, budget.refusal);
        return;
      }
      stream.once('close', () => budget.give(room));
      stream.resume();
    });
  });
}
