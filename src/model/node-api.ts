// NodeApi: the storage contract of one node — what a node promises about the
// records it holds, whoever asks. The coordinator of a client's request
// (src/cluster/grinder.ts) reaches this node through src/store/node-store.ts
// and its peers through src/grpc/peer-client.ts, both behind this interface;
// bob peers reach it as BobApi's force_node requests.
//
// Records. A node holds, per key, any number of records: values and
// tombstones, each with a Version (./version.ts). The *newest* record of a
// key is the greatest by compareRecords: the later version wins; at equal
// versions a tombstone wins over a value (a delete is never undone by a copy
// of the value it deleted); two records that compare equal are the same write
// stored twice, and either may be returned. Nothing else chooses among
// records: not the order in which they arrived, nor the partition, disk or
// alien directory that holds them. So writes commute: storing a record older
// than one held succeeds and changes no answer.
//
// Places. A node's records of a key live in its replicas of the key's vdisk
// (one per local disk that cluster.yaml names for it) and in its alien
// directory: alien/<owner>/<vdisk> holds copies for an owner that could not
// take a write. GetSource selects the places a read asks.
//
// Failure. Every call rejects with an OysterError (./errors.ts) when the node
// could not do all it promises. A read rejects when a place it could not read
// might hold a record newer than its answer (a disk out of service, a record
// that failed its checksum, a peer unreachable): null is an answer only from
// a node that looked everywhere the newest record could be.
import { MaybePromise } from './maybe-promise';
import { IncomingValue, OpenedValue } from './value';
import { KeyState, StoredRecord, Version } from './version';

/**
 * Where a read looks: 'normal' = the local replicas and the alien copies
 * held for this node itself (written while a replica failed); 'alien' = the
 * alien copies held for any owner; 'all' = both.
 */
export type GetSource = 'all' | 'normal' | 'alien';

/**
 * What a node answered for one key of an Exist: the newest record's kind and
 * version, a value of unknown version (a bob peer answers only "present"),
 * or null: no record.
 */
export type ExistAnswer = KeyState | { kind: 'found'; version: null } | null;

export interface DeleteOptions {
  /** Tombstones for alien copies held for the key's owners instead of the local replicas. */
  isAlien: boolean;
  /** Owners whose alien tombstone is written even where no alien copy exists. */
  forceAlienNodes: string[];
}

export interface NodeApi {
  readonly name: string;

  /**
   * With no `remoteNodes`: stores the value at `version` in every local
   * replica of the key's vdisk. A replica that cannot take it (its disk out
   * of service or failing) is replaced by an alien copy held for this node,
   * which reads of 'normal' see. Resolves once every replica or that alien
   * copy holds the record (durably, when sync_writes is on). Rejects with
   * Conflict when the node holds no replica of the vdisk, with NoSpace when
   * replicas and alien directory are full, otherwise RequestFailedCompletely.
   *
   * With `remoteNodes`: stores one alien copy for each owner named, and
   * nothing in the replicas. Rejects with InvalidArgument for a name that is
   * not a node of the cluster, before anything is stored.
   */
  put(key: Buffer, version: Version, value: Buffer, remoteNodes: string[]): Promise<void>;

  /**
   * Whether putIncoming() can take a value of `key` in parts now: always
   * for this node; for a peer, an Oyster node that serves puts in parts and
   * is not known to be down (a bob node, or an Oyster node from before puts
   * in parts, does not). Never rejects.
   */
  takesParts(key: Buffer): MaybePromise<boolean>;

  /**
   * put() with no `remoteNodes` of a value that arrives in parts: each part
   * is written into the replicas as it comes, so that the node holds a few
   * of them at a time rather than the value (a replica out of service is
   * replaced by an alien copy held for this node, as in put()). Resolves
   * as put() does, once the last part is in; nothing of the value is read
   * before. Rejects as put() does, and when the value stops before its end
   * (value.next() rejected): then no replica holds any of it. A failure
   * before the value's end stops its reading (value.cancel()).
   */
  putIncoming(key: Buffer, version: Version, value: IncomingValue): Promise<void>;

  /**
   * The newest record of key in the places `source` names, tombstones
   * included, or null when none holds a record of it. A bob peer answers
   * null for a deleted key as well (it does not report tombstones). The
   * answer comes at once, not as a promise, when every place could give it
   * from memory and the page cache.
   */
  get(key: Buffer, source: GetSource): MaybePromise<StoredRecord | null>;
  /**
   * With `open`, a value over 64 KiB may come opened (OpenedValue: its
   * version, size and first bytes, and a reader of the rest, which the
   * caller closes) rather than read whole: this node's storage and an
   * Oyster peer open them, a bob peer sends every value whole.
   */
  get(key: Buffer, source: GetSource, open: boolean): MaybePromise<StoredRecord | OpenedValue | null>;

  /**
   * For each key, what get() would answer, without the value; at once, as
   * get(), when memory holds the answer.
   */
  exist(keys: Buffer[], source: GetSource): MaybePromise<ExistAnswer[]>;

  /**
   * Without `isAlien`: stores a tombstone at `version` in every local
   * replica (an alien tombstone for this node where a replica fails, as put
   * does) and in the alien copies held for this node that it outdates.
   * With `isAlien`: a tombstone for each owner of the key's vdisk where an
   * older alien copy of the key is held, and for the owners in
   * `forceAlienNodes` in any case (they missed the delete).
   */
  delete(key: Buffer, version: Version, options: DeleteOptions): Promise<void>;
}
