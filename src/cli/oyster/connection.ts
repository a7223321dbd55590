// The options that say which node to talk to and how, shared by the data
// commands and the benchmark.
import { KEY_SIZES } from '../../config/cluster-config';
import { parseDuration } from '../../config/duration';
import { DataClient } from './client';
import { integerOption, parsedOption } from './command';
import { UsageError } from './exit-codes';
import { RestClient } from './rest-client';

export const DEFAULT_REST = 'http://127.0.0.1:8000';

export const connectionOptions = {
  rest: { type: 'string' },
  grpc: { type: 'string' },
  user: { type: 'string', short: 'u' },
  password: { type: 'string' },
  timeout: { type: 'string' },
  'key-size': { type: 'string' },
} as const;

export const CONNECTION_HELP = `Connection:
  --rest URL           the node's REST API (default ${DEFAULT_REST})
  --grpc HOST:PORT     use bob's gRPC protocol instead (e.g. 127.0.0.1:20000)
  -u, --user NAME      Basic authentication user
  --password TEXT      its password (or set OYSTER_PASSWORD, which keeps it out of the process list)
  --timeout DURATION   per request (default 30s)
  --key-size BYTES     the cluster's key size: 8, 16 (default) or 32; gRPC sends keys of this size`;

export interface ConnectionValues {
  rest?: string;
  grpc?: string;
  user?: string;
  password?: string;
  timeout?: string;
  'key-size'?: string;
}

export function keySizeOf(values: ConnectionValues): number {
  const k = integerOption(values['key-size'], 'key-size', 16, 1, 1024);
  if (!(KEY_SIZES as readonly number[]).includes(k)) throw new UsageError('--key-size: must be 8, 16 or 32');
  return k;
}

/** The client the options describe; `connections` is how many requests the caller runs at once. */
export async function connect(values: ConnectionValues, connections: number): Promise<DataClient> {
  if (values.rest !== undefined && values.grpc !== undefined) throw new UsageError('give --rest or --grpc, not both');
  const timeoutMs = values.timeout === undefined ? 30_000 : parsedOption(values.timeout, 'timeout', parseDuration);
  if (!(timeoutMs > 0)) throw new UsageError('--timeout: must be greater than 0');
  if (values.password !== undefined && values.user === undefined) throw new UsageError('--password needs --user');
  const auth = { user: values.user, password: values.password ?? process.env.OYSTER_PASSWORD };
  if (values.grpc !== undefined) {
    // Loading gRPC and the protocol costs a few hundred milliseconds: only when asked for.
    const { GrpcClient } = await import('./grpc-client');
    return new GrpcClient(values.grpc, { ...auth, timeoutMs });
  }
  return new RestClient(values.rest ?? DEFAULT_REST, { ...auth, timeoutMs, connections });
}
