// The BobApi gRPC service: force_node requests are served from this node's
// storage, all others are coordinated by the grinder. Every request is
// validated first: a malformed one (wrong key length, missing meta, unknown
// enum value, timestamp out of range) gets INVALID_ARGUMENT, never a crash.
import * as grpc from '@grpc/grpc-js';
import { AuthError, Authenticator } from '../auth/authenticator';
import { GRPC_PERMISSION } from '../auth/permissions';
import { Permission } from '../model/permission';
import { DataApi } from '../model/data-api';
import { GetSource, NodeApi } from '../model/node-api';
import { isOpened, OpenedValue } from '../model/value';
import { keyToHex } from '../keys/key';
import { Logger } from '../logging/logger';
import { KeyState, StoredValue, Version } from '../model/version';
import { BlobMetaMsg, BlobMsg, BobApiService, DeleteRequestMsg, ExistRequestMsg, GetRequestMsg, PutRequestMsg } from './proto';
import { encodeBlob } from './blob-codec';
import { BodyBudget } from '../rest/body-budget';
import { holdUntilSent, readWithinBudget } from './answer-budget';
import { takeHeld } from './bob-answer';
import { CallLimit } from './call-limit';
import { ReceiveBudgets, receiveWithinBudget } from './receive-budget';
import { invalidArgument, StatusError, toStatus } from './status';
import { encodeStates, metaVersion, u64Field, versionMeta } from './versions';

/** What every service's calls need: credentials, logs, metrics. */
export interface CallParts {
  auth: Authenticator;
  log: Logger;
  /** Called once per answered call with the status code's name (metrics hang on it). */
  onAnswer?: (method: string, code: string) => void;
}

export interface BobServiceParts extends CallParts {
  local: NodeApi;
  grinder: DataApi;
  /** What answers of large values are read within (answer-budget.ts), and how long one may take to leave. */
  budget: BodyBudget;
  sendTimeoutMs: number;
  /** A peer's Ping named it: it is up (bob's link manager learns of peers that way too). */
  heardFrom(node: string): void;
  keySize: number;
}

/** A request that is malformed: INVALID_ARGUMENT. */
export class BadRequest extends Error {}

class NotFound extends Error {}

const SOURCES: Record<number, GetSource> = { 0: 'all', 1: 'normal', 2: 'alien' };

/**
 * The key of a request: exactly key_size bytes, or 8 bytes on a node with
 * 16-byte keys (bob's clients send u64 keys), zero-padded. Anything else —
 * the empty key included — is refused, never taken for another key.
 */
function key(msg: { key: Buffer } | null | undefined, keySize: number, missing: string): Buffer {
  if (!msg || !Buffer.isBuffer(msg.key)) throw new BadRequest(missing);
  const k = msg.key;
  if (k.length === keySize) return k;
  if (keySize === 16 && k.length === 8) {
    const padded = Buffer.alloc(16);
    k.copy(padded);
    return padded;
  }
  throw new BadRequest(`key of ${k.length} bytes: keys are ${keySize} bytes${keySize === 16 ? ' (or 8)' : ''}`);
}

/** bob's timestamp of a request. */
function timestamp(meta: BlobMetaMsg | null | undefined, missing: string): number {
  if (!meta) throw new BadRequest(missing);
  const ts = u64Field(meta.timestamp, Number.MAX_SAFE_INTEGER);
  if (ts === null) throw new BadRequest(`timestamp ${String(meta.timestamp)} is out of the supported range 0..2^53-1`);
  return ts;
}

/** The whole version of a force_node write: bob's timestamp, and Oyster's tie-breakers when an Oyster peer sent them. */
function version(meta: BlobMetaMsg | null | undefined, missing: string): Version {
  timestamp(meta, missing);
  const v = metaVersion(meta!);
  if (v === null) throw new BadRequest(`oyster_tick ${String(meta!.oyster_tick)} or oyster_node ${String(meta!.oyster_node)} is out of range`);
  return v;
}

function source(options: { source: number } | null | undefined): GetSource {
  const s = options?.source ?? 0;
  const named = SOURCES[s];
  if (!named) throw new BadRequest(`unknown GetSource ${s}`);
  return named;
}

// A request whose bytes are not a valid message: grpc-js would answer
// INTERNAL ("Error deserializing request"); it is the client's fault, so the
// handler answers INVALID_ARGUMENT instead.
const UNDECODABLE = Symbol('undecodable request');
type Undecodable = { [UNDECODABLE]: string };

/** `decode` that never throws: what it cannot decode comes out marked for `undecodable`. */
function tolerant<T>(decode: (bytes: Buffer) => T): (bytes: Buffer) => T {
  return (bytes) => {
    try {
      return decode(bytes);
    } catch (err) {
      return { [UNDECODABLE]: (err as Error).message } satisfies Undecodable as unknown as T;
    }
  };
}

/** The service definition with request decoding that never throws into grpc-js. */
function tolerantDefinition(definition: grpc.ServiceDefinition): grpc.ServiceDefinition {
  const out: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const [name, method] of Object.entries(definition)) {
    out[name] = { ...method, requestDeserialize: tolerant(method.requestDeserialize) };
  }
  return out as grpc.ServiceDefinition;
}

