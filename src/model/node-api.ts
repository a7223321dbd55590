// The operations one node performs on its own storage (bob's force_node
// requests). The coordinator talks to this node and to its peers through the
// same interface: LocalNode over the backend, PeerClient over gRPC.
import { KeyState, StoredRecord, Version } from './version';

/** Where a node looks: its replicas (normal), the alien copies it holds for others (alien), or both. */
export type GetSource = 'all' | 'normal' | 'alien';

/**
 * What a node answered for one key of an Exist: a record's state, a value
 * of unknown version (a bob peer answers only "present"), or null: nothing.
 */
export type ExistAnswer = KeyState | { kind: 'found'; version: null } | null;

export interface DeleteOptions {
  /** Delete alien copies held for the key's owners instead of local replicas. */
  isAlien: boolean;
  /** Owners whose alien tombstone is written even where no alien copy exists. */
  forceAlienNodes: string[];
}

/**
 * Every call rejects when the node could not look where the records are
 * (a disk out of service, a peer unreachable): null and absence are answers
 * only from a node that could ask its storage.
 */
export interface NodeApi {
  readonly name: string;
  /** Into this node's replicas, or as aliens held for `remoteNodes` when given. */
  put(key: Buffer, value: Buffer, version: Version, remoteNodes: string[]): Promise<void>;
  /** The newest record; null: nothing known (absent, or a bob peer, which does not report tombstones). */
  get(key: Buffer, source: GetSource): Promise<StoredRecord | null>;
  exist(keys: Buffer[], source: GetSource): Promise<ExistAnswer[]>;
  delete(key: Buffer, version: Version, options: DeleteOptions): Promise<void>;
}
