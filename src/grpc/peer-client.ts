// PeerClient: another node of the cluster, reached over gRPC with one
// channel, bob's InterNode credentials and operation_timeout on every call.
// Put, Get, Exist and Delete go batched on one stream (./operation-stream.ts)
// to an Oyster peer — an operations link (src/link) where the peer takes
// one, else a gRPC stream — and as BobApi's force_node calls to a bob peer,
// which answers the stream UNIMPLEMENTED (asked again an hour later).
import * as grpc from '@grpc/grpc-js';
import { errors, isOysterError } from '../model/errors';
import { SnapshotEntry } from '../store/engine-snapshot';
import {
  BobApi,
  BlobMsg,
  DigestResponseMsg,
  EntriesResponseMsg,
  ExistResponseMsg,
  FilesResponseMsg,
  GetSource as Source,
  OperationKind,
  OperationMsg,
  ReadFileChunkMsg,
  Replicas,
  ResultMsg,
} from './proto';
import { fromStatus } from './status';
import { OperationsDuplex, OperationStream } from './operation-stream';
import { LinkOutcome, LinkStream, unreachable } from '../link/link-stream';
import { decodeResultBatch, encodeOperationBatch, newOperation, setVersion } from './operation-codec';
import { decodeEntries, decodeStates, fieldsVersion, metaVersion, versionMeta } from './versions';
import { StoredRecord, Version } from '../model/version';
import { IncomingValue, OpenedValue, WHOLE_UP_TO, writeInLots } from '../model/value';
import { peerValue } from './peer-value';
import { AnswerRoom, heldValue } from './bob-answer';
import type { BodyBudget } from '../rest/body-budget';
import { DeleteOptions, ExistAnswer, GetSource, NodeApi } from '../model/node-api';

/** The calls a PeerClient makes, as oyster_peer_requests_total names them. */
export const PEER_OPERATIONS = ['put', 'put_part', 'get', 'exist', 'delete', 'ping', 'digest', 'entries', 'files', 'readfile'] as const;

export interface PeerOptions {
  name: string;
  address: string;
  selfName: string;
  operationTimeoutMs: number;
  /** Upper bound of the channel's reconnect back-off, so a returning peer is found quickly. */
  maxReconnectBackoffMs: number;
  credentials?: grpc.ChannelCredentials;
  /**
   * Whether the peer is known to be up. Calls to such a peer wait (up to the
   * deadline) for a channel that is reconnecting; calls to a peer known to be
   * down fail at once instead of holding a request for operation_timeout.
   */
  isAvailable?: () => boolean;
  /** Extra channel options (TLS: the expected server name). */
  channelOptions?: grpc.ChannelOptions;
  /** Called when a call ends: the operation, its error (null: success) and its duration. */
  observe?: (operation: string, err: unknown, seconds: number) => void;
  /** An operation stream to the peer was opened: over an operations link (true) or gRPC. */
  onStreamOpened?: (link: boolean) => void;
  /** Operations go over a link where the peer takes one (not with TLS: links are plaintext). */
  links?: boolean;
  /** Operations waiting for the peer at most, and their value bytes (beyond, they fail at once). */
  maxInFlight?: number;
  maxInFlightBytes?: number;
  /**
   * The node's memory for values in flight: a bob peer's answer of a large
   * value asked for opened is let in within it, and holds its room until the
   * value is closed (./bob-answer.ts). Without, such answers are held unbounded.
   */
  budget?: BodyBudget;
}

/** How long a peer that does not serve Replicas.Operations (a bob node) is sent BobApi calls before it is asked again. */
const UNSUPPORTED_MS = 3600_000;
/** How long a peer that answered a PUT_PART is taken to take values in parts without being asked again. */
const PARTS_KNOWN_MS = 10_000;
/**
 * Keys asked about in one Exist at most: a peer refuses an Exist that would
 * hold more than its memory for values in flight while it runs (about 32
 * times its keys' bytes; 4096 keys of 64 bytes hold about 8.5 MB), and a
 * bob peer a message over 4 MiB.
 */
const EXIST_KEYS = 4096;
const OPERATIONS_PATH = '/oyster.Replicas/Operations';