type Handler<Req, Res> = (call: grpc.ServerUnaryCall<Req, Res>) => Promise<{ value: Res }>;

/** Checks the caller's credentials against what the method needs (Ping needs nothing). */
export async function authorizeCall(auth: Authenticator, name: string, call: { metadata: grpc.Metadata; getPeer(): string }): Promise<void> {
  const need = GRPC_PERMISSION[name] ?? 0;
  if (!auth.enabled || need === 0) return;
  const header = call.metadata.get('authorization')[0];
  const peer = call.getPeer();
  let permissions: number;
  try {
    const id = await auth.authenticate(typeof header === 'string' ? header : undefined, peer.slice(0, peer.lastIndexOf(':')), 'grpc');
    permissions = id.permissions;
  } catch (err) {
    if (!(err instanceof AuthError)) throw err;
    throw new StatusError(err.status === 400 ? grpc.status.INVALID_ARGUMENT : grpc.status.UNAUTHENTICATED, err.message);
  }
  if ((permissions & need) !== need) {
    throw new StatusError(grpc.status.PERMISSION_DENIED, `${need === Permission.write ? 'WRITE' : 'READ'} permission required`);
  }
}

/** The status a handler's failure is answered with; an unexpected one is logged. */
export function failureStatus(err: unknown, name: string, log: Logger): Partial<grpc.StatusObject> {
  if (err instanceof StatusError) return { code: err.code, details: err.message };
  if (err instanceof BadRequest) return invalidArgument(err.message);
  if (err instanceof NotFound) return { code: grpc.status.NOT_FOUND, details: err.message };
  const status = toStatus(err);
  if (status.code === grpc.status.INTERNAL) log.warn({ rpc: name, err: status.details }, 'gRPC request failed');
  return status;
}

/** The reason grpc-js could not decode the request, if it could not. */
function undecodable(request: unknown): string | undefined {
  return (request as Partial<Undecodable> | null)?.[UNDECODABLE];
}

/** Runs a handler, answering every failure with a status instead of throwing into grpc-js. */
export function unary<Req, Res>(parts: CallParts, name: string, handler: Handler<Req, Res>): grpc.handleUnaryCall<Req, Res> {
  const { log, auth, onAnswer } = parts;
  return (call, answer) => {
    // Every way out passes here, refusals before the handler included.
    const callback: grpc.sendUnaryData<Res> = (err, value) => {
      onAnswer?.(name, grpc.status[err ? (err.code ?? grpc.status.UNKNOWN) : grpc.status.OK]);
      answer(err, value);
    };
    const malformed = undecodable(call.request);
    if (malformed !== undefined) {
      callback(invalidArgument(`malformed ${name} request: ${malformed}`));
      return;
    }
    authorizeCall(auth, name, call)
      .then(() => handler(call))
      .then(
        ({ value }) => callback(null, value),
        (err: unknown) => callback(failureStatus(err, name, log)),
      );
  };
}

/** Resolves when the stream takes messages again, or its call was cancelled. */
function drained(call: grpc.ServerWritableStream<unknown, unknown>): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      call.off('drain', done);
      call.off('cancelled', done);
      resolve();
    };
    call.once('drain', done);
    call.once('cancelled', done);
  });
}

/**
 * Runs a handler whose answer is a stream of messages, written as the client
 * takes them (a slow client holds the handler, not this node's memory); a
 * client that cancels stops the handler at its next message. Failures end the
 * stream with a status, as `unary` answers them.
 */
export function serverStream<Req, Res>(
  parts: CallParts,
  name: string,
  handler: (call: grpc.ServerWritableStream<Req, Res>) => AsyncIterable<Res>,
): grpc.handleServerStreamingCall<Req, Res> {
  const { log, auth, onAnswer } = parts;
  return (call) => {
    const fail = (status: Partial<grpc.StatusObject>) => {
      onAnswer?.(name, grpc.status[status.code ?? grpc.status.UNKNOWN]);
      call.emit('error', status);
    };
    const malformed = undecodable(call.request);
    if (malformed !== undefined) {
      fail(invalidArgument(`malformed ${name} request: ${malformed}`));
      return;
    }
    const run = async () => {
      await authorizeCall(auth, name, call);
      for await (const message of handler(call)) {
        if (call.cancelled) return;
        if (!call.write(message)) await drained(call);
      }
      onAnswer?.(name, 'OK');
      call.end();
    };
    run().catch((err: unknown) => {
      if (!call.cancelled) fail(failureStatus(err, name, log));
    });
  };
}

/** BobApi's definition as this node serves it: Get's answer is written by ./blob-codec.ts. */
export const bobDefinition: grpc.ServiceDefinition = {
  ...BobApiService,
  Get: { ...BobApiService.Get, responseSerialize: encodeBlob },
};

