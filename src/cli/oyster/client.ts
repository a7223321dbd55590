// The data operations `oyster` sends to a node, over REST or gRPC alike.
import { Key } from './keys';

export interface DataClient {
  /** Where requests go, for messages: `REST http://…` or `gRPC host:port`. */
  readonly endpoint: string;
  put(key: Key, value: Buffer): Promise<void>;
  /** The value, or null when the node has no such key. */
  get(key: Key): Promise<Buffer | null>;
  exists(keys: Key[]): Promise<boolean[]>;
  delete(key: Key): Promise<void>;
  /** Cheap request proving that the node answers (REST GET /status, gRPC Ping). */
  ping(): Promise<void>;
  close(): void;
}

/**
 * A request the node refused or failed. `kind` names the failure for error
 * counts: the HTTP status (`HTTP 500`), the gRPC code (`UNAVAILABLE`) or the
 * transport error (`ECONNREFUSED`).
 */
export class RequestError extends Error {
  override readonly name = 'RequestError';

  constructor(
    readonly kind: string,
    message: string,
  ) {
    super(message);
  }
}

/** The Authorization header value for Basic credentials (bob's form, also sent as gRPC metadata). */
export function basicAuth(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}
