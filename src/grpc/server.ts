// The BobApi gRPC service (reference §4.1): force_node requests are served
// from this node's storage, all others are coordinated by the grinder.
// Every request is validated first: a malformed one (wrong key length,
// missing meta, unknown enum value, timestamp out of range) gets
// INVALID_ARGUMENT, never a crash.
import * as grpc from '@grpc/grpc-js';
import { GetSource } from '../backend/backend';
import { AuthError, Authenticator } from '../auth/authenticator';
import { GRPC_PERMISSION, Permission } from '../auth/permissions';
import { DataApi } from '../cluster/data-api';
import { LinkManager } from '../cluster/link-manager';
import { NodeApi } from '../cluster/node-api';
import { KeyError, keyToHex, normalizeKey } from '../keys/key';
import { Logger } from '../logging/logger';
import { BobApiService, DeleteRequestMsg, ExistRequestMsg, GetRequestMsg, PutRequestMsg } from './proto';
import { invalidArgument, toStatus } from './status';
import { encodeVersions, TOMBSTONE_TRAILER, VERSIONS_TRAILER } from './trailers';

export interface BobServiceParts {
  local: NodeApi;
  grinder: DataApi;
  links: LinkManager;
  keySize: number;
  auth: Authenticator;
  log: Logger;
  /** Called once per answered call with the status code's name (metrics hang on it). */
  onAnswer?: (method: string, code: string) => void;
}

class BadRequest extends Error {}

// NOT_FOUND with optional trailing metadata (the tombstone an Oyster peer reports).
class NotFound extends Error {
  trailer?: grpc.Metadata;
}

const SOURCES: Record<number, GetSource> = { 0: 'all', 1: 'normal', 2: 'alien' };

function key(msg: { key: Buffer } | null | undefined, keySize: number, missing: string): Buffer {
  if (!msg || !Buffer.isBuffer(msg.key)) throw new BadRequest(missing);
  try {
    return normalizeKey(msg.key, keySize);
  } catch (err) {
    if (err instanceof KeyError) throw new BadRequest(`${err.message}: keys are ${keySize} bytes`);
    throw err;
  }
}

function timestamp(meta: { timestamp: string | number } | null | undefined, missing: string): number {
  if (!meta) throw new BadRequest(missing);
  const text = String(meta.timestamp);
  if (!/^\d{1,20}$/.test(text) || BigInt(text) > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new BadRequest(`timestamp ${text} is out of the supported range 0..2^53-1`);
  }
  return Number(text);
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

/** The service definition with request decoding that never throws into grpc-js. */
function tolerantDefinition(definition: grpc.ServiceDefinition): grpc.ServiceDefinition {
  const out: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const [name, method] of Object.entries(definition)) {
    out[name] = {
      ...method,
      requestDeserialize: (bytes: Buffer): unknown => {
        try {
          return method.requestDeserialize(bytes);
        } catch (err) {
          return { [UNDECODABLE]: (err as Error).message } satisfies Undecodable;
        }
      },
    };
  }
  return out as grpc.ServiceDefinition;
}

type Handler<Req, Res> = (call: grpc.ServerUnaryCall<Req, Res>) => Promise<{ value: Res; trailer?: grpc.Metadata }>;

/** Runs a handler, answering every failure with a status instead of throwing into grpc-js. */
// A request refused for its credentials (reference §1.6–§1.7).
class Refused extends Error {
  constructor(
    readonly code: grpc.status,
    message: string,
  ) {
    super(message);
  }
}

/** Checks the caller's credentials against what the method needs (Ping needs nothing). */
async function authorizeCall(auth: Authenticator, name: string, call: grpc.ServerUnaryCall<unknown, unknown>): Promise<void> {
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
    throw new Refused(err.status === 400 ? grpc.status.INVALID_ARGUMENT : grpc.status.UNAUTHENTICATED, err.message);
  }
  if ((permissions & need) !== need) {
    throw new Refused(grpc.status.PERMISSION_DENIED, `${need === Permission.write ? 'WRITE' : 'READ'} permission required`);
  }
}