type Callback<T> = (err: grpc.ServiceError | null, value?: T) => void;
type Unary<Req, Res> = (req: Req, md: grpc.Metadata, opts: grpc.CallOptions, cb: Callback<Res>) => grpc.ClientUnaryCall;

const SOURCES: Record<GetSource, number> = { all: Source.ALL, normal: Source.NORMAL, alien: Source.ALIEN };

const nothing = (): void => undefined;

export class PeerClient implements NodeApi {
  private readonly client: grpc.Client & Record<string, Unary<unknown, unknown>>;
  // Oyster's Replicas service, on the same channel.
  private readonly replicas: grpc.Client & Record<string, Unary<unknown, unknown>>;
  // bob's InterNode credentials: the metadata of every gRPC call, the greeting of a link.
  private readonly authorization: string;
  private readonly auth: grpc.Metadata;
  private readonly operations: OperationStream;
  // Until when the peer is sent BobApi calls (it answered the stream UNIMPLEMENTED).
  private bobUntil = 0;
  private bobValues: (grpc.Client & Record<string, Unary<unknown, unknown>>) | null = null;
  // Until when operations go over gRPC: the peer took no link.
  private grpcUntil = 0;
  // Until when the peer is known to take values in parts (it answered a PUT_PART), and known not to.
  private partsUntil = 0;
  private noPartsUntil = 0;
  // No link is tried before this (the last attempt found the peer unreachable), and the pause after the next failure.
  private linkAfter = 0;
  private linkPauseMs = 0;

  constructor(readonly options: PeerOptions) {
    this.client = new BobApi(options.address, options.credentials ?? grpc.credentials.createInsecure(), {
      ...this.channelOptions(),
      // HTTP/2's default window (64 KiB) lets a 4 MiB chunk of a refill
      // cross in many round trips.
      'grpc-node.flow_control_window': 16 * 1024 * 1024,
    }) as grpc.Client & Record<string, Unary<unknown, unknown>>;
    this.replicas = new Replicas(options.address, options.credentials ?? grpc.credentials.createInsecure(), {
      channelOverride: this.client.getChannel(),
    }) as grpc.Client & Record<string, Unary<unknown, unknown>>;
    this.auth = new grpc.Metadata();
    this.authorization = `InterNode ${Buffer.from(options.selfName).toString('base64')}`;
    this.auth.set('authorization', this.authorization);
    this.operations = new OperationStream({
      peer: options.name,
      open: (waitForReady) => this.openStream(waitForReady),
      isAvailable: () => options.isAvailable?.() ?? true,
      timeoutMs: options.operationTimeoutMs,
      maxInFlight: options.maxInFlight ?? 4096,
      maxBytes: options.maxInFlightBytes ?? 64 * 1024 * 1024,
    });
  }

  private openStream(waitForReady: boolean): OperationsDuplex {
    const overGrpc = () => {
      const md = this.auth.clone();
      if (waitForReady) md.setOptions({ waitForReady: true });
      this.options.onStreamOpened?.(false);
      return this.replicas.makeBidiStreamRequest(OPERATIONS_PATH, encodeOperationBatch, decodeResultBatch, md);
    };
    const now = Date.now();
    if (!this.options.links || now < this.grpcUntil) return overGrpc();
    // A peer found unreachable is tried again after a pause that doubles up
    // to the channel's reconnect back-off: its restart costs a few attempts,
    // not one per operation. Meanwhile its operations fail at once.
    if (now < this.linkAfter) return unreachable(`${this.options.name} was unreachable; the next attempt in ${this.linkAfter - now} ms`);
    return new LinkStream({
      address: this.options.address,
      authorization: this.authorization,
      greetingMs: this.options.operationTimeoutMs,
      fallback: overGrpc,
      onOutcome: (o: LinkOutcome) => {
        if (o === 'linked') {
          this.linkPauseMs = 0;
          this.options.onStreamOpened?.(true);
        } else if (o === 'refused') {
          this.grpcUntil = Date.now() + UNSUPPORTED_MS;
        } else {
          this.linkPauseMs = Math.min(Math.max(100, this.linkPauseMs * 2), this.options.maxReconnectBackoffMs);
          this.linkAfter = Date.now() + this.linkPauseMs;
        }
      },
    });
  }

