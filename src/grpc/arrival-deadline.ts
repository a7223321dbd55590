// ArrivalDeadline: a peer stream's message that took room in the budget
// (./message-rooms.ts) arrives whole within http_request_timeout of the
// stream being read, or the stream ends. Without it a sender that stops in
// the middle of a large batch keeps that batch's room for as long as its
// connection stays open, and the batches of every other peer wait for it.
//
// Only the time the stream is read counts: a stream is paused while one of
// its messages waits for room, or while the Operations endpoint has enough
// of its operations running, and flow control then holds the sender back —
// time the node spends, not the sender. The stream's own 'pause' and
// 'resume' tell the clock when to stop and go on.
import type { Readable } from 'node:stream';

export class ArrivalDeadline {
  // What is left of the reading time of the message coming, ms.
  private left = 0;
  // When the clock last went on (performance.now()), while it runs.
  private since = 0;
  private timer: NodeJS.Timeout | null = null;
  private coming = false;
  private length = 0;

  /** `stalled` is called, once per message, with what it says of the message that took more than `limitMs` of reading; the caller ends the stream. */
  constructor(
    private readonly stream: Readable,
    private readonly limitMs: number,
    private readonly stalled: (details: string) => void,
  ) {
    stream.on('pause', () => this.stop());
    // 'resume' comes a tick after resume(), by when the stream may be paused again: go() asks.
    stream.on('resume', () => this.go());
    stream.once('close', () => this.end());
  }

  /** A message of `length` bytes was let in: its clock starts (it runs while the stream is read). */
  begin(length: number): void {
    this.stop();
    this.coming = true;
    this.length = length;
    this.left = this.limitMs;
    this.go();
  }

  /** The message's last byte came (or the stream is over). */
  end(): void {
    this.stop();
    this.coming = false;
  }

  private go(): void {
    if (!this.coming || this.timer !== null || this.stream.isPaused() || this.stream.destroyed) return;
    this.since = performance.now();
    this.timer = setTimeout(() => {
      this.timer = null;
      this.coming = false;
      this.stalled(`a batch of ${this.length} bytes did not arrive within http_request_timeout (${this.limitMs} ms) of being read`);
    }, Math.max(1, this.left));
  }

  private stop(): void {
    if (this.timer === null) return;
    clearTimeout(this.timer);
    this.timer = null;
    this.left -= performance.now() - this.since;
  }
}