function unary<Req, Res>(parts: BobServiceParts, name: string, handler: Handler<Req, Res>): grpc.handleUnaryCall<Req, Res> {
  const { log, auth, onAnswer } = parts;
  return (call, answer) => {
    // Every way out passes here, refusals before the handler included.
    const callback: grpc.sendUnaryData<Res> = (err, value, trailer) => {
      onAnswer?.(name, grpc.status[err ? (err.code ?? grpc.status.UNKNOWN) : grpc.status.OK]);
      answer(err, value, trailer);
    };
    const undecodable = (call.request as Partial<Undecodable> | null)?.[UNDECODABLE];
    if (undecodable !== undefined) {
      callback(invalidArgument(`malformed ${name} request: ${undecodable}`));
      return;
    }
    authorizeCall(auth, name, call as grpc.ServerUnaryCall<unknown, unknown>)
      .then(() => handler(call))
      .then(
      ({ value, trailer }) => callback(null, value, trailer),
      (err: unknown) => {
        if (err instanceof Refused) {
          callback({ code: err.code, details: err.message });
          return;
        }
        if (err instanceof BadRequest) {
          callback(invalidArgument(err.message));
          return;
        }
        if (err instanceof NotFound) {
          callback({ code: grpc.status.NOT_FOUND, details: err.message, metadata: err.trailer ?? new grpc.Metadata() });
          return;
        }
        const status = toStatus(err);
        if (status.code === grpc.status.INTERNAL) log.warn({ rpc: name, err: status.details }, 'gRPC request failed');
        callback(status);
      },
    );
  };
}

export function bobService(parts: BobServiceParts): grpc.UntypedServiceImplementation {
  const { local, grinder, links, keySize } = parts;
  return {
    Put: unary<PutRequestMsg, object>(parts, 'Put', async (call) => {
      const req = call.request;
      const missing = 'Key, data and timestamp in data.meta is mandatory';
      if (!req.key || !req.data || !req.data.meta) throw new BadRequest(missing);
      const k = key(req.key, keySize, missing);
      const ts = timestamp(req.data.meta, missing);
      const value = Buffer.isBuffer(req.data.data) ? req.data.data : Buffer.alloc(0);
      if (req.options?.force_node) await local.put(k, value, ts, req.options.remote_nodes ?? []);
      else await grinder.put(k, value, ts);
      return { value: { error: null } };
    }),

    Get: unary<GetRequestMsg, object>(parts, 'Get', async (call) => {
      const req = call.request;
      const k = key(req.key, keySize, 'Key is mandatory');
      if (req.options?.force_node) {
        const v = await local.get(k, source(req.options));
        if (v?.kind === 'found') return { value: { data: v.value, meta: { timestamp: String(v.timestamp) } } };
        const trailer = new grpc.Metadata();
        if (v?.kind === 'deleted') trailer.set(TOMBSTONE_TRAILER, String(v.timestamp));
        throw Object.assign(new NotFound(`KeyNotFound ${keyToHex(k)}`), { trailer });
      }
      source(req.options); // validated even though the coordinator ignores it, as in Exist
      const v = await grinder.get(k);
      if (!v) throw new NotFound(`KeyNotFound ${keyToHex(k)}`);
      return { value: { data: v.value, meta: { timestamp: String(v.timestamp) } } };
    }),

    Exist: unary<ExistRequestMsg, object>(parts, 'Exist', async (call) => {
      const req = call.request;
      const keys = (req.keys ?? []).map((k, i) => key(k, keySize, `keys[${i}] is empty`));
      if (req.options?.force_node) {
        const states = await local.exist(keys, source(req.options));
        const trailer = new grpc.Metadata();
        trailer.set(VERSIONS_TRAILER, encodeVersions(states));
        return { value: { exist: states.map((s) => s?.kind === 'found') }, trailer };
      }
      source(req.options); // validated even though the coordinator ignores it
      return { value: { exist: await grinder.exist(keys) } };
    }),

    Delete: unary<DeleteRequestMsg, object>(parts, 'Delete', async (call) => {
      const req = call.request;
      const missing = 'Key and meta are mandatory';
      if (!req.key || !req.meta) throw new BadRequest(missing);
      const k = key(req.key, keySize, missing);
      const ts = timestamp(req.meta, missing);
      if (req.options?.force_node) {
        await local.delete(k, ts, { isAlien: req.options.is_alien, forceAlienNodes: req.options.force_alien_nodes ?? [] });
      } else {
        await grinder.delete(k, ts);
      }
      return { value: { error: null } };
    }),

    Ping: unary<object, object>(parts, 'Ping', async (call) => {
      const from = call.metadata.get('node_name')[0];
      if (typeof from === 'string') links.heardFrom(from);
      return { value: {} };
    }),
  };
}

export interface GrpcServerOptions {
  address: string;
  credentials?: grpc.ServerCredentials;
  /** Largest request message accepted (a value plus its envelope). */
  maxMessageBytes: number;
}

/** Starts a gRPC server with the BobApi service; resolves with the bound port. */
export async function startGrpcServer(
  service: grpc.UntypedServiceImplementation,
  options: GrpcServerOptions,
): Promise<{ server: grpc.Server; port: number }> {
  const server = new grpc.Server({
    'grpc.max_receive_message_length': options.maxMessageBytes,
    'grpc.max_send_message_length': -1,
  });
  server.addService(tolerantDefinition(BobApiService), service);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(options.address, options.credentials ?? grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return { server, port };
}
