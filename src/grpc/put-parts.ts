// PutParts: the puts a peer sends this node in parts (Operation PUT_PART)
// on one Operations stream. Each is a PushedValue that the local storage's
// putIncoming writes as its parts come: a part is answered once written —
// until then its bytes are held with its batch, within the peer batches'
// budget, which is what paces the sender — and the part that completes the
// value is answered with the put's outcome. A put is dropped (its streams
// aborted, nothing of it readable) when its stream ends, when no part comes
// within `idleMs`, when a part does not follow the one before, or when the
// sender aborts it.
import { errors } from '../model/errors';
import { NodeApi } from '../model/node-api';
import { PushedValue, ValueRoom } from '../model/pushed-value';
import { formatVersion, Version } from '../model/version';
import { OperationMsg } from './proto';
import { BadRequest } from './server';

interface OpenPut {
  readonly value: PushedValue;
  /** Answers of parts pushed and not written yet, oldest first; the last part's waits for the put. */
  readonly waiting: Array<{ done: () => void; failed: (err: unknown) => void }>;
  /** Drops the put when no part comes in time; none once the value is whole. */
  timer: NodeJS.Timeout | null;
}

export class PutParts {
  private readonly open = new Map<string, OpenPut>();

  constructor(
    private readonly local: NodeApi,
    private readonly budget: ValueRoom,
    private readonly idleMs: number,
  ) {}

  /** Runs one PUT_PART of `key` at `version`; `done` or `failed` is called once, when it is answered. */
  take(op: OperationMsg, key: Buffer, version: Version, done: () => void, failed: (err: unknown) => void): void {
    const id = `${key.toString('hex')}@${formatVersion(version)}`;
    let put = this.open.get(id);
    if (op.abort) {
      if (put !== undefined) this.drop(id, put, errors.failed('the put in parts was aborted by its sender'));
      return done();
    }
    const size = op.size ?? 0;
    const offset = op.offset ?? 0;
    const bytes = op.value ?? Buffer.alloc(0);
    if (put === undefined) {
      if (offset !== 0) return failed(new BadRequest(`no put in parts of key ${key.toString('hex')} at version ${formatVersion(version)} is open here: its first part did not come, or it was dropped`));
      if (size <= 0) return failed(new BadRequest('a put in parts of no bytes'));
      put = this.begin(id, key, version, size);
    }
    const value = put.value;
    const wrong =
      size !== value.size
        ? `a part of a value of ${size} bytes, where the put's has ${value.size}`
        : offset !== value.received
          ? `a part at byte ${offset}, where the put's next byte is ${value.received}`
          : bytes.length === 0 || offset + bytes.length > size
            ? `a part of ${bytes.length} bytes at byte ${offset} of a value of ${size}`
            : null;
    if (wrong !== null) {
      const err = new BadRequest(wrong);
      this.drop(id, put, err);
      return failed(err);
    }
    const last = offset + bytes.length === size;
    if (put.timer !== null) clearTimeout(put.timer);
    // Once the value is whole, the put's own time is its writes'.
    put.timer = last ? null : this.idleTimer(id, put);
    const answer = { done, failed };
    put.waiting.push(answer);
    value.push([bytes], () => {
      // The last part's answer is the put's outcome.
      if (last) return;
      const i = put.waiting.indexOf(answer);
      if (i >= 0) put.waiting.splice(i, 1);
      done();
    });
  }

  /** The stream ended: every put still open is dropped. */
  dropAll(): void {
    for (const [id, put] of this.open) this.drop(id, put, errors.failed('the operations stream of the put in parts ended'));
  }

  private begin(id: string, key: Buffer, version: Version, size: number): OpenPut {
    const put: OpenPut = { value: new PushedValue(size, this.budget), waiting: [], timer: null };
    put.timer = this.idleTimer(id, put);
    this.open.set(id, put);
    const settled = (err: unknown) => {
      if (put.timer !== null) clearTimeout(put.timer);
      put.value.release();
      if (this.open.get(id) === put) this.open.delete(id);
      const waiting = put.waiting.splice(0);
      for (const w of waiting) {
        if (err === null) w.done();
        else w.failed(err);
      }
    };
    this.local.putIncoming(key, version, put.value).then(
      () => settled(null),
      (err: unknown) => settled(err ?? errors.failed('the put in parts failed')),
    );
    return put;
  }

  private idleTimer(id: string, put: OpenPut): NodeJS.Timeout {
    return setTimeout(() => this.drop(id, put, errors.failed(`no part of the put came within http_request_timeout (${this.idleMs} ms)`)), this.idleMs).unref();
  }

  // The put fails with `err`: its writes are aborted, its parts answered with it as it settles.
  private drop(id: string, put: OpenPut, err: Error): void {
    if (this.open.get(id) === put) this.open.delete(id);
    if (put.timer !== null) clearTimeout(put.timer);
    put.value.fail(err);
  }
}