  /** Operations sent or queued to the peer and not answered yet. */
  get waiting(): number {
    return this.operations.inFlight;
  }

  get name(): string {
    return this.options.name;
  }

  close(): void {
    this.operations.close();
    this.replicas.close();
    this.client.close();
    this.bobValues?.close();
  }

  private channelOptions(): grpc.ChannelOptions {
    return {
      'grpc.max_receive_message_length': -1,
      'grpc.max_send_message_length': -1,
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': this.options.maxReconnectBackoffMs,
      'grpc.enable_retries': 0,
      ...this.options.channelOptions,
    };
  }

  /**
   * The channel of a bob peer's answers let in within the budget: one of
   * its own, with HTTP/2's default window, so that an answer waiting for
   * room holds 64 KiB of it, not the 16 MiB the operations' channel lets in.
   */
  private bobValuesClient(): grpc.Client & Record<string, Unary<unknown, unknown>> {
    this.bobValues ??= new BobApi(this.options.address, this.options.credentials ?? grpc.credentials.createInsecure(), this.channelOptions()) as grpc.Client &
      Record<string, Unary<unknown, unknown>>;
    return this.bobValues;
  }

  /** Unary call with the deadline; rejects with the peer's status as an OysterError. `watch` sees the call as it is made. */
  private call<Res>(method: string, request: unknown, md = this.auth, mayWait = true, stub = this.client, watch?: (call: grpc.ClientUnaryCall) => void): Promise<Res> {
    const started = process.hrtime.bigint();
    return new Promise((resolve, reject) => {
      const deadline = Date.now() + this.options.operationTimeoutMs;
      if (mayWait && this.options.isAvailable?.()) {
        md = md.clone();
        md.setOptions({ waitForReady: true });
      }
      const call = stub[method](request, md, { deadline }, (err, value) => {
        const seconds = Number(process.hrtime.bigint() - started) / 1e9;
        const failure = err ? fromStatus(err) : null;
        this.options.observe?.(method.toLowerCase(), failure, seconds);
        if (failure) reject(failure);
        else resolve(value as Res);
      });
      watch?.(call);
    });
  }

  async ping(): Promise<void> {
    const md = this.auth.clone();
    md.set('node_name', this.options.selfName);
    // Never waits for a reconnecting channel: a refused connection must mark
    // the peer down at once, not after operation_timeout.
    await this.call('Ping', {}, md, false);
  }

  /**
   * Runs a data operation on the stream and resolves with its result as
   * `decode` reads it, in one reaction to the stream's answer; when the peer
   * does not serve the stream (a bob node), with what `bob` resolves with
   * (the BobApi call instead). Rejects with the operation's failure as the
   * BobApi call would.
   */
  private operate<T>(name: string, op: OperationMsg, bytes: number, decode: (r: ResultMsg) => T, bob: () => Promise<T>, released?: () => void): Promise<T> {
    if (Date.now() < this.bobUntil) {
      released?.();
      return bob();
    }
    const started = performance.now();
    const failed = (err: unknown): Promise<T> => {
      // The BobApi call made instead is observed as itself.
      if (isOysterError(err, 'Unsupported') && this.operations.unsupported) {
        this.bobUntil = Date.now() + UNSUPPORTED_MS;
        return bob();
      }
      this.options.observe?.(name, err, (performance.now() - started) / 1000);
      throw err;
    };
    return this.operations.send(op, bytes, released).then((r) => {
      if (r.code) return failed(resultError(r));
      this.options.observe?.(name, null, (performance.now() - started) / 1000);
      return decode(r);
    }, failed);
  }

  put(key: Buffer, version: Version, value: Buffer, remoteNodes: string[]): Promise<void> {
    const op = setVersion(newOperation(OperationKind.PUT, [key]), version);
    op.value = value;
    op.remote_nodes = remoteNodes;
    return this.operate('put', op, value.length, nothing, () =>
      this.call<void>('Put', {
        key: { key },
        data: { data: value, meta: versionMeta(version) },
        options: { remote_nodes: remoteNodes, force_node: true, overwrite: false },
      }),
    );
  }

