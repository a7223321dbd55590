// DataClient over bob's gRPC protocol (BobApi), as bobc sends it: requests
// without options, so the contacted node coordinates them; put and delete
// carry the current time in seconds.
import * as grpc from '@grpc/grpc-js';
import { parseHostPort } from '../../config/address';
import { BobApi, ExistResponseMsg } from '../../grpc/proto';
import { basicAuth, DataClient, RequestError } from './client';
import { UsageError } from './exit-codes';
import { Key } from './keys';

export interface GrpcOptions {
  user?: string;
  password?: string;
  timeoutMs: number;
}

/** Keys per Exist request (bobp's default packet size). */
const EXIST_BATCH = 1000;

type Unary = (req: object, md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: unknown) => void) => void;

export class GrpcClient implements DataClient {
  readonly endpoint: string;
  private readonly client: grpc.Client & Record<string, Unary>;
  private readonly auth?: string;

  constructor(
    address: string,
    private readonly options: GrpcOptions,
  ) {
    try {
      parseHostPort(address);
    } catch (err) {
      throw new UsageError(`--grpc: ${(err as Error).message}`);
    }
    this.endpoint = `gRPC ${address}`;
    this.client = new BobApi(address, grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': -1,
      'grpc.max_send_message_length': -1,
    }) as unknown as grpc.Client & Record<string, Unary>;
    if (options.user !== undefined) this.auth = basicAuth(options.user, options.password ?? '');
  }

  async put(key: Key, value: Buffer): Promise<void> {
    await this.call('Put', { key: { key: key.bytes }, data: { data: value, meta: { timestamp: now() } } });
  }

  async get(key: Key): Promise<Buffer | null> {
    try {
      const blob = await this.call<{ data: Buffer }>('Get', { key: { key: key.bytes } });
      return blob.data;
    } catch (err) {
      if (err instanceof RequestError && err.kind === 'NOT_FOUND') return null;
      throw err;
    }
  }

  async exists(keys: Key[]): Promise<boolean[]> {
    const result: boolean[] = [];
    for (let i = 0; i < keys.length; i += EXIST_BATCH) {
      const batch = keys.slice(i, i + EXIST_BATCH);
      const res = await this.call<ExistResponseMsg>('Exist', { keys: batch.map((k) => ({ key: k.bytes })) });
      if (res.exist.length !== batch.length) {
        throw new RequestError('PROTOCOL', `Exist answered ${res.exist.length} flags for ${batch.length} keys`);
      }
      result.push(...res.exist);
    }
    return result;
  }

  async delete(key: Key): Promise<void> {
    try {
      await this.call('Delete', { key: { key: key.bytes }, meta: { timestamp: now() } });
    } catch (err) {
      // Deleting a key nobody has is done already.
      if (!(err instanceof RequestError && err.kind === 'NOT_FOUND')) throw err;
    }
  }

  async ping(): Promise<void> {
    await this.call('Ping', {});
  }

  close(): void {
    this.client.close();
  }

  private call<T = unknown>(method: string, request: object): Promise<T> {
    const md = new grpc.Metadata();
    if (this.auth) md.set('authorization', this.auth);
    return new Promise((resolve, reject) => {
      this.client[method](request, md, { deadline: Date.now() + this.options.timeoutMs }, (err, res) => {
        if (!err) return resolve(res as T);
        reject(new RequestError(grpc.status[err.code] ?? String(err.code), err.details || err.message));
      });
    });
  }
}

function now(): string {
  return String(Math.floor(Date.now() / 1000));
}
