// grpc-js writes its own messages as plain text to stderr (a client's
// excess keepalive pings, its traces under GRPC_TRACE): into the node's JSON
// log instead, so that every line a node prints is JSON.
import { format } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import { Logger } from '../logging/logger';

export function logGrpcJsInto(log: Logger): void {
  const line = (write: (obj: object, msg: string) => void) => (...args: unknown[]) => write({ source: 'grpc-js' }, `grpc-js: ${format(...args)}`);
  // grpc-js's "error" is its own trouble (a peer's excess pings): the node
  // reports what it means for itself at error.
  grpc.setLogger({ error: line((o, m) => log.warn(o, m)), info: line((o, m) => log.info(o, m)), debug: line((o, m) => log.debug(o, m)) });
}
