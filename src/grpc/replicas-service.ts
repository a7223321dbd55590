// Oyster's Replicas service (oyster.proto): the digests and entries of this
// node's replica of a vdisk, for the anti-entropy of its peers.
import * as grpc from '@grpc/grpc-js';
import { Backend } from '../backend/backend';
import { DigestRequestMsg, DigestResponseMsg, EntriesRequestMsg, EntriesResponseMsg } from './proto';
import { BadRequest, CallParts, unary } from './server';
import { encodeEntries } from './versions';

/** Bucket bits a peer may ask for: 2^16 digests are 512 KiB. */
export const MAX_DIGEST_BITS = 16;

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
