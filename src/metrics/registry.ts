// The node's Prometheus metrics (docs/OPERATIONS.md lists every one).
// Names: oyster_ prefix, base units (seconds, bytes), _total counters; the
// process and Node.js metrics keep prom-client's standard names, which
// ready-made dashboards and alerts look for. No label names the node: the
// scrape target does. Request metrics keep bob's split between coordinated
// requests (cluster_grinder.* in bob) and requests served from this node's
// own storage (client.* in bob) in the `path` label.
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { HotCounter, HotHistogram } from './hot';

const LATENCY_BUCKETS: readonly number[] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export type Interface = 'rest' | 'grpc';
export type RequestPath = 'coordinated' | 'local';
export type Outcome = 'ok' | 'not_found' | 'invalid' | 'unavailable' | 'error';
export const OUTCOMES: readonly Outcome[] = ['ok', 'not_found', 'invalid', 'unavailable', 'error'];
export const OPERATIONS = ['put', 'get', 'exist', 'delete'] as const;

/** What oyster_build_info says about the running program. */
export interface BuildInfo {
  version: string;
  /** The source revision it was built from ("unknown" when not recorded). */
  revision: string;
}

export interface NodeMetrics {
  registry: Registry;
  restRequests: HotCounter<'method' | 'route' | 'status'>;
  restDuration: HotHistogram<'method' | 'route'>;
  /** Every gRPC call answered, refused and malformed ones included, by method and status code name. */
  grpcRequests: HotCounter<'method' | 'code'>;
  /** Data operations by interface, operation, coordinated or local path, and outcome. */
  requests: HotCounter<'interface' | 'operation' | 'path' | 'outcome'>;
  requestDuration: HotHistogram<'interface' | 'operation' | 'path'>;
  /** Calls this node makes to its peers. */
  peerRequests: HotCounter<'peer' | 'operation' | 'outcome'>;
  peerDuration: HotHistogram<'peer' | 'operation'>;
  peerUp: Gauge<'peer'>;
  /** Operation streams opened to a peer (src/grpc/operation-stream.ts): one per connection the peer's restarts or failures cost. */
  peerStreams: Counter<'peer'>;
  peerLinks: Counter<'peer'>;
  linksAccepted: Counter<'outcome'>;
  /** What each peer's `oyster_peer_operations_waiting` reads at a scrape (set as peers are made). */
  peerWaiting: Map<string, () => number>;
  /** Engine operations (per partition engine call) and the value bytes they moved. */
  engineOperations: HotCounter<'operation' | 'outcome'>;
  engineBytes: HotCounter<'direction'>;
  corruptRecords: Counter<'disk'>;
  diskReady: Gauge<'disk' | 'alien'>;
  /** 1 while a disk is kept out of service by its identity, by reason. */
  diskRefused: Gauge<'disk' | 'alien' | 'reason'>;
  /** 0 while a disk has less than min_free_space free and refuses writes. */
  diskWritable: Gauge<'disk' | 'alien'>;
  aliensHandedOver: Counter<'owner'>;
  /** Coordinated reads that failed because no replica of the key's vdisk could answer. */
  unansweredReads: Counter<'operation'>;
  /** Versions seen too far ahead of this node's clock to follow (a peer's or client's clock is wrong). */
  futureVersions: Counter;
  /** Replicas a read found stale and wrote the newest record to. */
  readRepairs: Counter<'outcome'>;
  /** Anti-entropy: records copied here from another replica, by source replica. */
  antiEntropyRecords: Counter<'source'>;
  antiEntropyBytes: Counter;
  /** Anti-entropy: digest and entry bytes received from other replicas. */
  antiEntropyExchanged: Counter;
  antiEntropyLastPass: Gauge;
  /** Compaction (store/compactor.ts): bytes a compaction would give back, per vdisk replica, as last counted. */
  reclaimableBytes: Gauge<'disk' | 'vdisk'>;
  reclaimableRecords: Gauge<'disk' | 'vdisk'>;
  compactedBlobs: Counter<'disk'>;
  compactionReclaimed: Counter<'disk'>;
  compactionIo: Counter<'disk'>;
  compactionSkipped: Counter<'disk' | 'reason'>;
  /** Scrub (store/scrubber.ts). */
  scrubBytes: Counter<'disk'>;
  scrubDamaged: Counter<'disk'>;
  scrubRepairs: Counter<'disk' | 'outcome'>;
  scrubLastPass: Gauge<'disk'>;
  antiEntropyPassSeconds: Gauge;
  /** When the TLS certificates in use expire (set at start when TLS is on). */
  tlsCertExpiry: Gauge<'certificate'>;
  /** Bytes of request bodies held against http_body_memory_limit. */
  restBodyBytes: Gauge;
  /** Request bodies refused (503) for want of room in http_body_memory_limit. */
  restBodyRefused: Counter;
  /** Peers' batches of operations held, against their own http_body_memory_limit. */
  peerBatchBytes: Gauge;
  /** gRPC calls open, against grpc_max_calls (../grpc/call-limit.ts). */
  grpcOpenCalls: Gauge;
  /** gRPC calls refused before they ran: past grpc_max_calls, or their request too slow. */
  grpcCallsRefused: Counter<'reason'>;
}

