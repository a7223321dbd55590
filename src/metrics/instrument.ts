// Counts and times data operations where they enter the node, without the
// layers below knowing about metrics: a DataApi (coordinated requests) or a
// NodeApi (requests served from this node's storage) wrapped for an
// interface.
import { isOysterError } from '../model/errors';
import { CompactorObserver } from '../store/compactor';
import { ScrubObserver } from '../store/scrubber';
import { StorageObserver } from '../store/vdisk';
import { DataApi } from '../model/data-api';
import { MaybePromise } from '../model/maybe-promise';
import { StoredRecord, StoredValue } from '../model/version';
import { OpenedValue } from '../model/value';
import { GetSource, NodeApi } from '../model/node-api';
import { secondsSince } from './hot';
import { Interface, NodeMetrics, Outcome, RequestPath } from './registry';

export function outcomeOf(err: unknown): Outcome {
  if (isOysterError(err, 'KeyNotFound') || isOysterError(err, 'VDiskNotFound') || isOysterError(err, 'NotFound')) return 'not_found';
  if (isOysterError(err, 'InvalidArgument')) return 'invalid';
  if (
    isOysterError(err, 'DCIsNotAvailable') ||
    isOysterError(err, 'HolderTemporaryUnavailable') ||
    isOysterError(err, 'PossibleDiskDisconnection') ||
    isOysterError(err, 'RequestFailedCompletely') ||
    isOysterError(err, 'Failed') ||
    isOysterError(err, 'Timeout')
  ) {
    return 'unavailable';
  }
  return 'error';
}

interface Recorder {
  <T>(operation: string, run: () => Promise<T>, found?: (v: T) => boolean): Promise<T>;
  /** An answer in hand is counted and passed on at once. */
  <T>(operation: string, run: () => MaybePromise<T>, found?: (v: T) => boolean): MaybePromise<T>;
}

function recorder(m: NodeMetrics, iface: Interface, path: RequestPath): Recorder {
  // The children of each operation's label sets, looked up once.
  const children = new Map<string, { duration: ReturnType<NodeMetrics['requestDuration']['child']>; outcomes: Map<Outcome, ReturnType<NodeMetrics['requests']['child']>> }>();
  const count = (operation: string, start: number, outcome: Outcome) => {
    let c = children.get(operation);
    if (c === undefined) children.set(operation, (c = { duration: m.requestDuration.child(iface, operation, path), outcomes: new Map() }));
    let counter = c.outcomes.get(outcome);
    if (counter === undefined) c.outcomes.set(outcome, (counter = m.requests.child(iface, operation, path, outcome)));
    c.duration.observe(secondsSince(start));
    counter.inc();
  };
  return (<T>(operation: string, run: () => MaybePromise<T>, found?: (v: T) => boolean): MaybePromise<T> => {
    const start = performance.now();
    let v: MaybePromise<T>;
    try {
      v = run();
    } catch (err) {
      count(operation, start, outcomeOf(err));
      return Promise.reject(err);
    }
    if (!(v instanceof Promise)) {
      count(operation, start, found && !found(v) ? 'not_found' : 'ok');
      return v;
    }
    return v.then(
      (r) => {
        count(operation, start, found && !found(r) ? 'not_found' : 'ok');
        return r;
      },
      (err: unknown) => {
        count(operation, start, outcomeOf(err));
        throw err;
      },
    );
  }) as Recorder;
}

/**
 * Coordinated GETs, the most frequent request of all, counted without the
 * closures and label lookups of a Recorder (their label sets are fixed), and
 * answered at once when the read was.
 */
function recordedGet(api: DataApi, m: NodeMetrics, iface: Interface): DataApi['get'] {
  const duration = m.requestDuration.child(iface, 'get', 'coordinated');
  const ok = m.requests.child(iface, 'get', 'coordinated', 'ok');
  const notFound = m.requests.child(iface, 'get', 'coordinated', 'not_found');
  const answered = <V extends StoredValue | OpenedValue>(start: number, v: V | null): V | null => {
    (v === null ? notFound : ok).inc();
    duration.observe(secondsSince(start));
    return v;
  };
  const failed = (start: number, err: unknown): never => {
    m.requests.child(iface, 'get', 'coordinated', outcomeOf(err)).inc();
    duration.observe(secondsSince(start));
    throw err;
  };
  return ((key: Buffer, open: boolean = false) => {
    const start = performance.now();
    const v = api.get(key, open);
    if (!(v instanceof Promise)) return answered(start, v);
    return v.then(
      (r) => answered(start, r),
      (err: unknown) => failed(start, err),
    );
  }) as DataApi['get'];
}

