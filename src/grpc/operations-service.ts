// Replicas.Operations, the serving end: the data operations another Oyster
// node sends this one as a replica (BobApi's force_node Put, Get, Exist and
// Delete, and puts whose values come in parts: ./put-parts.ts), batched on
// one long-lived stream per peer (oyster.proto). Each
// operation runs as its force_node twin does, on this node's storage; the
// results of one event-loop turn go back as one batch, in the order they
// finish. A peer that sends faster than this node answers is held back by
// the stream's flow control: past MAX_IN_FLIGHT operations not yet answered
// the stream is not read.
import * as grpc from '@grpc/grpc-js';
import { MaybePromise } from '../model/maybe-promise';
import { ExistAnswer, GetSource, NodeApi } from '../model/node-api';
import { isOpened, OpenedValue } from '../model/value';
import { BodyBudget, SMALL_BODY } from '../rest/body-budget';
import { MessageRooms } from './message-rooms';
import { readWithinBudget } from './answer-budget';
import { compareVersions, formatVersion, StoredRecord, Version } from '../model/version';
import { errors, isOysterError } from '../model/errors';
import { BatchWeight, decodeOperationBatch, newResult, setVersion, weighBatch } from './operation-codec';
import { OperationKind, OperationMsg, ResultBatchMsg, ResultMsg } from './proto';
import { PutParts } from './put-parts';
import { authorizeCall, BadRequest, CallParts, failureStatus } from './server';
import { invalidArgument } from './status';
import { encodeStates, fieldsVersion } from './versions';

/** Operations of one stream received and not yet answered, beyond which it is not read. */
export const MAX_IN_FLIGHT = 4096;
/** Small batches' bytes (each under SMALL_BODY, taking no room) one stream may have running, beyond which it is not read. */
const SMALL_BATCHES_BYTES = 1024 * 1024;
/**
 * A batch of several operations that holds more than the budget runs once
 * nothing else is held but what waiting streams hold, up to this many bytes
 * (a peer cuts its batches at 4 MiB of weight, an Exist of 4,096 keys of up
 * to 64 bytes weighs 8.5 MB); a larger one ends its stream.
 */
const ALONE_BYTES = 16 * 1024 * 1024;

/**
 * One peer's stream of operation batches, as the endpoint uses it: a gRPC
 * call of Replicas.Operations, or an operations link (src/link/port.ts).
 * emit('error', status) ends it with that status.
 */
export interface OperationsCall {
  readonly metadata: grpc.Metadata;
  readonly cancelled: boolean;
  getPeer(): string;
  /** Sends a batch; `written` is called once its bytes were taken from the batch (sent, or copied to be sent). */
  write(batch: ResultBatchMsg, written?: () => void): boolean;
  end(): void;
  pause(): unknown;
  resume(): unknown;
  emit(event: 'error', status: Partial<grpc.StatusObject>): boolean;
  /** A batch's bytes, an encoded OperationBatch. */
  on(event: 'data', listener: (batch: Buffer) => void): unknown;
  /** The bytes of a batch from 'data' are read no more, nor any part of them (its operations answered): its buffer may take another batch. */
  release?(batch: Buffer): void;
  on(event: 'end' | 'cancelled', listener: () => void): unknown;
  once(event: 'drain', listener: () => void): unknown;
}

export interface OperationsParts extends CallParts {
  local: NodeApi;
  keySize: number;
  /** What results with large values are read within (answer-budget.ts). */
  budget: BodyBudget;
  /** What the batches are held within: a budget of their own, which the MessageRooms of their streams take from too. */
  batchBudget: BodyBudget;
  /** How long a put in parts waits for its next part before it is dropped (node.yaml http_request_timeout), ms. */
  partsIdleMs: number;
}

const SOURCES: Record<number, GetSource> = { 0: 'all', 1: 'normal', 2: 'alien' };

