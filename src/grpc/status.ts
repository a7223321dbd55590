// Errors as gRPC statuses with bob's message conventions (reference §4.8:
// peers parse the first word of the message), and back.
import * as grpc from '@grpc/grpc-js';
import { ErrorKind, OysterError } from '../backend/errors';

const CODE_BY_KIND: Record<ErrorKind, grpc.status> = {
  KeyNotFound: grpc.status.NOT_FOUND,
  VDiskNotFound: grpc.status.NOT_FOUND,
  NotFound: grpc.status.NOT_FOUND,
  Timeout: grpc.status.DEADLINE_EXCEEDED,
  HolderTemporaryUnavailable: grpc.status.UNAVAILABLE,
  InvalidArgument: grpc.status.INVALID_ARGUMENT,
  Conflict: grpc.status.FAILED_PRECONDITION,
  Corruption: grpc.status.DATA_LOSS,
  Storage: grpc.status.INTERNAL,
  VDiskIsNotReady: grpc.status.INTERNAL,
  DCIsNotAvailable: grpc.status.INTERNAL,
  PossibleDiskDisconnection: grpc.status.INTERNAL,
  Failed: grpc.status.INTERNAL,
  Internal: grpc.status.INTERNAL,
  PearlChangeState: grpc.status.INTERNAL,
  RequestFailedCompletely: grpc.status.INTERNAL,
};

export function toStatus(err: unknown): Partial<grpc.StatusObject> {
  if (err instanceof OysterError) {
    // bob's peers recognise "Storage ..." for a damaged record as well.
    const details = err.kind === 'Corruption' ? `Storage ${err.message}` : err.message;
    return { code: CODE_BY_KIND[err.kind], details };
  }
  return { code: grpc.status.INTERNAL, details: `Internal ${err instanceof Error ? err.message : String(err)}` };
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
    default:
      return new OysterError('Failed', `Failed ${msg}`);
  }
}
