// Every label set a counter can take, created at 0 when the node starts. A
// series that appears only with its first increment has no earlier sample,
// so increase() and rate() miss that first corruption or error and alerts on
// them never fire for it.
import { NodeMetrics, OPERATIONS, OUTCOMES } from './registry';

export interface KnownLabels {
  /** The other nodes of the cluster. */
  peers: readonly string[];
  /** What this node calls its peers for (PeerClient's operations). */
  peerOperations: readonly string[];
  /** The gRPC methods this node serves, and the status codes it answers with. */
  grpcMethods: readonly string[];
  grpcCodes: readonly string[];
  /** This node's disks and the alien directory's name. */
  disks: readonly string[];
  /** Nodes whose alien records this node may keep: every node, itself included. */
  owners: readonly string[];
  /** Replicas anti-entropy copies from: nodes, and node/disk for this node's other disks. */
  sources: readonly string[];
}

export function startAtZero(m: NodeMetrics, k: KnownLabels): void {
  for (const operation of OPERATIONS) {
    for (const outcome of OUTCOMES) {
      // REST has no Exist: a HEAD is a get.
      if (operation !== 'exist') m.requests.child('rest', operation, 'coordinated', outcome);
      m.requests.child('grpc', operation, 'coordinated', outcome);
      m.requests.child('grpc', operation, 'local', outcome);
      if (outcome !== 'invalid' && outcome !== 'unavailable') m.engineOperations.child(operation, outcome);
    }
  }
  for (const peer of k.peers) for (const op of k.peerOperations) for (const outcome of OUTCOMES) m.peerRequests.child(peer, op, outcome);
  for (const method of k.grpcMethods) for (const code of k.grpcCodes) m.grpcRequests.child(method, code);
  for (const direction of ['written', 'read']) m.engineBytes.child(direction);
  for (const disk of k.disks) {
    m.corruptRecords.inc({ disk }, 0);
    m.compactedBlobs.inc({ disk }, 0);
    m.compactionReclaimed.inc({ disk }, 0);
    m.compactionIo.inc({ disk }, 0);
    for (const reason of ['no_space', 'error']) m.compactionSkipped.inc({ disk, reason }, 0);
    m.scrubBytes.inc({ disk }, 0);
    m.scrubDamaged.inc({ disk }, 0);
    for (const outcome of ['repaired', 'unrepairable', 'failed']) m.scrubRepairs.inc({ disk, outcome }, 0);
  }
  for (const owner of k.owners) m.aliensHandedOver.inc({ owner }, 0);
  for (const source of k.sources) m.antiEntropyRecords.inc({ source }, 0);
  for (const operation of ['get', 'exist']) m.unansweredReads.inc({ operation }, 0);
  for (const outcome of ['repaired', 'failed', 'dropped']) m.readRepairs.inc({ outcome }, 0);
  m.restBodyRefused.inc(0);
  for (const reason of ['max_calls', 'request_timeout']) m.grpcCallsRefused.inc({ reason }, 0);
}