function oneKey(op: OperationMsg, keySize: number): Buffer {
  if (op.keys.length !== 1) throw new BadRequest(`${op.keys.length} keys: one is expected`);
  return checkedKey(op.keys[0], keySize);
}

function checkedKey(k: Buffer, keySize: number): Buffer {
  if (!Buffer.isBuffer(k) || k.length !== keySize) throw new BadRequest(`key of ${k?.length ?? 0} bytes: keys are ${keySize} bytes`);
  return k;
}

function versionOf(op: OperationMsg): Version {
  // The same checks as a version in BobApi's BlobMeta.
  const v = fieldsVersion(op.timestamp, op.tick, op.node);
  if (v === null) throw new BadRequest(`version ${String(op.timestamp)}.${String(op.tick)}.${String(op.node)} is out of range`);
  return v;
}

function sourceOf(op: OperationMsg): GetSource {
  const s = SOURCES[op.source ?? 0];
  if (!s) throw new BadRequest(`unknown GetSource ${String(op.source)}`);
  return s;
}

function recordResult(id: number, r: StoredRecord | null): ResultMsg {
  const res = newResult(id);
  if (r === null) return res;
  res.kind = r.kind === 'deleted' ? 2 : 1;
  if (r.kind === 'found') res.value = r.value;
  return setVersion(res, r.version);
}

function statesResult(id: number, answers: ExistAnswer[]): ResultMsg {
  const res = newResult(id);
  // This node's answers always carry versions.
  res.states = encodeStates(answers.map((a) => (a === null || a.version === null ? null : { kind: a.kind, version: a.version })));
  return res;
}

/** The result of an operation that failed with `err`. */
function failedResult(parts: OperationsParts, id: number, err: unknown): ResultMsg {
  const status = failureStatus(err, 'Operations', parts.log);
  const r = newResult(id);
  r.code = status.code ?? grpc.status.UNKNOWN;
  r.details = status.details ?? '';
  // The damaged record's version travels with a corruption: the coordinator
  // may pass over it when another replica holds something newer.
  if (isOysterError(err, 'Corruption') && err.version) setVersion(r, err.version);
  return r;
}

/**
 * A GET of a part of a large value (Operation.offset, length, check_rest):
 * the bytes, read within the budget, and what gives their room back; fails
 * when the key's newest record is no longer the version `want` (a write
 * came since the value was announced: its reader reads it again).
 */
async function readPart(op: OperationMsg, want: Version, r: StoredRecord | OpenedValue | null, budget: BodyBudget): Promise<{ result: ResultMsg; give?: () => void }> {
  if (!isOpened(r) || compareVersions(r.version, want) !== 0) {
    if (isOpened(r)) r.reader.close();
    throw errors.failed(`the key's newest record is no longer version ${formatVersion(want)}`);
  }
  const offset = op.offset ?? 0;
  const length = op.length ?? 0;
  try {
    if (offset + length > r.size) throw new BadRequest(`bytes [${offset}, ${offset + length}) of a value of ${r.size} bytes`);
    if (op.check_rest) await r.reader.checkRest();
  } catch (err) {
    r.reader.close();
    throw err;
  }
  if (length === 0) {
    r.reader.close();
    return { result: newResult(op.id) };
  }
  const held = await readWithinBudget(r, budget, offset, length, true);
  return { result: recordResult(op.id, held.record), give: held.give };
}

/**
 * Runs one operation on this node's storage and hands its result, failures
 * included, to `answer`: at once when the storage answered at once (a read
 * from memory), otherwise in the one reaction to the storage's promise. A
 * large value is read whole within the budget, and its result comes with
 * the function that gives its room back, for once it has left.
 */
