// The data operations a client asks of the cluster (REST /data, gRPC without
// force_node): the node that receives them coordinates them.
export interface DataApi {
  put(key: Buffer, value: Buffer, timestamp: number): Promise<void>;
  /** The newest value, or null when the key is absent or deleted. */
  get(key: Buffer): Promise<{ timestamp: number; value: Buffer } | null>;
  exist(keys: Buffer[]): Promise<boolean[]>;
  delete(key: Buffer, timestamp: number): Promise<void>;
}
