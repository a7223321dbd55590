// bob's BobApi service definition, loaded from bob.proto, Oyster's own
// Replicas service from oyster.proto, and the message shapes as
// @grpc/proto-loader presents them (keepCase, 64-bit ints as strings).
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

// dist/src/grpc/proto.js -> <package root>/src/grpc/*.proto
const PROTOS = ['bob.proto', 'oyster.proto'].map((f) => path.resolve(__dirname, '..', '..', '..', 'src', 'grpc', f));

const definition = protoLoader.loadSync(PROTOS, {
  keepCase: true,
  longs: String, // u64 timestamps arrive as decimal strings: no precision is lost before validation
  enums: Number, // unknown enum values stay visible as numbers and are rejected, never guessed
  defaults: true,
  oneofs: false,
});

const pkg = grpc.loadPackageDefinition(definition) as unknown as {
  bob_storage: { BobApi: grpc.ServiceClientConstructor };
  oyster: { Replicas: grpc.ServiceClientConstructor };
};

export const BobApi = pkg.bob_storage.BobApi;
export const BobApiService = BobApi.service;
export const Replicas = pkg.oyster.Replicas;
export const ReplicasService = Replicas.service;

export const GetSource = { ALL: 0, NORMAL: 1, ALIEN: 2 } as const;

export interface BlobKeyMsg {
  key: Buffer;
}
export interface BlobMetaMsg {
  timestamp: string | number;
  oyster_tick?: string | number;
  oyster_node?: number;
  oyster_deleted?: boolean;
}
export interface BlobMsg {
  data: Buffer;
  meta: BlobMetaMsg | null;
}
export interface PutRequestMsg {
  key: BlobKeyMsg | null;
  data: BlobMsg | null;
  options: { remote_nodes: string[]; force_node: boolean; overwrite: boolean } | null;
}
export interface GetOptionsMsg {
  force_node: boolean;
  source: number;
  oyster_versions?: boolean;
}
export interface GetRequestMsg {
  key: BlobKeyMsg | null;
  options: GetOptionsMsg | null;
}
export interface ExistRequestMsg {
  keys: Array<BlobKeyMsg | null>;
  options: GetOptionsMsg | null;
}
export interface DeleteRequestMsg {
  key: BlobKeyMsg | null;
  meta: BlobMetaMsg | null;
  options: { force_alien_nodes: string[]; force_node: boolean; is_alien: boolean } | null;
}
export interface ExistResponseMsg {
  exist: boolean[];
  oyster_states?: Buffer;
}

export interface DigestRequestMsg {
  vdisk: number;
  bits: number;
}
export interface DigestResponseMsg {
  digests: Buffer;
  keys: string | number;
}
export interface EntriesRequestMsg {
  vdisk: number;
  bits: number;
  buckets: number[];
}
export interface EntriesResponseMsg {
  entries: Buffer;
}
export interface FilesRequestMsg {
  vdisk: number;
}
export interface FilesResponseMsg {
  partitions: Array<{ partition: string; files: Array<{ name: string; size: string | number }> }>;
}
export interface ReadFileRequestMsg {
  vdisk: number;
  partition: string;
  name: string;
  offset: string | number;
  length: number;
}
export interface ReadFileChunkMsg {
  data: Buffer;
}

export const OperationKind = { PUT: 0, GET: 1, EXIST: 2, DELETE: 3, PUT_PART: 4 } as const;

export interface OperationMsg {
  id: number;
  kind: number;
  keys: Buffer[];
  value?: Buffer;
  timestamp?: string | number;
  tick?: string | number;
  node?: number;
  source?: number;
  remote_nodes?: string[];
  is_alien?: boolean;
  force_alien_nodes?: string[];
  whole_up_to?: number;
  offset?: number;
  length?: number;
  check_rest?: boolean;
  size?: number;
  abort?: boolean;
}
export interface OperationBatchMsg {
  ops: OperationMsg[];
}
export interface ResultMsg {
  id: number;
  code?: number;
  details?: string;
  kind?: number;
  timestamp?: string | number;
  tick?: string | number;
  node?: number;
  value?: Buffer;
  states?: Buffer;
  size?: number;
}
export interface ResultBatchMsg {
  results: ResultMsg[];
}
