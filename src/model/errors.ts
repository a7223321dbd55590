// The errors of the storage and cluster layers. Kinds follow bob's error
// kinds so that gRPC statuses can keep bob's message
// conventions; the REST layer maps them to HTTP statuses.
import { Version } from '../model/version';

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
  | 'NoSpace' // the disk is full
  | 'Unsupported' // a peer does not serve the request (a bob node asked for Oyster's own)
  | 'InvalidArgument';

export class OysterError extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    /** Corruption: the version of the damaged record. */
    readonly version?: Version,
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
  corruption: (msg: string, version?: Version) => new OysterError('Corruption', msg, version),
  noSpace: (msg: string) => new OysterError('NoSpace', `NoSpace ${msg}`),
  /** A request for a vdisk this node holds no replica of: the caller asked the wrong node. */
  noReplica: (node: string, vdisk: number) => new OysterError('Conflict', `node ${node} holds no replica of vdisk ${vdisk}`),
  storage: (msg: string) => new OysterError('Storage', `Storage ${msg}`),
};
