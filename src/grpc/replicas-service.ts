// Oyster's Replicas service (oyster.proto): the digests and entries of this
// node's replica of a vdisk, and its closed files, for the anti-entropy of
// its peers.
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { Backend } from '../backend/backend';
import { files } from '../engine/files';
import {
  DigestRequestMsg,
  DigestResponseMsg,
  EntriesRequestMsg,
  EntriesResponseMsg,
  FilesRequestMsg,
  FilesResponseMsg,
  ReadFileRequestMsg,
  ReadFileResponseMsg,
} from './proto';
import { BadRequest, CallParts, unary } from './server';
import { encodeEntries } from './versions';

/** Bucket bits a peer may ask for: 2^16 digests are 512 KiB. */
export const MAX_DIGEST_BITS = 16;
/** Bytes of a file a ReadFile answers at most. */
export const MAX_READ = 4 * 1024 * 1024;

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export interface ReplicasServiceParts extends CallParts {
  backend: Backend;
}

function vdiskOf(parts: ReplicasServiceParts, vdisk: unknown): number {
  if (typeof vdisk !== 'number' || parts.backend.topology.vdisk(vdisk) === undefined) throw new BadRequest(`unknown vdisk ${String(vdisk)}`);
  return vdisk;
}

function bitsOf(bits: unknown): number {
  if (typeof bits !== 'number' || !Number.isInteger(bits) || bits < 0 || bits > MAX_DIGEST_BITS) throw new BadRequest(`bits ${String(bits)} is not in 0..${MAX_DIGEST_BITS}`);
  return bits;
}

export function replicasService(parts: ReplicasServiceParts): grpc.UntypedServiceImplementation {
  const { backend } = parts;
  return {
    Digest: unary<DigestRequestMsg, DigestResponseMsg>(parts, 'Digest', async (call) => {
      const vdisk = vdiskOf(parts, call.request.vdisk);
      const bits = bitsOf(call.request.bits);
      const group = backend.replicaGroup(vdisk);
      const { digests, keys } = await group.disk.use(() => group.group().digest(bits));
      return { value: { digests, keys } };
    }),

    Files: unary<FilesRequestMsg, FilesResponseMsg>(parts, 'Files', async (call) => {
      const vdisk = vdiskOf(parts, call.request.vdisk);
      const replica = backend.replicaGroup(vdisk);
      const partitions = await replica.disk.use(() => replica.group().closedFiles());
      return { value: { partitions: partitions.map((p) => ({ partition: p.partition, files: p.files.map((f) => ({ name: f.name, size: String(f.size) })) })) } };
    }),

    ReadFile: unary<ReadFileRequestMsg, ReadFileResponseMsg>(parts, 'ReadFile', async (call) => {
      const { partition, name } = call.request;
      const vdisk = vdiskOf(parts, call.request.vdisk);
      const offset = Number(call.request.offset);
      const length = call.request.length;
      if (!Number.isSafeInteger(offset) || offset < 0) throw new BadRequest(`offset ${String(call.request.offset)} is out of range`);
      if (!Number.isInteger(length) || length < 1 || length > MAX_READ) throw new BadRequest(`length ${length} is not in 1..${MAX_READ}`);
      const replica = backend.replicaGroup(vdisk);
      const group = replica.group();
      // Only the files Files lists: a partition attached here and one of its blob or index files.
      const attached = group.partitions().find((h) => h.dirName === partition);
      const prefix = attached ? group.blobFilePrefix(partition) : '';
      if (!attached || !new RegExp(`^${escape(prefix)}\\.\\d{1,19}\\.(blob|index)$`).test(name)) {
        throw new BadRequest(`${partition}/${name} is not a closed file of vdisk ${vdisk} here`);
      }
      const data = await replica.disk.use(() => files.read(path.join(attached.dir, name), offset, length));
      return { value: { data } };
    }),

    Entries: unary<EntriesRequestMsg, EntriesResponseMsg>(parts, 'Entries', async (call) => {
      const vdisk = vdiskOf(parts, call.request.vdisk);
      const bits = bitsOf(call.request.bits);
      const buckets = call.request.buckets ?? [];
      if (buckets.some((b) => !Number.isInteger(b) || b < 0 || b >= 2 ** bits)) throw new BadRequest(`a bucket is not in 0..2^${bits}-1`);
      const group = backend.replicaGroup(vdisk);
      const entries = await group.disk.use(() => group.group().entries(bits, buckets));
      return { value: { entries: encodeEntries(entries) } };
    }),
  };
}
