// PeerClient: another node of the cluster, reached over gRPC with one
// channel, bob's InterNode credentials and operation_timeout on every call
// (reference §4.2).
import * as grpc from '@grpc/grpc-js';
import { GetSource } from '../backend/backend';
import { BobApi, ExistResponseMsg, GetSource as Source, BlobMsg } from '../grpc/proto';
import { fromStatus } from '../grpc/status';
import { TOMBSTONE_TRAILER, VERSIONS_TRAILER, decodeVersions } from '../grpc/trailers';
import { DeleteOptions, KeyState, NodeApi, Version } from './node-api';

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
}

type Callback<T> = (err: grpc.ServiceError | null, value?: T) => void;
type Unary<Req, Res> = (req: Req, md: grpc.Metadata, opts: grpc.CallOptions, cb: Callback<Res>) => grpc.ClientUnaryCall;

const SOURCES: Record<GetSource, number> = { all: Source.ALL, normal: Source.NORMAL, alien: Source.ALIEN };

export class PeerClient implements NodeApi {
  private readonly client: grpc.Client & Record<string, Unary<unknown, unknown>>;
  private readonly auth: grpc.Metadata;

  constructor(readonly options: PeerOptions) {
    this.client = new BobApi(options.address, options.credentials ?? grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': -1,
      'grpc.max_send_message_length': -1,
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': options.maxReconnectBackoffMs,
      'grpc.enable_retries': 0,
      ...options.channelOptions,
    }) as grpc.Client & Record<string, Unary<unknown, unknown>>;
    this.auth = new grpc.Metadata();
    this.auth.set('authorization', `InterNode ${Buffer.from(options.selfName).toString('base64')}`);
  }

  get name(): string {
    return this.options.name;
  }

  close(): void {
    this.client.close();
  }

  /** Unary call with the deadline; resolves with the response and the trailing metadata. */
  private call<Res>(
    method: string,
    request: unknown,
    md = this.auth,
    mayWait = true,
  ): Promise<{ value: Res; trailers: grpc.Metadata | null }> {
    const started = process.hrtime.bigint();
    return new Promise((resolve, reject) => {
      let trailers: grpc.Metadata | null = null;
      const deadline = Date.now() + this.options.operationTimeoutMs;
      if (mayWait && this.options.isAvailable?.()) {
        md = md.clone();
        md.setOptions({ waitForReady: true });
      }
      const call = this.client[method](request, md, { deadline }, (err, value) => {
        const seconds = Number(process.hrtime.bigint() - started) / 1e9;
        this.options.observe?.(method.toLowerCase(), err ? fromStatus(err) : null, seconds);
        if (err) reject(err);
        else resolve({ value: value as Res, trailers });
      });
      call.on('status', (s: grpc.StatusObject) => (trailers = s.metadata));
    });
  }

  async ping(): Promise<void> {
    const md = this.auth.clone();
    md.set('node_name', this.options.selfName);
    // Never waits for a reconnecting channel: a refused connection must mark
    // the peer down at once, not after operation_timeout.
    await this.call('Ping', {}, md, false).catch((err: grpc.ServiceError) => {
      throw fromStatus(err);
    });
  }

  async put(key: Buffer, value: Buffer, timestamp: number, remoteNodes: string[]): Promise<void> {
    await this.call('Put', {
      key: { key },
      data: { data: value, meta: { timestamp: String(timestamp) } },
      options: { remote_nodes: remoteNodes, force_node: true, overwrite: false },
    }).catch((err: grpc.ServiceError) => {
      throw fromStatus(err);
    });
  }

  async get(key: Buffer, source: GetSource): Promise<Version | null> {
    try {
      const { value } = await this.call<BlobMsg>('Get', { key: { key }, options: { force_node: true, source: SOURCES[source] } });
      return { kind: 'found', timestamp: Number(value.meta?.timestamp ?? 0), value: value.data };
    } catch (err) {
      const e = err as grpc.ServiceError;
      if (e.code !== grpc.status.NOT_FOUND) throw fromStatus(e);
      // An Oyster peer tells when the key is deleted; a bob peer does not.
      const ts = e.metadata?.get(TOMBSTONE_TRAILER)[0];
      return ts === undefined ? null : { kind: 'deleted', timestamp: Number(ts) };
    }
  }

  async exist(keys: Buffer[], source: GetSource): Promise<Array<KeyState | null>> {
    const { value, trailers } = await this.call<ExistResponseMsg>('Exist', {
      keys: keys.map((key) => ({ key })),
      options: { force_node: true, source: SOURCES[source] },
    }).catch((err: grpc.ServiceError) => {
      throw fromStatus(err);
    });
    const versions = decodeVersions(trailers?.get(VERSIONS_TRAILER)[0], keys.length);
    return keys.map((_, i) => versions?.[i] ?? (value.exist[i] ? { kind: 'found' } : null));
  }

  async delete(key: Buffer, timestamp: number, options: DeleteOptions): Promise<void> {
    await this.call('Delete', {
      key: { key },
      meta: { timestamp: String(timestamp) },
      options: { force_alien_nodes: options.forceAlienNodes, force_node: true, is_alien: options.isAlien },
    }).catch((err: grpc.ServiceError) => {
      throw fromStatus(err);
    });
  }
}