export function bobService(parts: BobServiceParts): grpc.UntypedServiceImplementation {
  const { local, grinder, heardFrom, keySize, budget, sendTimeoutMs } = parts;
  // A value left opened is read whole within the budget (a bob peer's is
  // whole already, in its room), and holds its room until the answer has left.
  const whole = async (call: object, r: OpenedValue): Promise<StoredValue> => {
    const held = takeHeld(r) ?? (await readWithinBudget(r, budget, 0, r.size, true));
    holdUntilSent(call, held, sendTimeoutMs);
    return held.record;
  };
  return {
    Put: unary<PutRequestMsg, object>(parts, 'Put', async (call) => {
      const req = call.request;
      const missing = 'Key, data and timestamp in data.meta is mandatory';
      if (!req.key || !req.data || !req.data.meta) throw new BadRequest(missing);
      const k = key(req.key, keySize, missing);
      const value = Buffer.isBuffer(req.data.data) ? req.data.data : Buffer.alloc(0);
      if (req.options?.force_node) await local.put(k, version(req.data.meta, missing), value, req.options.remote_nodes ?? []);
      else await grinder.put(k, value, timestamp(req.data.meta, missing));
      return { value: { error: null } };
    }),

    Get: unary<GetRequestMsg, BlobMsg>(parts, 'Get', async (call) => {
      const req = call.request;
      const k = key(req.key, keySize, 'Key is mandatory');
      const src = source(req.options);
      if (req.options?.force_node) {
        let r = await local.get(k, src, true);
        if (isOpened(r)) r = await whole(call, r);
        if (r?.kind === 'found') return { value: { data: r.value, meta: versionMeta(r.version) } };
        // An Oyster peer learns of the tombstone; for bob's clients a deleted key is not found.
        if (r?.kind === 'deleted' && req.options.oyster_versions) return { value: { data: Buffer.alloc(0), meta: versionMeta(r.version, true) } };
        throw new NotFound(`KeyNotFound ${keyToHex(k)}`);
      }
      let r = await grinder.get(k, true);
      if (isOpened(r)) r = await whole(call, r);
      if (!r) throw new NotFound(`KeyNotFound ${keyToHex(k)}`);
      return { value: { data: r.value, meta: versionMeta(r.version) } };
    }),

    Exist: unary<ExistRequestMsg, object>(parts, 'Exist', async (call) => {
      const req = call.request;
      const keys = (req.keys ?? []).map((k, i) => key(k, keySize, `keys[${i}] is empty`));
      const src = source(req.options);
      if (req.options?.force_node) {
        const answers = await local.exist(keys, src);
        const exist = answers.map((s) => s?.kind === 'found');
        if (!req.options.oyster_versions) return { value: { exist } };
        // Local answers always carry versions.
        return { value: { exist, oyster_states: encodeStates(answers as Array<KeyState | null>) } };
      }
      return { value: { exist: await grinder.exist(keys) } };
    }),

    Delete: unary<DeleteRequestMsg, object>(parts, 'Delete', async (call) => {
      const req = call.request;
      const missing = 'Key and meta are mandatory';
      if (!req.key || !req.meta) throw new BadRequest(missing);
      const k = key(req.key, keySize, missing);
      if (req.options?.force_node) {
        await local.delete(k, version(req.meta, missing), { isAlien: req.options.is_alien, forceAlienNodes: req.options.force_alien_nodes ?? [] });
      } else {
        await grinder.delete(k, timestamp(req.meta, missing));
      }
      return { value: { error: null } };
    }),

    Ping: unary<object, object>(parts, 'Ping', async (call) => {
      const from = call.metadata.get('node_name')[0];
      if (typeof from === 'string') heardFrom(from);
      return { value: {} };
    }),
  };
}

/**
 * Calls open at once on one connection (HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS):
 * a client queues the calls past it until earlier ones end. Each call open
 * holds about 10 KB of the node's memory: without a bound, one client that
 * made 100,000 calls at once took the node from 90 MB to 1.1 GB.
 */
export const MAX_CONCURRENT_CALLS = 256;

/**
 * A gRPC server with the given services, not listening: the node's serving
 * port (src/link/port.ts) hands it its connections. `maxMessageBytes`: the
 * largest request message accepted (a value plus its envelope); calls are
 * let in within `calls` (call-limit.ts), their messages read within
 * `budgets.messages`, and peers' batches of operations within
 * `budgets.batches`, each within `receiveTimeoutMs` of being read
 * (receive-budget.ts).
 */
export function createGrpcServer(
  services: Array<{ definition: grpc.ServiceDefinition; implementation: grpc.UntypedServiceImplementation }>,
  maxMessageBytes: number,
  calls: CallLimit,
  budgets: ReceiveBudgets,
  receiveTimeoutMs: number,
): grpc.Server {
  const server = new grpc.Server({
    'grpc.max_receive_message_length': maxMessageBytes,
    'grpc.max_send_message_length': -1,
    'grpc.max_concurrent_streams': MAX_CONCURRENT_CALLS,
    interceptors: [calls.interceptor, receiveWithinBudget(budgets, receiveTimeoutMs)],
  });
  for (const s of services) server.addService(tolerantDefinition(s.definition), s.implementation);
  return server;
}