export function createMetrics(build: BuildInfo): NodeMetrics {
  const registry = new Registry();
  // The event-loop delay histogram samples on a timer; prom-client's default
  // 10 ms woke an idle node 100 times a second (16 ms of CPU per second);
  // 100 ms still gives a scrape every 15 s 150 samples.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 });
  // prom-client names these gauges *_total, which Prometheus reserves for
  // counters (promtool rejects them), and its gauges by type keep types that
  // are gone; one correctly named gauge replaces them.
  for (const name of ['active_handles', 'active_requests', 'active_resources']) {
    registry.removeSingleMetric(`nodejs_${name}`);
    registry.removeSingleMetric(`nodejs_${name}_total`);
  }
  const registers = [registry];
  new Gauge({
    name: 'oyster_build_info',
    help: 'Always 1: the version of Oyster, the source revision it was built from and the Node.js it runs on',
    labelNames: ['version', 'revision', 'nodejs'],
    registers,
  }).set({ version: build.version, revision: build.revision, nodejs: process.version }, 1);
  // A counter rather than a ratio: rate() gives the utilisation over any
  // window, whoever else scrapes the node and however often.
  new Counter({
    name: 'oyster_event_loop_busy_seconds_total',
    help: 'Time the event loop spent running code rather than waiting for I/O (rate() of it is the utilisation, 0 to 1)',
    registers,
    collect() {
      this.reset();
      this.inc(performance.eventLoopUtilization().active / 1000);
    },
  });
  new Gauge({
    name: 'nodejs_active_resources',
    help: 'Resources keeping the event loop alive, by type (process.getActiveResourcesInfo)',
    labelNames: ['type'],
    registers,
    collect() {
      this.reset();
      const counts = new Map<string, number>();
      for (const type of process.getActiveResourcesInfo()) counts.set(type, (counts.get(type) ?? 0) + 1);
      for (const [type, n] of counts) this.set({ type }, n);
    },
  });
  const peerWaiting = new Map<string, () => number>();
  new Gauge({
    name: 'oyster_peer_operations_waiting',
    help: 'Data operations sent or queued to a peer and not yet answered (bounded: beyond 4096, or 64 MiB of values, more fail at once)',
    labelNames: ['peer'],
    registers,
    collect() {
      for (const [peer, waiting] of peerWaiting) this.set({ peer }, waiting());
    },
  });
  return {
    registry,
    restRequests: new HotCounter({
      name: 'oyster_rest_requests_total',
      help: 'REST requests by method, route pattern and status code',
      labelNames: ['method', 'route', 'status'],
      registers,
    }),
    restDuration: new HotHistogram({
      name: 'oyster_rest_request_duration_seconds',
      help: 'REST request latency by method and route pattern',
      labelNames: ['method', 'route'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    grpcRequests: new HotCounter({
      name: 'oyster_grpc_requests_total',
      help: 'gRPC calls by method and status code (OK, NOT_FOUND, INVALID_ARGUMENT, ...), refused and malformed ones included',
      labelNames: ['method', 'code'],
      registers,
    }),
    requests: new HotCounter({
      name: 'oyster_requests_total',
      help: 'Data operations by interface (rest, grpc), operation, path (coordinated by this node, or local: served from its own storage) and outcome',
      labelNames: ['interface', 'operation', 'path', 'outcome'],
      registers,
    }),
    requestDuration: new HotHistogram({
      name: 'oyster_request_duration_seconds',
      help: 'Data operation latency by interface, operation and path',
      labelNames: ['interface', 'operation', 'path'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    peerRequests: new HotCounter({
      name: 'oyster_peer_requests_total',
      help: 'Calls to other nodes by peer, operation and outcome',
      labelNames: ['peer', 'operation', 'outcome'],
      registers,
    }),
    peerDuration: new HotHistogram({
      name: 'oyster_peer_request_duration_seconds',
      help: 'Latency of calls to other nodes by peer and operation',
      labelNames: ['peer', 'operation'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    peerStreams: new Counter({
      name: 'oyster_peer_streams_opened_total',
      help: 'Operation streams opened to a peer (one long-lived stream carries every data operation to an Oyster peer; a new one after it failed)',
      labelNames: ['peer'],
      registers,
    }),
    peerLinks: new Counter({
      name: 'oyster_peer_links_opened_total',
      help: 'Operation streams to a peer that went over an operations link (plain TCP) rather than gRPC',
      labelNames: ['peer'],
      registers,
    }),
    linksAccepted: new Counter({
      name: 'oyster_links_accepted_total',
      help: "Operations links peers opened to this node, by outcome: accepted, or refused (credentials, or this node's gRPC is TLS only)",
      labelNames: ['outcome'],
      registers,
    }),
    peerWaiting,
    peerUp: new Gauge({
      name: 'oyster_peer_up',
      help: 'Whether a peer answered its last ping (1) or not (0)',
      labelNames: ['peer'],
      registers,
    }),
    engineOperations: new HotCounter({
      name: 'oyster_engine_operations_total',
      help: 'Storage engine operations (one per partition written or read) by operation and outcome',
      labelNames: ['operation', 'outcome'],
      registers,
    }),
    engineBytes: new HotCounter({
      name: 'oyster_engine_bytes_total',
      help: 'Value bytes written to and read from the storage engine',
      labelNames: ['direction'],
      registers,
    }),
    corruptRecords: new Counter({
      name: 'oyster_corrupt_records_total',
      help: 'Records found failing their checksum, by disk (on reads, when partitions are opened, and by scrub)',
      labelNames: ['disk'],
      registers,
    }),
    diskRefused: new Gauge({
      name: 'oyster_disk_refused',
      help: 'Whether a disk is kept out of service by its identity (1): reason="no_identity" (initialised by this node, found without its identity: not mounted, replaced), "foreign_identity" (another node\'s or disk\'s), "unreadable_identity"',
      labelNames: ['disk', 'alien', 'reason'],
      registers,
    }),
    diskWritable: new Gauge({
      name: 'oyster_disk_writable',
      help: 'Whether a disk takes writes (1) or has less than min_free_space free and refuses them (0); alien="true" for the alien directory',
      labelNames: ['disk', 'alien'],
      registers,
    }),
    diskReady: new Gauge({
      name: 'oyster_disk_ready',
      help: 'Whether a disk controller serves (1) or not (0); alien="true" for the alien directory',
      labelNames: ['disk', 'alien'],
      registers,
    }),
    aliensHandedOver: new Counter({
      name: 'oyster_aliens_handed_over_total',
      help: 'Alien records delivered to their owner node',
      labelNames: ['owner'],
      registers,
    }),
    unansweredReads: new Counter({
      name: 'oyster_unanswered_reads_total',
      help: 'Coordinated reads (get, exist) that failed because no replica of the vdisk could answer',
      labelNames: ['operation'],
      registers,
    }),
    readRepairs: new Counter({
      name: 'oyster_read_repairs_total',
      help: 'Replica writes of read repair: the newest record written back to a replica that answered a read with an older one (repaired, failed, or dropped when too many were running)',
      labelNames: ['outcome'],
      registers,
    }),
    antiEntropyRecords: new Counter({
      name: 'oyster_anti_entropy_records_total',
      help: 'Records (values and tombstones) anti-entropy copied to this node from another replica that held them in a newer version, by source replica (node, or node/disk for another disk of this node)',
      labelNames: ['source'],
      registers,
    }),
    reclaimableBytes: new Gauge({
      name: 'oyster_reclaimable_bytes',
      help: 'Bytes of records no read returns any more (overwritten, deleted, dead tombstones), per vdisk replica, as last counted',
      labelNames: ['disk', 'vdisk'],
      registers,
    }),
    reclaimableRecords: new Gauge({
      name: 'oyster_reclaimable_records',
      help: 'Records no read returns any more, per vdisk replica, as last counted',
      labelNames: ['disk', 'vdisk'],
      registers,
    }),
    compactedBlobs: new Counter({ name: 'oyster_compaction_blobs_total', help: 'Blobs compacted', labelNames: ['disk'], registers }),
    compactionReclaimed: new Counter({ name: 'oyster_compaction_reclaimed_bytes_total', help: 'Bytes given back by compaction', labelNames: ['disk'], registers }),
    compactionIo: new Counter({ name: 'oyster_compaction_io_bytes_total', help: 'Bytes compaction read and wrote', labelNames: ['disk'], registers }),
    compactionSkipped: new Counter({
      name: 'oyster_compaction_skipped_total',
      help: 'Blobs due for compaction left as they were: no_space (the disk lacks room for what they keep) or error',
      labelNames: ['disk', 'reason'],
      registers,
    }),
    scrubBytes: new Counter({ name: 'oyster_scrub_bytes_total', help: 'Bytes of closed blobs scrub read to check them', labelNames: ['disk'], registers }),
    scrubDamaged: new Counter({
      name: 'oyster_scrub_damaged_records_total',
      help: 'Records scrub found failing their checksums (also counted in oyster_corrupt_records_total)',
      labelNames: ['disk'],
      registers,
    }),
    scrubRepairs: new Counter({
      name: 'oyster_scrub_repairs_total',
      help: 'Repairs of damaged records by outcome: repaired (a replica\'s copy written again), unrepairable (no replica holds it: lost), failed (a replica could not be asked; tried again)',
      labelNames: ['disk', 'outcome'],
      registers,
    }),
    scrubLastPass: new Gauge({
      name: 'oyster_scrub_last_pass_timestamp_seconds',
      help: 'When the last complete scrub of the disk ended (seconds since the epoch; set once a pass ends)',
      labelNames: ['disk'],
      registers,
    }),
    antiEntropyBytes: new Counter({
      name: 'oyster_anti_entropy_copied_bytes_total',
      help: 'Value bytes anti-entropy copied to this node',
      registers,
    }),
    antiEntropyExchanged: new Counter({
      name: 'oyster_anti_entropy_exchanged_bytes_total',
      help: 'Digest and entry bytes anti-entropy received from other replicas to compare them with this one',
      registers,
    }),
    antiEntropyLastPass: new Gauge({
      name: 'oyster_anti_entropy_last_pass_timestamp_seconds',
      help: 'When the last complete anti-entropy pass over every vdisk of this node ended (Unix time); 0 before the first',
      registers,
    }),
    antiEntropyPassSeconds: new Gauge({
      name: 'oyster_anti_entropy_last_pass_duration_seconds',
      help: 'How long the last complete anti-entropy pass took',
      registers,
    }),
    restBodyBytes: new Gauge({
      name: 'oyster_rest_body_bytes',
      help: 'Bytes of values in flight over REST held in memory now (bodies of 64 KiB and more, answers of large values), against node.yaml http_body_memory_limit',
      registers,
    }),
    restBodyRefused: new Counter({
      name: 'oyster_rest_body_refused_total',
      help: 'REST requests refused with 503 because http_body_memory_limit had no room for their value within 5 s',
      registers,
    }),
    peerBatchBytes: new Gauge({
      name: 'oyster_peer_batch_bytes',
      help: "Bytes peers' batches of operations hold now (received, not yet answered), against a second node.yaml http_body_memory_limit of their own",
      registers,
    }),
    grpcOpenCalls: new Gauge({
      name: 'oyster_grpc_open_calls',
      help: 'gRPC calls open now, all connections together, against node.yaml grpc_max_calls',
      registers,
    }),
    grpcCallsRefused: new Counter({
      name: 'oyster_grpc_calls_refused_total',
      help: 'gRPC calls refused: reason="max_calls" (RESOURCE_EXHAUSTED, grpc_max_calls open already) or "request_timeout" (DEADLINE_EXCEEDED, the request did not arrive within http_request_timeout)',
      labelNames: ['reason'],
      registers,
    }),
    tlsCertExpiry: new Gauge({
      name: 'oyster_tls_cert_expiry_timestamp_seconds',
      help: "When the TLS certificate in use expires (Unix time): certificate=\"node\" (cert_path) or \"ca\" (ca_cert_path); absent without TLS",
      labelNames: ['certificate'],
      registers,
    }),
    futureVersions: new Counter({
      name: 'oyster_future_versions_total',
      help: "Versions seen more than a minute ahead of this node's clock, which the clock does not follow",
      registers,
    }),
  };
}