  /**
   * An Oyster peer not known to be down takes values in parts, once it has
   * answered a PUT_PART in the last PARTS_KNOWN_MS: otherwise it is asked
   * (an abort of no put, which it answers at once). A bob node refuses the
   * stream, and an Oyster node from before puts in parts refuses the
   * operation: neither is asked again for UNSUPPORTED_MS.
   */
  async takesParts(key: Buffer): Promise<boolean> {
    const now = Date.now();
    if (!(this.options.isAvailable?.() ?? true) || now < this.bobUntil || now < this.noPartsUntil) return false;
    if (now < this.partsUntil) return true;
    const probe = setVersion(newOperation(OperationKind.PUT_PART, [key]), { timestamp: 0, tick: 0, node: 0 });
    probe.abort = true;
    try {
      await this.operate('put_part', probe, 0, nothing, () => Promise.reject(errors.failed(`peer ${this.name} is a bob node`)));
      this.partsUntil = Date.now() + PARTS_KNOWN_MS;
      return true;
    } catch (err) {
      if (Date.now() < this.bobUntil || isOysterError(err, 'InvalidArgument')) this.noPartsUntil = Date.now() + UNSUPPORTED_MS;
      return false;
    }
  }

  /**
   * Sends the value as PUT_PART operations, one per lot it hands out, and
   * says a lot written once the peer answered its part (it answers once the
   * part is written): the peer holds at most the value's lots out at a time.
   * The last part's answer is the put's. A failure, the value's included,
   * makes the peer drop the put (an abort is sent, best effort: it also
   * drops it when no part comes in time); it is told, and the value let go
   * of, once no part is left unsent in the stream.
   */
  async putIncoming(key: Buffer, version: Version, value: IncomingValue): Promise<void> {
    const part = (): OperationMsg => {
      const op = setVersion(newOperation(OperationKind.PUT_PART, [key]), version);
      op.size = value.size;
      return op;
    };
    const bob = () => Promise.reject(errors.failed(`peer ${this.name} takes no values in parts (a bob node)`));
    let offset = 0;
    // The parts a stream may still read from their lots' buffers.
    const held = new Set<Promise<void>>();
    try {
      await writeInLots(value, (pieces) => {
        const op = part();
        op.offset = offset;
        op.value = pieces.length === 1 ? pieces[0] : Buffer.concat(pieces);
        offset += op.value.length;
        let release = (): void => undefined;
        const released = new Promise<void>((resolve) => (release = resolve));
        held.add(released);
        void released.then(() => held.delete(released));
        // Not counted against the bytes that may wait for the peer: a part
        // is the client's window, within http_body_memory_limit already,
        // and a put has a few of them out at most.
        return this.operate('put_part', op, 0, nothing, bob, release);
      });
    } catch (err) {
      // A part sent after the one that failed may still be unsent: its lot
      // must not take other bytes (cancel lets it go) before it is.
      await Promise.all(held);
      value.cancel();
      const abort = part();
      abort.abort = true;
      void this.operations.send(abort, 0).catch(nothing);
      throw err;
    }
  }

  /**
   * With `open`, a value over 64 KiB comes opened: an Oyster peer's stays
   * with the peer, to be read in parts (./peer-value.ts); a bob peer sends
   * every value whole, held within the budget until it is closed
   * (./bob-answer.ts).
   */
  get(key: Buffer, source: GetSource): Promise<StoredRecord | null>;
  get(key: Buffer, source: GetSource, open: boolean): Promise<StoredRecord | OpenedValue | null>;
  get(key: Buffer, source: GetSource, open = false): Promise<StoredRecord | OpenedValue | null> {
    const op = newOperation(OperationKind.GET, [key]);
    op.source = SOURCES[source];
    if (open) op.whole_up_to = WHOLE_UP_TO;
    return this.operate(
      'get',
      op,
      0,
      (r): StoredRecord | OpenedValue | null => {
        if (!r.kind) return null;
        const version = resultVersion(r);
        if (version === null || (r.kind !== 1 && r.kind !== 2)) throw errors.failed(`peer ${this.name} answered Get with an unusable record`);
        if (r.kind === 2) return { kind: 'deleted', version };
        const value = r.value ?? Buffer.alloc(0);
        // Its first bytes, copied: the message they came in is not kept.
        if (open && r.size) return peerValue(version, r.size, Buffer.from(value), (offset, length, checkRest) => this.readPart(key, source, version, offset, length, checkRest));
        return { kind: 'found', version, value };
      },
      () => this.bobGet(key, source, open),
    );
  }

