// The operations one node performs on its own storage (bob's force_node
// requests). The coordinator talks to this node and to its peers through the
// same interface: LocalNode over the backend, PeerClient over gRPC.
import { GetSource } from '../backend/backend';

export type Version = { kind: 'found'; timestamp: number; value: Buffer } | { kind: 'deleted'; timestamp: number };

/** What a node knows of a key without its value; timestamp is unknown when a bob peer answered. */
export interface KeyState {
  kind: 'found' | 'deleted';
  timestamp?: number;
}

export interface DeleteOptions {
  /** Delete alien copies held for the key's owners instead of local replicas. */
  isAlien: boolean;
  /** Owners whose alien tombstone is written even where no alien copy exists. */
  forceAlienNodes: string[];
}

export interface NodeApi {
  readonly name: string;
  /** Into this node's replicas, or as aliens held for `remoteNodes` when given. */
  put(key: Buffer, value: Buffer, timestamp: number, remoteNodes: string[]): Promise<void>;
  /** null: nothing known (absent, or a peer that does not report tombstones). */
  get(key: Buffer, source: GetSource): Promise<Version | null>;
  exist(keys: Buffer[], source: GetSource): Promise<Array<KeyState | null>>;
  delete(key: Buffer, timestamp: number, options: DeleteOptions): Promise<void>;
}
