// A bob peer's answer of a large value within the node's memory for values
// in flight (http_body_memory_limit, ../rest/body-budget.ts). bob's Get
// answers with the whole value in one message, which grpc-js holds whole
// before the call sees it (an Oyster peer sends a large value in parts
// instead, peer-value.ts). So, as a request's message is
// (receive-budget.ts), the answer is let in only once the budget has room
// for its length, which its first bytes give (the gRPC frame prefix: a flag
// byte, then the length, u32 big-endian); until then its HTTP/2 stream
// stays paused, and flow control holds the peer back after the channel's
// window. The value then holds that room until the answer made of it has
// left: it comes opened, read from memory, and closing its reader gives the
// room back — as does its collection, should a caller drop it unclosed. A
// message larger than the whole budget is refused, unread.
import * as grpc from '@grpc/grpc-js';
import type { Http2Stream } from 'node:http2';
import { errors } from '../model/errors';
import { OpenedValue, ValueReader } from '../model/value';
import { Version } from '../model/version';
import { BodyBudget, SMALL_BODY } from '../rest/body-budget';
import { HeldValue } from './answer-budget';
import { clientCallStream, firstMessageLength } from './call-stream';

/** The room a peer's answer holds in the budget; given back once. */
export class AnswerRoom {
  private bytes = 0;
  private over = false;
  private waiting = false;
  private refused: string | null = null;

  constructor(
    private readonly budget: BodyBudget,
    private readonly peer: string,
  ) {}

  /**
   * Why the answer failed on this side, if it did: refused (the call
   * cancelled), or still waiting for room when the call ended (its deadline).
   */
  get refusal(): string | null {
    return this.refused ?? (this.waiting ? this.budget.refusal : null);
  }

  /** Whether the answer holds room (its message was of SMALL_BODY bytes or more). */
  get held(): boolean {
    return this.bytes > 0;
  }

  /** Lets the answer of `call`, a unary call just made, in within the budget. */
  watch(call: grpc.ClientUnaryCall): void {
    call.once('metadata', () => {
      const stream = clientCallStream(call);
      if (stream !== undefined) this.gate(stream, call);
    });
  }

  /** Gives the room back (also to a take still waiting: it gives back what it gets). */
  give(): void {
    if (this.over) return;
    this.over = true;
    if (this.bytes > 0) this.budget.give(this.bytes);
    this.bytes = 0;
  }

  private gate(stream: Http2Stream, call: grpc.ClientUnaryCall): void {
    firstMessageLength(stream, (size) => {
      if (size < SMALL_BODY) return;
      if (size > this.budget.limit) {
        this.refuse(
          call,
          `bob peer ${this.peer} answers with a value of ${size} bytes, more than http_body_memory_limit (${this.budget.limit}): a bob node sends a value whole, and it is held whole; raise the limit to read it through this node`,
        );
        return;
      }
      stream.pause();
      this.waiting = true;
      void this.budget.take(size).then((ok) => {
        this.waiting = false;
        if (!ok) return this.refuse(call, this.budget.refusal);
        if (this.over) return this.budget.give(size);
        this.bytes = size;
        stream.resume();
      });
    });
  }

  private refuse(call: grpc.ClientUnaryCall, why: string): void {
    if (this.over) return;
    this.refused = why;
    call.cancel();
  }
}

/**
 * The value a bob peer answered with, opened: read from memory, holding
 * `room` until its reader is closed (or collected unclosed).
 */
export function heldValue(version: Version, value: Buffer, room: AnswerRoom): OpenedValue {
  // Its first bytes, copied: a view would keep the whole value from the collector.
  return { kind: 'found', version, size: value.length, head: Buffer.from(value.subarray(0, 512)), reader: new HeldValueReader(version, value, room) };
}

/**
 * The record and the room of a value heldValue opened, for an answer that
 * holds it whole until it has left (answer-budget.ts holdUntilSent); null
 * for any other value. The reader is closed without giving the room back.
 */
export function takeHeld(v: OpenedValue): HeldValue | null {
  return v.reader instanceof HeldValueReader ? v.reader.hand() : null;
}

// Rooms of readers dropped unclosed: their values go with them.
const unclosed = new FinalizationRegistry<AnswerRoom>((room) => room.give());

class HeldValueReader implements ValueReader {
  readonly inFile = false;
  readonly size: number;
  private value: Buffer | null;

  constructor(
    private readonly version: Version,
    value: Buffer,
    private readonly room: AnswerRoom,
  ) {
    this.size = value.length;
    this.value = value;
    unclosed.register(this, room, this);
  }

  async read(offset: number, target: Buffer): Promise<void> {
    this.bytes(offset, target.length).copy(target);
  }

  bytes(offset: number, length: number): Buffer {
    const value = this.open();
    if (offset + length > this.size) throw errors.internal(`bytes [${offset}, ${offset + length}) of a value of ${this.size} bytes`);
    return value.subarray(offset, offset + length);
  }

  /** Nothing goes to the socket from here: the bytes are not in a local file. */
  async sendTo(): Promise<number> {
    this.open();
    return 0;
  }

  /** The peer sent the value whole, with no checksum of its own to check. */
  async checkRest(): Promise<void> {
    this.open();
  }

  close(): void {
    if (this.value === null) return;
    this.value = null;
    unclosed.unregister(this);
    this.room.give();
  }

  hand(): HeldValue {
    const value = this.open();
    this.value = null;
    unclosed.unregister(this);
    return { record: { kind: 'found', version: this.version, value }, give: () => this.room.give() };
  }

  private open(): Buffer {
    if (this.value === null) throw errors.failed('the value reader is closed');
    return this.value;
  }
}