  /** Bytes [offset, offset + length) of the value of key at `version`; with checkRest, the value's whole checked first. */
  private readPart(key: Buffer, source: GetSource, version: Version, offset: number, length: number, checkRest: boolean): Promise<Buffer> {
    const op = setVersion(newOperation(OperationKind.GET, [key]), version);
    op.source = SOURCES[source];
    op.offset = offset;
    op.length = length;
    op.check_rest = checkRest;
    return this.operate('get', op, 0, (r) => r.value ?? Buffer.alloc(0), () => Promise.reject(errors.failed(`peer ${this.name} reads no parts of values`)));
  }

  private async bobGet(key: Buffer, source: GetSource, open: boolean): Promise<StoredRecord | OpenedValue | null> {
    const room = open && this.options.budget ? new AnswerRoom(this.options.budget, this.name) : null;
    let blob: BlobMsg;
    try {
      const request = { key: { key }, options: { force_node: true, source: SOURCES[source], oyster_versions: true } };
      blob = room
        ? await this.call<BlobMsg>('Get', request, this.auth, true, this.bobValuesClient(), (call) => room.watch(call))
        : await this.call<BlobMsg>('Get', request);
    } catch (err) {
      const refusal = room?.refusal;
      room?.give();
      if (refusal) throw errors.unavailable(refusal);
      // NOT_FOUND: absent at an Oyster peer; absent or deleted at a bob peer.
      if (isOysterError(err, 'KeyNotFound')) return null;
      throw err;
    }
    const version = blob.meta ? metaVersion(blob.meta) : null;
    const record: StoredRecord | null = version === null ? null : blob.meta?.oyster_deleted ? { kind: 'deleted', version } : { kind: 'found', version, value: blob.data };
    if (room?.held && record?.kind === 'found' && record.value.length > WHOLE_UP_TO) return heldValue(record.version, record.value, room);
    room?.give();
    if (record === null) throw errors.failed(`peer ${this.name} answered Get with an unusable version`);
    return record;
  }

  exist(keys: Buffer[], source: GetSource): Promise<ExistAnswer[]> {
    if (keys.length <= EXIST_KEYS) return this.existFew(keys, source);
    const parts: Array<Promise<ExistAnswer[]>> = [];
    for (let at = 0; at < keys.length; at += EXIST_KEYS) parts.push(this.existFew(keys.slice(at, at + EXIST_KEYS), source));
    return Promise.all(parts).then((answers) => answers.flat());
  }

  private existFew(keys: Buffer[], source: GetSource): Promise<ExistAnswer[]> {
    const op = newOperation(OperationKind.EXIST, keys);
    op.source = SOURCES[source];
    return this.operate(
      'exist',
      op,
      0,
      (r) => {
        const states = decodeStates(r.states, keys.length);
        if (!states) throw errors.failed(`peer ${this.name} answered Exist with malformed states`);
        return states;
      },
      () => this.bobExist(keys, source),
    );
  }

  private async bobExist(keys: Buffer[], source: GetSource): Promise<ExistAnswer[]> {
    const res = await this.call<ExistResponseMsg>('Exist', {
      keys: keys.map((key) => ({ key })),
      options: { force_node: true, source: SOURCES[source], oyster_versions: true },
    });
    const states = decodeStates(res.oyster_states, keys.length);
    if (states) return states;
    // A bob peer: whether each key is present, without versions.
    return keys.map((_, i) => (res.exist[i] ? { kind: 'found', version: null } : null));
  }

  delete(key: Buffer, version: Version, options: DeleteOptions): Promise<void> {
    const op = setVersion(newOperation(OperationKind.DELETE, [key]), version);
    op.is_alien = options.isAlien;
    op.force_alien_nodes = options.forceAlienNodes;
    return this.operate('delete', op, 0, nothing, () =>
      this.call<void>('Delete', {
        key: { key },
        meta: versionMeta(version),
        options: { force_alien_nodes: options.forceAlienNodes, force_node: true, is_alien: options.isAlien },
      }),
    );
  }

