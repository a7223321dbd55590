// Oyster's Replicas service (oyster.proto): the digests and entries of this
// node's replica of a vdisk, and its closed files, for the anti-entropy of
// its peers; and the data operations of its peers' coordinators
// (./operations-service.ts).
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { NodeStore } from '../store/node-store';
import { files } from '../store/files';
import {
  DigestRequestMsg,
  DigestResponseMsg,
  EntriesRequestMsg,
  EntriesResponseMsg,
  FilesRequestMsg,
  FilesResponseMsg,
  ReadFileRequestMsg,
  ReplicasService,
  ResultBatchMsg,
} from './proto';
import { streamRooms } from './receive-budget';
import { BadRequest, CallParts, serverStream, unary } from './server';
import { OperationsEndpoint } from './operations-service';
import { encodeResultBatch } from './operation-codec';
import { encodeEntries } from './versions';

/** Bucket bits a peer may ask for: 2^16 digests are 512 KiB. */
export const MAX_DIGEST_BITS = 16;
/** Bytes of a file one ReadFile asks for at most. */
export const MAX_READ = 64 * 1024 * 1024;
/** ReadFile's chunks: large enough for few messages, small enough to keep a slow reader's share of memory small. */
export const READ_CHUNK = 1024 * 1024;


// A ReadFile chunk is read into the Buffer that is its serialized
// ReadFileChunk message (field 1's tag and length, then the bytes), so that
// it is not copied again on its way out, and a stream reuses its Buffers
// once grpc-js has copied them into its frames: a refill moves whole disks,
// and a fresh megabyte per chunk costs page faults and collections.
const CHUNK_HEADER = 4; // the tag, and the varint of a length < 2^21

/** One chunk of a ReadFile stream: its message bytes, and whether grpc-js took them. */
interface Chunk {
  buffer: Buffer;
  message: Buffer;
  full: boolean;
  serialized: boolean;
}

async function readChunk(file: string, at: number, length: number, buffer: Buffer): Promise<Chunk> {
  const n = await files.read(file, at, buffer.subarray(CHUNK_HEADER, CHUNK_HEADER + length));
  const header = [0x0a];
  for (let v = n; ; v >>>= 7) {
    if (v < 0x80) {
      header.push(v);
      break;
    }
    header.push((v & 0x7f) | 0x80);
  }
  const start = CHUNK_HEADER - header.length;
  buffer.set(header, start);
  return { buffer, message: buffer.subarray(start, CHUNK_HEADER + n), full: n === length, serialized: false };
}

/** The Replicas service's definition as this node serves it: ReadFile's chunks come serialized. */
export const replicasDefinition: grpc.ServiceDefinition = {
  ...ReplicasService,
  // Written and read by ./operation-codec.ts, not protobufjs: every data operation between peers passes here.
  // A batch reaches the endpoint as its bytes, decoded once it has room (./operations-service.ts).
  Operations: { ...ReplicasService.Operations, requestDeserialize: (message: Buffer) => message, responseSerialize: encodeResultBatch },
  ReadFile: {
    ...ReplicasService.ReadFile,
    // grpc-js copies what this returns before it returns from the write that called it.
    responseSerialize: (chunk: Chunk) => {
      chunk.serialized = true;
      return chunk.message;
    },
  },
};

export interface ReplicasServiceParts extends CallParts {
  store: NodeStore;
  operations: OperationsEndpoint;
}

function vdiskOf(parts: ReplicasServiceParts, vdisk: unknown): number {
  if (typeof vdisk !== 'number' || parts.store.topology.vdisk(vdisk) === undefined) throw new BadRequest(`unknown vdisk ${String(vdisk)}`);
  return vdisk;
}

function bitsOf(bits: unknown): number {
  if (typeof bits !== 'number' || !Number.isInteger(bits) || bits < 0 || bits > MAX_DIGEST_BITS) throw new BadRequest(`bits ${String(bits)} is not in 0..${MAX_DIGEST_BITS}`);
  return bits;
}

export function replicasService(parts: ReplicasServiceParts): grpc.UntypedServiceImplementation {
  const { store } = parts;
  return {
    Operations: (call: grpc.ServerDuplexStream<Buffer, ResultBatchMsg>) => parts.operations.handle(call, streamRooms(call)),

    Digest: unary<DigestRequestMsg, DigestResponseMsg>(parts, 'Digest', async (call) => {
      const vdisk = vdiskOf(parts, call.request.vdisk);
      const bits = bitsOf(call.request.bits);
      const { digests, keys } = await store.servingReplica(vdisk).run((v) => v.digest(bits));
      return { value: { digests, keys } };
    }),

    Files: unary<FilesRequestMsg, FilesResponseMsg>(parts, 'Files', async (call) => {
      const vdisk = vdiskOf(parts, call.request.vdisk);
      const partitions = await store.servingReplica(vdisk).run((v) => v.admin((ps) => ps.closedFiles()));
      return { value: { partitions: partitions.map((p) => ({ partition: p.partition, files: p.files.map((f) => ({ name: f.name, size: String(f.size) })) })) } };
    }),

    ReadFile: serverStream<ReadFileRequestMsg, Chunk>(parts, 'ReadFile', async function* (call) {
      const { partition, name } = call.request;
      const vdisk = vdiskOf(parts, call.request.vdisk);
      const offset = Number(call.request.offset);
      const length = call.request.length;
      if (!Number.isSafeInteger(offset) || offset < 0) throw new BadRequest(`offset ${String(call.request.offset)} is out of range`);
      if (!Number.isInteger(length) || length < 1 || length > MAX_READ) throw new BadRequest(`length ${length} is not in 1..${MAX_READ}`);
      const replica = store.servingReplica(vdisk);
      // Only the files Files lists: a closed blob or index file of a partition attached here.
      if (!(await replica.run((v) => v.admin((ps) => ps.isClosedFile(partition, name))))) {
        throw new BadRequest(`${partition}/${name} is not a closed file of vdisk ${vdisk} here`);
      }
      const file = path.join(replica.vdisk().dir, partition, name);
      const spare: Buffer[] = [];
      const read = (at: number) => {
        const buffer = spare.pop() ?? Buffer.allocUnsafeSlow(CHUNK_HEADER + READ_CHUNK);
        const p = replica.disk.use(() => readChunk(file, at, Math.min(READ_CHUNK, offset + length - at), buffer));
        // A client that cancels leaves the read ahead unawaited.
        p.catch(() => undefined);
        return p;
      };
      // The next chunk is read while this one travels.
      let next = read(offset);
      for (let at = offset; at < offset + length; at += READ_CHUNK) {
        const chunk = await next;
        const more = chunk.full && at + READ_CHUNK < offset + length;
        if (more) next = read(at + READ_CHUNK);
        yield chunk;
        // Written, and copied unless grpc-js queued it: then it keeps the Buffer.
        if (chunk.serialized) spare.push(chunk.buffer);
        if (!more) return;
      }
    }),

    Entries: unary<EntriesRequestMsg, EntriesResponseMsg>(parts, 'Entries', async (call) => {
      const vdisk = vdiskOf(parts, call.request.vdisk);
      const bits = bitsOf(call.request.bits);
      const buckets = call.request.buckets ?? [];
      if (buckets.some((b) => !Number.isInteger(b) || b < 0 || b >= 2 ** bits)) throw new BadRequest(`a bucket is not in 0..2^${bits}-1`);
      const entries = await store.servingReplica(vdisk).run((v) => v.entries(bits, buckets));
      return { value: { entries: encodeEntries(entries) } };
    }),
  };
}
