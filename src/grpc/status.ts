// Errors as gRPC statuses with bob's message conventions (
// peers parse the first word of the message), and back.
import * as grpc from '@grpc/grpc-js';
import { ErrorKind, OysterError } from '../model/errors';

// Each kind answers with the code of its cause: what a client may retry
// elsewhere or later is UNAVAILABLE, INTERNAL is left for Oyster's own bugs.
const CODE_BY_KIND: Record<ErrorKind, grpc.status> = {
  KeyNotFound: grpc.status.NOT_FOUND,
  VDiskNotFound: grpc.status.NOT_FOUND,
  NotFound: grpc.status.NOT_FOUND,
  Timeout: grpc.status.DEADLINE_EXCEEDED,
  HolderTemporaryUnavailable: grpc.status.UNAVAILABLE,
  InvalidArgument: grpc.status.INVALID_ARGUMENT,
  Conflict: grpc.status.FAILED_PRECONDITION,
  Corruption: grpc.status.DATA_LOSS,
  NoSpace: grpc.status.RESOURCE_EXHAUSTED,
  Unsupported: grpc.status.UNIMPLEMENTED,
  Storage: grpc.status.UNAVAILABLE,
  VDiskIsNotReady: grpc.status.UNAVAILABLE,
  DCIsNotAvailable: grpc.status.UNAVAILABLE,
  PossibleDiskDisconnection: grpc.status.UNAVAILABLE,
  Failed: grpc.status.UNAVAILABLE,
  PearlChangeState: grpc.status.FAILED_PRECONDITION,
  RequestFailedCompletely: grpc.status.UNAVAILABLE,
  Internal: grpc.status.INTERNAL,
};

/** Every code this node's services answer with: success, refusals, and each kind of error. */
export const ANSWER_CODES: readonly string[] = [
  ...new Set([grpc.status.OK, grpc.status.INVALID_ARGUMENT, grpc.status.UNAUTHENTICATED, grpc.status.PERMISSION_DENIED, ...Object.values(CODE_BY_KIND)]),
].map((code) => grpc.status[code]);

export function toStatus(err: unknown): Partial<grpc.StatusObject> {
  if (err instanceof OysterError) {
    // bob's peers recognise "Storage ..." for a damaged record as well.
    const details = err.kind === 'Corruption' ? `Storage ${err.message}` : err.message;
    return { code: CODE_BY_KIND[err.kind], details };
  }
  return { code: grpc.status.INTERNAL, details: `Internal ${err instanceof Error ? err.message : String(err)}` };
}

/** A call ended with a status of its own (a refusal), answered as it is. */
export class StatusError extends Error {
  constructor(
    readonly code: grpc.status,
    message: string,
  ) {
    super(message);
  }
}

export function invalidArgument(details: string): Partial<grpc.StatusObject> {
  return { code: grpc.status.INVALID_ARGUMENT, details };
}

/** A status received from a peer, as an OysterError (bob's first-word convention). */
export function fromStatus(err: grpc.ServiceError): OysterError {
  const msg = err.details || err.message;
  const first = msg.split(' ', 1)[0];
  switch (err.code) {
    case grpc.status.NOT_FOUND:
      return new OysterError(first === 'VDiskNotFound' ? 'VDiskNotFound' : 'KeyNotFound', msg);
    case grpc.status.DEADLINE_EXCEEDED:
      return new OysterError('Timeout', `Timeout ${msg}`);
    case grpc.status.UNAVAILABLE:
      return new OysterError(first === 'HolderTemporaryUnavailable' ? 'HolderTemporaryUnavailable' : 'Failed', `Failed ${msg}`);
    case grpc.status.DATA_LOSS:
      return new OysterError('Corruption', msg);
    case grpc.status.INVALID_ARGUMENT:
      return new OysterError('InvalidArgument', msg);
    case grpc.status.UNIMPLEMENTED:
      return new OysterError('Unsupported', msg);
    case grpc.status.RESOURCE_EXHAUSTED:
      // Also grpc-js's own answer to a message over a size limit.
      return first === 'NoSpace' ? new OysterError('NoSpace', msg) : new OysterError('Failed', `Failed ${msg}`);
    default:
      return new OysterError('Failed', `Failed ${msg}`);
  }
}
