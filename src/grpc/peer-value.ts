// A large value held by an Oyster peer, read in parts over the operations
// stream as a local value is read from its file: a coordinator that holds
// no replica of a key sends a large value on as it arrives, one part at a
// time, instead of holding it whole. The peer announced the value (its
// version, size and first bytes: Operation.whole_up_to); each part is a GET
// of bytes [offset, offset + length) of that version, checked by the peer's
// engine as it reads it and read within the peer's budget. A write that
// replaced the value since fails the next part (the reader of a newer value
// must start again).
import { OpenedValue, ValueReader } from '../model/value';
import { Version } from '../model/version';
import { errors } from '../model/errors';

/** Bytes of one part asked for at most, and parts asked for at once by one read. */
export const PART = 1024 * 1024;
const PARTS_IN_FLIGHT = 4;

/** How the reader reaches the peer: a part of the value (length 0 with checkRest: only the check). */
export type ReadPart = (offset: number, length: number, checkRest: boolean) => Promise<Buffer>;

export function peerValue(version: Version, size: number, head: Buffer, readPart: ReadPart): OpenedValue {
  return { kind: 'found', version, size, head, reader: new PeerValueReader(size, readPart) };
}

class PeerValueReader implements ValueReader {
  readonly inFile = false;
  private closed = false;

  constructor(
    readonly size: number,
    private readonly readPart: ReadPart,
  ) {}

  /** Settles once no part is being read into `target` any more, a failed one included. */
  async read(offset: number, target: Buffer): Promise<void> {
    if (offset + target.length > this.size) throw errors.internal(`bytes [${offset}, ${offset + target.length}) of a value of ${this.size} bytes`);
    let next = 0;
    let failed = false;
    const one = async (): Promise<void> => {
      while (next < target.length && !failed) {
        const at = next;
        const n = Math.min(PART, target.length - at);
        next += n;
        this.open();
        try {
          const part = await this.readPart(offset + at, n, false);
          if (part.length !== n) throw errors.failed(`the peer sent ${part.length} bytes of a part of ${n}`);
          if (!failed) part.copy(target, at);
        } catch (err) {
          failed = true;
          throw err;
        }
      }
    };
    const settled = await Promise.allSettled(Array.from({ length: Math.min(PARTS_IN_FLIGHT, Math.ceil(target.length / PART)) }, one));
    for (const s of settled) if (s.status === 'rejected') throw s.reason;
  }

  /** Nothing goes to the socket from here: the bytes are not in a local file, and are read and written. */
  async sendTo(): Promise<number> {
    this.open();
    return 0;
  }

  async checkRest(): Promise<void> {
    this.open();
    await this.readPart(0, 0, true);
  }

  close(): void {
    this.closed = true;
  }

  private open(): void {
    if (this.closed) throw errors.failed('the value reader is closed');
  }
}
