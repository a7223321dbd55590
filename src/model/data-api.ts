// The data operations a client asks of the cluster (REST /data, gRPC without
// force_node): the node that receives them coordinates them.
import { MaybePromise } from './maybe-promise';
import { StoredValue, Version } from './version';
import { IncomingValue, OpenedValue } from './value';

export interface DataApi {
  /**
   * Stores value under key with a version stamped by this node: at bob's
   * `timestamp` when the client chose one (gRPC), else now. Resolves with the
   * version once the write is acknowledged.
   */
  put(key: Buffer, value: Buffer | IncomingValue, timestamp?: number): Promise<Version>;
  /**
   * The newest value, or null when the key is absent or deleted; at once,
   * not as a promise, when this node could answer from memory alone.
   */
  get(key: Buffer): MaybePromise<StoredValue | null>;
  /** With `open`, a value too large to hold whole may come opened, to be read in parts. */
  get(key: Buffer, open: boolean): MaybePromise<StoredValue | OpenedValue | null>;
  /** Whether each key's newest record is a value. */
  exist(keys: Buffer[]): Promise<boolean[]>;
  /** Writes tombstones, versioned as put's writes are. */
  delete(key: Buffer, timestamp?: number): Promise<Version>;
}
