// A bob_storage.BobApi client for tests, built with @grpc/grpc-js +
// @grpc/proto-loader as bob's own clients are built from bob's proto: that
// is src/grpc/bob.proto without the oyster_* fields Oyster peers add. It is
// loaded here, independently of src/grpc, so that the tests check the wire
// protocol rather than our own wrappers. For malformed requests it also sends
// hand-encoded protobuf bytes (see `pb`) through a client whose
// (de)serializers pass bytes through unchanged.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

// dist/test/helpers/grpc-client.js -> <package root>/src/grpc/bob.proto
const OYSTER_PROTO = path.resolve(__dirname, '..', '..', '..', 'src', 'grpc', 'bob.proto');

/** bob's own proto: Oyster's proto without the fields Oyster adds (and their comments). */
export function bobProto(): string {
  const file = path.join(os.tmpdir(), `oyster-test-bob-${process.pid}.proto`);
  if (!fs.existsSync(file)) {
    const lines = fs.readFileSync(OYSTER_PROTO, 'utf8').split('\n');
    const kept = lines.filter((l) => !/^\s*\/\//.test(l) && !l.includes('oyster_'));
    fs.writeFileSync(file, kept.join('\n'));
    process.once('exit', () => fs.rmSync(file, { force: true }));
  }
  return file;
}

const definition = protoLoader.loadSync(bobProto(), {
  keepCase: true,
  longs: String, // u64 timestamps as decimal strings: nothing above 2^53 is rounded
  enums: Number,
  defaults: true,
  oneofs: false,
});
const BobApi = (grpc.loadPackageDefinition(definition) as unknown as { bob_storage: { BobApi: grpc.ServiceClientConstructor } })
  .bob_storage.BobApi;
/** BobApi's service definition, for a server standing in for a bob node. */
export const bobApiService = BobApi.service;

export const GetSource = { ALL: 0, NORMAL: 1, ALIEN: 2 } as const;

export interface PutOptions {
  remote_nodes?: string[];
  force_node?: boolean;
  overwrite?: boolean;
}
export interface GetOptions {
  force_node?: boolean;
  source?: number;
}
export interface DeleteOptions {
  force_alien_nodes?: string[];
  force_node?: boolean;
  is_alien?: boolean;
}
export interface Blob {
  data: Buffer;
  /** Decimal u64 as sent; null when the server left meta out (a protocol violation). */
  timestamp: string | null;
}

type Unary = (req: unknown, md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: unknown) => void) => void;

export type Timestamp = number | bigint | string;

export class BobClient {
  private readonly client: grpc.Client & Record<string, Unary>;
  private readonly raw: grpc.Client;

  constructor(
    readonly address: string,
    private readonly deadlineMs = 10_000,
    /** 'default': grpc-js's own limits (4 MiB messages), as an unconfigured client has. */
    limits: 'unlimited' | 'default' = 'unlimited',
  ) {
    const opts =
      limits === 'default' ? {} : { 'grpc.max_receive_message_length': -1, 'grpc.max_send_message_length': -1, 'grpc.enable_retries': 0 };
    this.client = new BobApi(address, grpc.credentials.createInsecure(), opts) as grpc.Client & Record<string, Unary>;
    this.raw = new grpc.Client(address, grpc.credentials.createInsecure(), opts);
  }

  close(): void {
    this.client.close();
    this.raw.close();
  }

  /** Any request object, as proto-loader serializes it (fields may be left out). */
  call<T = unknown>(method: 'Put' | 'Get' | 'Exist' | 'Delete' | 'Ping', request: object, md = new grpc.Metadata()): Promise<T> {
    return new Promise((resolve, reject) => {
      this.client[method](request, md, { deadline: Date.now() + this.deadlineMs }, (err, res) => (err ? reject(err) : resolve(res as T)));
    });
  }