  /** Digests of the peer's replica of the vdisk (Replicas.Digest); Unsupported from a bob node. */
  async digest(vdisk: number, bits: number): Promise<{ digests: Buffer; keys: number }> {
    const res = await this.call<DigestResponseMsg>('Digest', { vdisk, bits }, this.auth, false, this.replicas);
    if (res.digests.length !== 8 * 2 ** bits) throw errors.failed(`peer ${this.name} sent ${res.digests.length} bytes of digests for ${bits} bits`);
    return { digests: res.digests, keys: Number(res.keys) };
  }

  /** The newest record (without value) of every key of the buckets in the peer's replica, sorted by key. */
  async entries(vdisk: number, bits: number, buckets: number[], keySize: number): Promise<SnapshotEntry[]> {
    const res = await this.call<EntriesResponseMsg>('Entries', { vdisk, bits, buckets }, this.auth, false, this.replicas);
    const entries = decodeEntries(res.entries, keySize);
    if (entries === null) throw errors.failed(`peer ${this.name} sent malformed entries`);
    return entries;
  }

  /** The closed files of the peer's replica of the vdisk (Replicas.Files). */
  async files(vdisk: number): Promise<Array<{ partition: string; files: Array<{ name: string; size: number }> }>> {
    const res = await this.call<FilesResponseMsg>('Files', { vdisk }, this.auth, false, this.replicas);
    return res.partitions.map((p) => ({ partition: p.partition, files: p.files.map((f) => ({ name: f.name, size: Number(f.size) })) }));
  }

  /**
   * Bytes of one of those files (Replicas.ReadFile), at most 64 MiB from
   * `offset`, in the peer's chunks, in order; fewer only at the end of the
   * file. The peer sends as fast as the caller iterates. A peer that sends
   * nothing for operation_timeout while the caller waits fails the read.
   */
  async *readFile(vdisk: number, partition: string, name: string, offset: number, length: number): AsyncGenerator<Buffer> {
    const started = process.hrtime.bigint();
    const open = this.replicas.ReadFile as unknown as (req: unknown, md: grpc.Metadata) => grpc.ClientReadableStream<ReadFileChunkMsg>;
    const stream = open.call(this.replicas, { vdisk, partition, name, offset: String(offset), length }, this.auth);
    const chunks = stream[Symbol.asyncIterator]() as AsyncIterator<ReadFileChunkMsg>;
    let failure: unknown = null;
    try {
      for (;;) {
        let timer: NodeJS.Timeout | undefined;
        const silence = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(errors.failed(`Timeout: peer ${this.name} sent nothing of ${partition}/${name} for ${this.options.operationTimeoutMs} ms`)), this.options.operationTimeoutMs);
        });
        let next: IteratorResult<ReadFileChunkMsg>;
        try {
          next = await Promise.race([chunks.next(), silence]);
        } finally {
          clearTimeout(timer);
        }
        if (next.done) return;
        yield next.value.data;
      }
    } catch (err) {
      failure = typeof (err as grpc.ServiceError).code === 'number' ? fromStatus(err as grpc.ServiceError) : err;
      throw failure;
    } finally {
      // Also when the caller stops early: the peer stops reading.
      stream.cancel();
      this.options.observe?.('readfile', failure, Number(process.hrtime.bigint() - started) / 1e9);
    }
  }
}

/** The version a result carries; null when out of range. */
function resultVersion(r: ResultMsg): Version | null {
  return fieldsVersion(r.timestamp, r.tick, r.node);
}

/** A failed operation's result as the error its BobApi call would have rejected with. */
function resultError(r: ResultMsg): Error {
  const err = fromStatus({ code: r.code, details: r.details ?? '', message: r.details ?? '' } as grpc.ServiceError);
  // A damaged record's version comes along: the coordinator may pass over it.
  const version = r.code === grpc.status.DATA_LOSS && (r.timestamp !== undefined || r.tick !== undefined) ? resultVersion(r) : null;
  return version ? errors.corruption(err.message, version) : err;
}