function run(parts: OperationsParts, putParts: PutParts, op: OperationMsg, answer: (r: ResultMsg, give?: () => void) => void): void {
  const { local, keySize, budget } = parts;
  const id = op.id;
  const failed = (err: unknown) => answer(failedResult(parts, id, err));
  const done = () => answer(newResult(id));
  const settle = <T>(v: MaybePromise<T>, result: (value: T) => ResultMsg) => {
    if (!(v instanceof Promise)) return answer(result(v));
    v.then((value) => {
      let r: ResultMsg;
      try {
        r = result(value);
      } catch (err) {
        return failed(err);
      }
      answer(r);
    }, failed);
  };
  try {
    switch (op.kind) {
      case OperationKind.PUT:
        local.put(oneKey(op, keySize), versionOf(op), Buffer.isBuffer(op.value) ? op.value : Buffer.alloc(0), op.remote_nodes ?? []).then(done, failed);
        break;
      case OperationKind.PUT_PART:
        putParts.take(op, oneKey(op, keySize), versionOf(op), done, failed);
        break;
      case OperationKind.GET: {
        const part = (op.length ?? 0) > 0 || op.check_rest === true;
        const want = part ? versionOf(op) : null;
        const record = (r: StoredRecord | OpenedValue | null) => {
          if (want !== null) return void readPart(op, want, r, budget).then((held) => answer(held.result, held.give), failed);
          if (!isOpened(r)) return answer(recordResult(id, r));
          const wholeUpTo = op.whole_up_to ?? 0;
          if (wholeUpTo > 0 && r.size > wholeUpTo) {
            // Announced, to be read in parts: its size, and its first bytes for guessing its type.
            r.reader.close();
            const res = recordResult(id, { kind: 'found', version: r.version, value: r.head });
            res.size = r.size;
            return answer(res);
          }
          readWithinBudget(r, budget, 0, r.size, true).then((held) => answer(recordResult(id, held.record), held.give), failed);
        };
        const r = local.get(oneKey(op, keySize), sourceOf(op), true);
        if (r instanceof Promise) r.then(record, failed);
        else record(r);
        break;
      }
      case OperationKind.EXIST:
        settle(
          local.exist(
            op.keys.map((k) => checkedKey(k, keySize)),
            sourceOf(op),
          ),
          (answers) => statesResult(id, answers),
        );
        break;
      case OperationKind.DELETE:
        local.delete(oneKey(op, keySize), versionOf(op), { isAlien: op.is_alien ?? false, forceAlienNodes: op.force_alien_nodes ?? [] }).then(done, failed);
        break;
      default:
        throw new BadRequest(`unknown operation kind ${String(op.kind)}`);
    }
  } catch (err) {
    failed(err);
  }
}

/** A batch received, from its arrival until its last operation answered. */
interface Batch {
  /** Its bytes, decoded once it has its room. */
  readonly message: Buffer;
  /** Its operations not answered yet. */
  left: number;
  /** What it holds in the budget: the room its message took as it arrived (./message-rooms.ts), and `extra` once taken. */
  room: number;
  /** Room still to take before it runs: what its operations hold beyond its message (an Exist's keys, many small operations). */
  extra: number;
  /** What it holds outside the budget, a small batch (under SMALL_BODY). */
  small: number;
}

/**
 * The Operations streams this node serves. close() ends them as the node
 * stops: a peer keeps its stream open for as long as it runs, and the
 * server's graceful shutdown waits for every stream to end.
 *
 * A stream's batches hold memory within the budget of peers' batches (a
 * second http_body_memory_limit, apart from the one of the writes this
 * node coordinates, which wait for peers' batches) from their arrival until
 * their last operation answered: the room their
 * message took as it arrived (`rooms`, ./message-rooms.ts), and what their
 * operations will hold beyond it (weighed from the message's bytes), taken
 * before they are decoded. Small batches take no room, as small REST bodies
 * do not; a stream has at most SMALL_BATCHES_BYTES of them running. A batch
 * that waits for room holds back the batches after it, and the stream is
 * not read meanwhile. One that holds more than the whole budget runs alone
 * if it is one value, or several operations within ALONE_BYTES; an Exist
 * alone is refused, and a larger batch ends the stream.
 */
