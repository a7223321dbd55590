// The errors of the storage and cluster layers. Kinds follow bob's error
// kinds (reference §4.8) so that gRPC statuses can keep bob's message
// conventions; the REST layer maps them to HTTP statuses.

export type ErrorKind =
  | 'KeyNotFound'
  | 'VDiskNotFound'
  | 'Timeout'
  | 'Storage'
  | 'VDiskIsNotReady'
  | 'DCIsNotAvailable'
  | 'PossibleDiskDisconnection'
  | 'Failed'
  | 'Internal'
  | 'PearlChangeState'
  | 'RequestFailedCompletely'
  | 'HolderTemporaryUnavailable'
  // Oyster's own, for precise REST statuses:
  | 'NotFound' // an unknown disk or partition
  | 'Conflict' // a state change that contradicts the current state
  | 'Corruption' // stored data failed its checksum
  | 'InvalidArgument';

export class OysterError extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    /** Corruption: the timestamp of the damaged record. */
    readonly timestamp?: number,
  ) {
    super(message);
    this.name = 'OysterError';
  }
}

export function isOysterError(err: unknown, kind?: ErrorKind): err is OysterError {
  return err instanceof OysterError && (kind === undefined || err.kind === kind);
}

export const errors = {
  keyNotFound: (hexKey: string) => new OysterError('KeyNotFound', `KeyNotFound ${hexKey}`),
  vdiskNotFound: (id: number) => new OysterError('VDiskNotFound', `VDiskNotFound ${id}`),
  diskNotReady: (disk: string) => new OysterError('DCIsNotAvailable', `Disk Controller is not available: ${disk}`),
  unavailable: (what: string) => new OysterError('HolderTemporaryUnavailable', `HolderTemporaryUnavailable ${what}`),
  internal: (msg: string) => new OysterError('Internal', `Internal ${msg}`),
  failed: (msg: string) => new OysterError('Failed', `Failed ${msg}`),
  notFound: (msg: string) => new OysterError('NotFound', msg),
  conflict: (msg: string) => new OysterError('Conflict', msg),
  corruption: (msg: string, timestamp?: number) => new OysterError('Corruption', msg, timestamp),
  storage: (msg: string) => new OysterError('Storage', `Storage ${msg}`),
};