/** Coordinated requests arriving over `iface`. */
export function instrumentData(api: DataApi, m: NodeMetrics, iface: Interface): DataApi {
  const record = recorder(m, iface, 'coordinated');
  return {
    put: (key, value, timestamp) => record('put', () => api.put(key, value, timestamp)),
    get: recordedGet(api, m, iface),
    exist: (keys) => record('exist', () => api.exist(keys)),
    delete: (key, timestamp) => record('delete', () => api.delete(key, timestamp)),
  };
}

/** Requests served from this node's own storage (gRPC force_node). */
export function instrumentLocal(api: NodeApi, m: NodeMetrics): NodeApi {
  const record = recorder(m, 'grpc', 'local');
  return {
    name: api.name,
    put: (key, version, value, remote) => record('put', () => api.put(key, version, value, remote)),
    takesParts: (key) => api.takesParts(key),
    putIncoming: (key, version, value) => record('put', () => api.putIncoming(key, version, value)),
    get: ((key: Buffer, source: GetSource, open: boolean = false) =>
      record('get', () => api.get(key, source, open), (v: StoredRecord | OpenedValue | null) => v?.kind === 'found')) as NodeApi['get'],
    exist: (keys, source) => record('exist', () => api.exist(keys, source)),
    delete: (key, version, options) => record('delete', () => api.delete(key, version, options)),
  };
}

/** The PeerClient hook: one call to a peer finished. */
export function peerObserver(m: NodeMetrics, peer: string) {
  // Every inter-node operation passes here: the children of its successes are looked up once.
  const done = new Map<string, { ok: ReturnType<NodeMetrics['peerRequests']['child']>; duration: ReturnType<NodeMetrics['peerDuration']['child']> }>();
  return (operation: string, err: unknown, seconds: number): void => {
    let c = done.get(operation);
    if (c === undefined) done.set(operation, (c = { ok: m.peerRequests.child(peer, operation, 'ok'), duration: m.peerDuration.child(peer, operation) }));
    (err === null ? c.ok : m.peerRequests.child(peer, operation, outcomeOf(err))).inc();
    c.duration.observe(seconds);
  };
}

/** The Vdisk hook: engine operations, bytes and damaged records. */
export function storageObserver(m: NodeMetrics, disk: string): StorageObserver {
  const written = m.engineBytes.child('written');
  const read = m.engineBytes.child('read');
  return {
    engine(operation, outcome, bytes) {
      m.engineOperations.child(operation, outcome).inc();
      if (bytes > 0) (operation === 'put' ? written : read).inc(bytes);
    },
    corrupt(records) {
      m.corruptRecords.inc({ disk }, records);
    },
  };
}

/** What the scrub of one disk reports (store/scrubber.ts). */
export function scrubObserver(m: NodeMetrics, disk: string): ScrubObserver {
  return {
    read(bytes) {
      if (bytes > 0) m.scrubBytes.inc({ disk }, bytes);
    },
    damaged(records) {
      m.scrubDamaged.inc({ disk }, records);
      m.corruptRecords.inc({ disk }, records);
    },
    repaired(outcome) {
      m.scrubRepairs.inc({ disk, outcome });
    },
    passed(finished) {
      m.scrubLastPass.set({ disk }, finished / 1000);
    },
  };
}

/** What compaction of one disk reports (store/compactor.ts). */
export function compactionObserver(m: NodeMetrics, disk: string, alien: boolean): CompactorObserver {
  return {
    compacted({ stats }) {
      m.compactedBlobs.inc({ disk });
      m.compactionReclaimed.inc({ disk }, stats.sourceSize - stats.newSize);
    },
    skipped(reason) {
      m.compactionSkipped.inc({ disk, reason });
    },
    io(bytes) {
      if (bytes > 0) m.compactionIo.inc({ disk }, bytes);
    },
    reclaimable(vdisk, bytes, records) {
      // Replicas only: the alien directory's vdisks are other nodes' and pass through.
      if (alien) return;
      m.reclaimableBytes.set({ disk, vdisk: String(vdisk) }, bytes);
      m.reclaimableRecords.set({ disk, vdisk: String(vdisk) }, records);
    },
  };
}