  /** Raw request bytes to any path (e.g. "/bob_storage.BobApi/Get"); resolves with the raw response bytes. */
  callRaw(method: string, body: Buffer): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      this.raw.makeUnaryRequest(
        method,
        (b: Buffer) => b,
        (b: Buffer) => b,
        body,
        new grpc.Metadata(),
        { deadline: Date.now() + this.deadlineMs },
        (err, res) => (err ? reject(err) : resolve(res as Buffer)),
      );
    });
  }

  async put(key: Buffer, data: Buffer, timestamp: Timestamp, options?: PutOptions): Promise<void> {
    await this.call('Put', { key: { key }, data: { data, meta: { timestamp: String(timestamp) } }, ...(options ? { options } : {}) });
  }

  async get(key: Buffer, options?: GetOptions): Promise<Blob> {
    const res = await this.call<{ data: Buffer; meta: { timestamp: string } | null }>('Get', { key: { key }, ...(options ? { options } : {}) });
    return { data: res.data, timestamp: res.meta ? String(res.meta.timestamp) : null };
  }

  async exist(keys: Buffer[], options?: GetOptions): Promise<boolean[]> {
    const res = await this.call<{ exist: boolean[] }>('Exist', { keys: keys.map((key) => ({ key })), ...(options ? { options } : {}) });
    return res.exist;
  }

  async delete(key: Buffer, timestamp: Timestamp, options?: DeleteOptions): Promise<void> {
    await this.call('Delete', { key: { key }, meta: { timestamp: String(timestamp) }, ...(options ? { options } : {}) });
  }

  async ping(): Promise<void> {
    await this.call('Ping', {});
  }
}

/** The gRPC status code of a rejection (undefined when it is not a gRPC error). */
export function codeOf(err: unknown): number | undefined {
  return (err as grpc.ServiceError | null)?.code;
}

/** Resolves with the ServiceError a call fails with; rejects when it succeeds. */
export async function failure(p: Promise<unknown>): Promise<grpc.ServiceError> {
  try {
    await p;
  } catch (err) {
    if (codeOf(err) === undefined) throw err;
    return err as grpc.ServiceError;
  }
  throw new Error('the call succeeded but was expected to fail');
}

export const Status = grpc.status;

// ------------------------------------------------- hand-made protobuf bytes

/** Minimal protobuf encoding, for requests proto-loader would refuse to build. */
export const pb = {
  varint(n: bigint | number): Buffer {
    let v = BigInt(n);
    if (v < 0n) v &= (1n << 64n) - 1n;
    const out: number[] = [];
    do {
      let b = Number(v & 0x7fn);
      v >>= 7n;
      if (v > 0n) b |= 0x80;
      out.push(b);
    } while (v > 0n);
    return Buffer.from(out);
  },
  /** A varint field (wire type 0). */
  uint(field: number, n: bigint | number): Buffer {
    return Buffer.concat([pb.varint(field << 3), pb.varint(n)]);
  },
  /** A length-delimited field (wire type 2): bytes, string or an embedded message. */
  bytes(field: number, b: Buffer | string): Buffer {
    const buf = typeof b === 'string' ? Buffer.from(b) : b;
    return Buffer.concat([pb.varint((field << 3) | 2), pb.varint(buf.length), buf]);
  },
  msg(...parts: Buffer[]): Buffer {
    return Buffer.concat(parts);
  },
};

/** Paths of the service's methods. */
export const METHOD = {
  Put: '/bob_storage.BobApi/Put',
  Get: '/bob_storage.BobApi/Get',
  Exist: '/bob_storage.BobApi/Exist',
  Delete: '/bob_storage.BobApi/Delete',
  Ping: '/bob_storage.BobApi/Ping',
} as const;

/** Key bytes: `n` as an unsigned little-endian integer of `size` bytes (bob's u64 keys). */
export function keyBytes(n: number | bigint, size: number): Buffer {
  const b = Buffer.alloc(size);
  let v = BigInt(n);
  for (let i = 0; i < size; i++) {
    b[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return b;
}
