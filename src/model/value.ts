// Values too large to hold whole: read from storage in parts, or arriving in
// parts from a client. A GET of a large value sends it as it is read, a POST
// of one writes it as it comes, and the node's memory holds a few pieces of
// each instead of the whole.
import { Version } from './version';

/** Reads one stored value in parts; each part is checked against its checksum before it is returned. */
export interface ValueReader {
  readonly size: number;
  /**
   * Whether the bytes are in a local file, which sendTo sends from; false
   * for a peer's value, whose sendTo sends nothing.
   */
  readonly inFile: boolean;
  /**
   * Value bytes [offset, offset + target.length) into target. Rejects with
   * Corruption when a part read fails its checksum; a value stored without
   * block checksums is checked as a whole, by the read that reaches its end.
   */
  read(offset: number, target: Buffer): Promise<void>;
  /**
   * Sends `prefix` (one byte per character, as 'latin1': a header block)
   * and then value bytes [offset, offset + n) to the socket whose
   * descriptor is `fd` (non-blocking; nothing else may write to it
   * meanwhile; open when called: it is duplicated before this returns, so
   * the send never reaches whatever gets the number once it is closed), the
   * value's bytes checked as read checks them, without copying them through
   * memory. The prefix leaves with the first part of the value, once that
   * part passed its check: when it is damaged nothing is sent. Resolves with
   * the bytes sent, the prefix's first (no value byte before all of it),
   * fewer than its length + n once the socket's buffer is full — none at
   * all from a reader whose bytes are not in a local file (a peer's value)
   * — and the rest is sent by sendTo once the socket drains, or read and
   * written. Rejects as read does, or when the socket fails.
   */
  sendTo(fd: number, offset: number, n: number, prefix?: string): Promise<number>;
  /**
   * Resolves once every byte of the value is known to be good: at once where
   * each read and send checked its own bytes (block checksums); for a value
   * stored without them, after reading the rest of it into its checksum. A
   * caller that stops short of the value's end awaits this before the last
   * of its bytes go out. Rejects as read does.
   */
  checkRest(): Promise<void>;
  /**
   * Value bytes [offset, offset + length) themselves, from a reader that
   * holds the whole value in memory (a bob peer's answer): an answer writes
   * them as they are, with no buffer of its own. Absent where bytes are read.
   */
  bytes?(offset: number, length: number): Buffer;
  /** Releases what the reader holds; later reads reject. */
  close(): void;
}

/** A value left in storage: its version, its size and a reader of its bytes. */
export interface OpenedValue {
  kind: 'found';
  version: Version;
  size: number;
  /** Its first bytes (up to 512), as stored and unchecked: for guessing its content type, never sent as the value. */
  head: Buffer;
  reader: ValueReader;
}

/**
 * Values larger than this are opened (read in parts) by the reads that may
 * open them, a node's own and a peer's; smaller ones are read whole: below
 * it a read in parts costs more than it saves.
 */
export const WHOLE_UP_TO = 64 * 1024;

export function isOpened(r: { kind: string } | null): r is OpenedValue {
  return r !== null && (r as OpenedValue).reader !== undefined;
}

/** A value arriving in pieces (a request body) whose size is known before its bytes. */
export interface IncomingValue {
  readonly size: number;
  /**
   * The whole value in memory, within the node's limits for values held
   * whole (rejects with the error a client gets when they are exceeded).
   */
  whole(): Promise<Buffer>;
  /**
   * The next pieces of the value, at least one; null once all `size` bytes
   * were handed out. Pieces handed out stay the caller's until it says they
   * are written (written()), and reading pauses while a few lots are (each
   * source says how many), so the caller's pace bounds the memory. Rejects
   * when the client goes away before the end.
   */
  next(): Promise<Buffer[] | null>;
  /** The oldest pieces handed out and not yet said written are written: their memory takes the next bytes. */
  written(): void;
  /** Stops reading: the rest of the value is not wanted (its writes failed). */
  cancel(): void;
}

export function isIncoming(v: Buffer | IncomingValue): v is IncomingValue {
  return !Buffer.isBuffer(v);
}

/**
 * Hands `value` to `write` lot by lot, each as soon as it is out, queued
 * behind the one being written: the writer goes from one to the next
 * without a turn of the event loop between them. A lot is said written
 * (value.written()) as soon as its write and those before it resolved,
 * whether or not the next lot has come. Rejects with the first failure of
 * a write or of the value, at once: a client that waits for the answer
 * before it sends more must not wait for its connection's timeout to learn
 * that its value cannot be stored. The caller cancels the value then.
 */
export async function writeInLots(value: IncomingValue, write: (pieces: Buffer[]) => Promise<unknown>): Promise<void> {
  let written: Promise<void> | null = null;
  for (let pieces = await value.next(); pieces !== null; pieces = await nextUnlessFailed(value, written)) {
    const lot = write(pieces);
    lot.catch(() => undefined); // its failure is told through `written`
    // In order: the failure told is the first lot's that failed, not that
    // of a lot after it, which may fail sooner for that one's sake.
    written = (written ?? Promise.resolve()).then(() => lot).then(() => value.written());
    written.catch(() => undefined); // awaited below, or raced with the next lot
  }
  await written;
}

/** The value's next pieces, or the failure of a write under way as soon as it fails. */
function nextUnlessFailed(value: IncomingValue, writing: Promise<unknown> | null): Promise<Buffer[] | null> {
  const next = value.next();
  if (writing === null) return next;
  next.catch(() => undefined); // lost the race when the write failed
  return Promise.race([next, writing.then(() => next)]);
}
