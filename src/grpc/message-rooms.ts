// MessageRooms: the batches of one peer stream — a Replicas.Operations call
// (./receive-budget.ts) or an operations link (../link/port.ts) — within the
// memory for peers' batches (a budget of http_body_memory_limit of their
// own, ../rest/body-budget.ts), as a REST body or a unary gRPC message is
// within the node's other one. A message of SMALL_BODY bytes or more takes
// its length in the budget as soon as its first bytes give that length,
// before the rest of it is read;
// without room the stream is not read on, and flow control (HTTP/2's window,
// TCP's) holds the sender back until there is room. It waits for as long as
// the stream lives: refusing would end a busy peer's stream and every
// operation on it, whose operations time out on their own instead. The
// Operations endpoint claims each message's room as the message reaches it,
// in the order they came, and gives it back once its operations answered.
//
// The rooms a stream holds while it waits — of the messages let in and not
// run yet, the endpoint's `queued` ones included — wait with it: they are
// parked (BodyBudget.takeEventually), and do not keep another stream's wait
// from ending, which would keep theirs from ending in turn.
//
// A message let in with room must then arrive whole within its `deadline`
// (./arrival-deadline.ts), or its stream ends: room taken is room other
// peers wait for.
import { BodyBudget, Holder, SMALL_BODY } from '../rest/body-budget';
import { ArrivalDeadline } from './arrival-deadline';

export class MessageRooms implements Holder {
  // The rooms of the messages let in and not yet claimed, oldest first (0: a small one).
  private readonly rooms: number[] = [];
  private unclaimed = 0;
  /** The rooms of the batches the endpoint claimed and holds back, not run yet. */
  queued = 0;
  private _waiting = false;
  private readonly closed = new AbortController();

  /** `deadline`: what each message let in with room must arrive within (none: it may take as long as the stream lasts). */
  constructor(
    private readonly budget: BodyBudget,
    private readonly deadline: ArrivalDeadline | null = null,
  ) {}

  /** A message waits for room: its stream must not be read on. */
  get waiting(): boolean {
    return this._waiting;
  }

  /**
   * A message of `length` bytes begins. Returns true when it may be read
   * on; false when it waits for room: `then` is called once it has it (not
   * once the rooms were closed: after close() nothing is read). One message
   * at a time: no message begins while another waits.
   */
  admit(length: number, then: () => void): boolean {
    // Over: nothing more is read.
    if (this.closed.signal.aborted) return false;
    if (length < SMALL_BODY) {
      this.rooms.push(0);
      return true;
    }
    if (this.budget.takeNow(length)) {
      this.let(length);
      return true;
    }
    this._waiting = true;
    void this.budget.takeEventually(length, this, this.closed.signal, () => this.let(length)).then((ok) => {
      // Closed meanwhile: close() gave back the room let() counted.
      if (!ok || this.closed.signal.aborted) return;
      this._waiting = false;
      then();
    });
    return false;
  }

  parked(): number {
    return this.unclaimed + this.queued;
  }

  private let(room: number): void {
    this.rooms.push(room);
    this.unclaimed += room;
    this.deadline?.begin(room);
  }

  /** The last byte of the message let in last came. */
  arrived(): void {
    this.deadline?.end();
  }

  /** The room of the oldest message let in and not claimed yet (0 for a small one), which the caller now gives back. */
  claim(): number {
    const room = this.rooms.shift() ?? 0;
    this.unclaimed -= room;
    return room;
  }

  /** The stream is over: gives back the rooms nobody claimed; a message waiting for room waits no more. */
  close(): void {
    if (this.closed.signal.aborted) return;
    this.closed.abort();
    this.deadline?.end();
    for (const room of this.rooms) if (room > 0) this.budget.give(room);
    this.rooms.length = 0;
    this.unclaimed = 0;
  }
}