export class OperationsEndpoint {
  private readonly open = new Set<() => void>();

  constructor(private readonly parts: OperationsParts) {}

  /** Ends every stream once its operations are answered; operations that come meanwhile are refused (UNAVAILABLE). */
  close(): void {
    for (const close of [...this.open]) close();
  }

  /** Serves a stream; `rooms`: where its messages' rooms are claimed (null: they took none). */
  readonly handle = (call: OperationsCall, rooms: MessageRooms | null): void => {
    const { parts } = this;
    const { auth, onAnswer, batchBudget } = parts;
    // The rooms of its messages and of its batches waiting to run.
    const held = rooms ?? new MessageRooms(batchBudget);
    // The puts in parts the peer sends on this stream.
    const putParts = new PutParts(parts.local, parts.budget, parts.partsIdleMs);
    let inFlight = 0;
    let smallBytes = 0;
    let ended = false;
    let closing = false;
    let done = false;
    let paused = false;
    let out: ResultMsg[] = [];
    // Batches received and not run yet, oldest first: they wait for the
    // stream's credentials, or for room.
    const waiting: Batch[] = [];
    let taking = false;
    const stopTaking = new AbortController();
    // The rooms in the budget (and the buffers) that results with large
    // values hold: those in `out`, then those of each batch being written,
    // given back once the stream took its bytes — not before: a batch may
    // wait in the stream unserialized.
    let holding: Array<() => void> = [];
    const writing = new Set<Array<() => void>>();
    const giveBack = (gives: Array<() => void>) => {
      for (const give of gives) give();
    };
    const over = () => {
      done = true;
      this.open.delete(close);
      putParts.dropAll();
      giveBack(holding);
      holding = [];
      for (const gives of writing) giveBack(gives);
      writing.clear();
      // Batches that never ran: their operations will not answer; nor will
      // those of messages let in and not yet read, which a client that keeps
      // its side of a finished call open would otherwise hold for good.
      stopTaking.abort();
      for (const b of waiting) batchBudget.give(b.room);
      waiting.length = 0;
      held.queued = 0;
      held.close();
    };
    // The stream is read while fewer than MAX_IN_FLIGHT operations and
    // SMALL_BATCHES_BYTES of small batches run and no batch waits; once
    // paused, until half of those.
    const flow = () => {
      if (!paused && (inFlight >= MAX_IN_FLIGHT || smallBytes >= SMALL_BATCHES_BYTES || waiting.length > 0)) {
        paused = true;
        call.pause();
      } else if (paused && inFlight < MAX_IN_FLIGHT / 2 && smallBytes < SMALL_BATCHES_BYTES / 2 && waiting.length === 0) {
        paused = false;
        call.resume();
      }
    };
    let flushing = false;
    const finish = (status: Partial<grpc.StatusObject> | null) => {
      if (done) return;
      over();
      onAnswer?.('Operations', grpc.status[status?.code ?? grpc.status.OK]);
      if (status) call.emit('error', status);
      else call.end();
    };
    const flush = () => {
      flushing = false;
      if (done || call.cancelled) return;
      const results = out;
      out = [];
      const gives = holding;
      holding = [];
      inFlight -= results.length;
      let more = true;
      if (results.length > 0) {
        if (gives.length > 0) writing.add(gives);
        const written = () => {
          if (writing.delete(gives)) giveBack(gives);
        };
        more = call.write({ results }, gives.length > 0 ? written : undefined);
      }
      flow();
      if (!more) {
        // The peer reads slowly: no more results until it took these.
        flushing = true;
        call.once('drain', flush);
        return;
      }
      if ((ended || closing) && inFlight === 0) finish(null);
    };
    const answer = (r: ResultMsg, give?: () => void) => {
      if (give !== undefined) {
        if (done) give();
        else holding.push(give);
      }
      out.push(r);
      if (!flushing) {
        flushing = true;
        setImmediate(flush);
      }
    };
    const close = () => {
      closing = true;
      if (!flushing) {
        flushing = true;
        setImmediate(flush);
      }
    };
    this.open.add(close);
    const authorized = authorizeCall(auth, 'Operations', call);
    // Once the stream's credentials are known good, operations run as they come.
    let allowed = false;
    const runBatch = (b: Batch) => {
      let ops: OperationMsg[];
      try {
        ops = decodeOperationBatch(b.message).ops;
      } catch (err) {
        batchBudget.give(b.room);
        finish(invalidArgument(`malformed Operations batch: ${(err as Error).message}`));
        return;
      }
      const answered = (r: ResultMsg, give?: () => void) => {
        answer(r, give);
        if (--b.left > 0) return;
        batchBudget.give(b.room);
        call.release?.(b.message);
        smallBytes -= b.small;
        if (!done) flow();
      };
      for (const op of ops) {
        if (closing) answered({ id: op.id, code: grpc.status.UNAVAILABLE, details: 'HolderTemporaryUnavailable the node is stopping' });
        else run(parts, putParts, op, answered);
      }
    };
    // Runs the waiting batches in order, each once it has its room.
    const pump = () => {
      while (waiting.length > 0 && allowed && !done && !taking) {
        const b = waiting[0];
        if (b.extra > 0) {
          // Its waiting rooms are parked: one that holds more than the limit runs once nothing else is held.
          const park = () => {
            held.queued += b.extra;
            b.room += b.extra;
            b.extra = 0;
          };
          if (!batchBudget.takeNow(b.extra)) {
            taking = true;
            void batchBudget.takeEventually(b.extra, held, stopTaking.signal, park).then((ok) => {
              taking = false;
              // Over meanwhile: over() gave back the room park() counted in the batch.
              if (ok && !done) pump();
            });
            break;
          }
          park();
        }
        waiting.shift();
        held.queued -= b.room;
        runBatch(b);
      }
      flow();
    };
    authorized.then(
      () => {
        allowed = true;
        pump();
      },
      (err: unknown) => finish(failureStatus(err, 'Operations', parts.log)),
    );
    call.on('data', (message: Buffer) => {
      const room = held.claim();
      if (done) return batchBudget.give(room);
      let weight: BatchWeight;
      try {
        weight = weighBatch(message);
      } catch (err) {
        batchBudget.give(room);
        finish(invalidArgument(`malformed Operations batch: ${(err as Error).message}`));
        return;
      }
      const cost = weight.bytes;
      if (cost > batchBudget.limit && (weight.ops > 1 ? cost > ALONE_BYTES : weight.firstKind === OperationKind.EXIST)) {
        batchBudget.give(room);
        const why = `holding about ${cost} bytes while it runs, more than http_body_memory_limit (${batchBudget.limit})`;
        if (weight.ops > 1) return finish({ code: grpc.status.RESOURCE_EXHAUSTED, details: `a batch of ${weight.ops} operations ${why}: send smaller batches` });
        inFlight++;
        answer({ ...newResult(weight.firstId), code: grpc.status.RESOURCE_EXHAUSTED, details: `an Exist ${why}: ask for fewer keys at once` });
        return;
      }
      const b: Batch = { message, left: weight.ops, room, extra: 0, small: 0 };
      if (room === 0 && cost < SMALL_BODY) b.small = cost;
      // What a large message's operations hold beyond it is taken only when it is much: it has room for itself.
      else if (room === 0 || cost - room >= SMALL_BODY) b.extra = cost - room;
      smallBytes += b.small;
      inFlight += b.left;
      if (b.left === 0) batchBudget.give(b.room);
      else {
        waiting.push(b);
        held.queued += b.room;
      }
      pump();
    });
    call.on('end', () => {
      ended = true;
      if (inFlight === 0 && !flushing) finish(null);
    });
    call.on('cancelled', over);
  };
}
