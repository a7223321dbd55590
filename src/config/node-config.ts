// node.yaml: this node's identity, timings, limits, REST
// settings and the pearl backend, with bob's keys and defaults. Durations are
// milliseconds and sizes bytes. Where bob accepts a value and then panics at
// runtime (cleanup_interval, count_interval, prometheus_addr, TLS files,
// cluster_policy, Token auth), Oyster rejects it here instead.
import path from 'node:path';
import { parseIp, parseSocketAddress } from './address';
import { ConfigReader, MapReader, parsedBy, Space } from './reader';

export type ClusterPolicy = 'quorum' | 'simple';
export type AuthenticationType = 'None' | 'Basic';

export interface PearlSettings {
  rootDirName: string;
  alienRootDirName: string;
  timestampPeriod: number;
  createPearlWaitDelay: number;
}

export interface PearlConfig {
  maxBlobSize: number;
  maxDataInBlob: number;
  blobFileNamePrefix: string;
  failRetryTimeout: number;
  failRetryCount: number;
  /** Name of the local disk holding the alien directory. */
  alienDisk?: string;
  allowDuplicates: boolean;
  hashCharsCount: number;
  enableAio: boolean;
  disksEventsLogfile: string;
  bloomFilterMaxBufBitsCount?: number;
  validateDataChecksumDuringIndexRegen: boolean;
  skipHoldersByTimestampStepWhenReading?: number;
  maxDirtyBytesBeforeSync: number;
  /** Oyster: acknowledge a write only after fsync (group commit). */
  syncWrites: boolean;
  settings: PearlSettings;
}

/** What GET /metrics on the REST port answers a client that names no format (Oyster's key). */
export type MetricsFormat = 'prometheus' | 'bob';

export interface MetricsConfig {
  name?: string;
  graphiteEnabled: boolean;
  graphite?: string;
  prometheusEnabled: boolean;
  prometheusAddr: string;
  prefix?: string;
  restFormat: MetricsFormat;
}

export interface TlsConfig {
  caCertPath: string;
  domainName: string;
  certPath?: string;
  pkeyPath?: string;
  rest: boolean;
  grpc: boolean;
}

/** Oyster: how replicas are compared and brought up to date (docs/OPERATIONS.md). */
export interface AntiEntropyConfig {
  enabled: boolean;
  /** Time between the starts of two passes over every vdisk. */
  interval: number;
  /** Value bytes copied per second at most. */
  rate: number;
}

export const DEFAULT_ANTI_ENTROPY: Readonly<AntiEntropyConfig> = { enabled: true, interval: 60 * 1000, rate: 64 * 1024 * 1024 };

/** Oyster: how space of overwritten and deleted values is given back (docs/OPERATIONS.md, "Compaction"). */
export interface CompactionConfig {
  enabled: boolean;
  /** A closed blob is compacted once this share of its bytes is reclaimable. */
  garbageRatio: number;
  /** Time between two looks at every vdisk's garbage. */
  interval: number;
  /** Bytes read and written per second per disk at most, by compaction and scrub together. */
  rate: number;
  /** A tombstone is kept at least this long after its delete (ms). */
  tombstoneGrace: number;
  /** Time between two checks of every record of a closed blob against its checksums (0: no scrub). */
  scrubInterval: number;
}

export const DEFAULT_COMPACTION: Readonly<CompactionConfig> = {
  enabled: true,
  garbageRatio: 0.3,
  interval: 60 * 1000,
  rate: 64 * 1024 * 1024,
  tombstoneGrace: 10 * 86_400_000,
  scrubInterval: 7 * 86_400_000,
};

export interface NodeConfig {
  logConfig?: string;
  usersConfig?: string;
  name: string;
  quorum: number;
  operationTimeout: number;
  checkInterval: number;
  countInterval: number;
  clusterPolicy: ClusterPolicy;
  backendType: 'pearl';
  cleanupInterval: number;
  openBlobsSoftLimit?: number;
  openBlobsHardLimit?: number;
  bloomFilterMemoryLimit?: number;
  indexMemoryLimit?: number;
  indexMemoryLimitSoft?: number;
  initParDegree: number;
  diskAccessParDegree: number;
  httpApiPort: number;
  httpApiAddress: string;
  bindToIpAddress?: string;
  holderGroupSize: number;
  authenticationType: AuthenticationType;
  hostnameResolvePeriodMs: number;
  /** Oyster: largest request body the REST API accepts (413 above). */
  httpMaxBodySize: number;
  /** Oyster: bytes of request bodies of 64 KiB and more held in memory at once, across connections (rest/body-budget.ts). */
  httpBodyMemoryLimit: number;
  /** Oyster: REST connections open at once; more are closed as they arrive. */
  httpMaxConnections: number;
  /** Oyster: connections to the gRPC port open at once (clients, peers' channels and links); more are closed as they arrive. */
  grpcMaxConnections: number;
  /** Oyster: gRPC calls open at once, all connections together; more are refused (RESOURCE_EXHAUSTED) as they arrive. */
  grpcMaxCalls: number;
  /** Oyster: time to receive a request's headers, and the whole request, in ms (408 after it). */
  httpHeadersTimeout: number;
  httpRequestTimeout: number;
  /** Oyster: free space below which a disk takes no more writes (507) until space returns. */
  minFreeSpace: Space;
  /** Oyster: where the node keeps its record of its disks' identities (store/identity.ts). */
  stateDir?: string;
  /** Oyster: bytes of records and index blocks kept in memory to be read again without a system call (0: none). */
  readCacheSize: number;
  pearl: PearlConfig;
  metrics: MetricsConfig;
  tls?: TlsConfig;
  antiEntropy: AntiEntropyConfig;
  compaction: CompactionConfig;
  /** Keys of NO_EFFECT_KEYS the file sets, as paths ("pearl.enable_aio"). */
  noEffect: string[];
}

const MS = 1;
const SECOND = 1000 * MS;
const DAY = 86_400 * SECOND;
const MIB = 1024 * 1024;
const U16_MAX = 65_535;
const U32_MAX = 2 ** 32 - 1;

// Values of known length are written as they arrive, so this bounds what a
// value may be, not memory (http_body_memory_limit does).
export const DEFAULT_HTTP_MAX_BODY_SIZE = 1024 * MIB;
// The largest value a record holds when written in parts, its block
// checksums included in 4 GiB - 1 (docs/FORMAT.md §3.2).
const MAX_VALUE_SIZE = 0xffffffff - 4 * 65536;
export const DEFAULT_HTTP_BODY_MEMORY_LIMIT = 256 * MIB;
export const DEFAULT_HTTP_MAX_CONNECTIONS = 2048;
export const DEFAULT_GRPC_MAX_CONNECTIONS = 1024;
export const DEFAULT_GRPC_MAX_CALLS = 2048;
export const DEFAULT_HTTP_HEADERS_TIMEOUT = 60 * SECOND;
export const DEFAULT_HTTP_REQUEST_TIMEOUT = 300 * SECOND;
/**
 * Below 1 % free a disk takes no more writes: room for the index files of
 * the blobs being closed and for the file system's own needs (ext4 keeps
 * its reserved blocks for root, which a service running as root would eat).
 */
export const DEFAULT_MIN_FREE_SPACE: Space = { percent: 1 };
/**
 * The read cache: enough for the index blocks and small values a node
 * serves most, small beside a storage server's memory (and beside the page
 * cache, which holds the same bytes but costs a system call per read).
 */
export const DEFAULT_READ_CACHE_SIZE = 128 * MIB;

/**
 * bob's metrics defaults, used when node.yaml has no `metrics` section,
 * except that the Prometheus listener is on loopback (bob: 0.0.0.0:9000):
 * it answers anyone without authentication, so exposing it is a choice.
 */
export const DEFAULT_METRICS: Readonly<MetricsConfig> = {
  graphiteEnabled: false,
  prometheusEnabled: false,
  prometheusAddr: '127.0.0.1:9000',
  restFormat: 'prometheus',
};

const positive = (v: number) => (v > 0 ? undefined : 'must be greater than 0');

/**
 * Keys of bob's node.yaml that change nothing in Oyster, and why. They are
 * read and checked as bob checks them, so that bob's files load unchanged;
 * the node names the ones a file sets in one line of its log at start.
 */
export const NO_EFFECT_KEYS: Readonly<Record<string, string>> = {
  count_interval: 'bob recounts records for its metrics on this interval; Oyster keeps its counts as records are written',
  disk_access_par_degree: "bob's bound on concurrent operations per disk; each disk has its own engine threads here",
  holder_group_size: "bob's grouping of partitions for lookups; reads here ask every partition's bloom filter and skip by version",
  open_blobs_soft_limit: 'bob closes idle blobs above it; Oyster keeps closed blobs open (a file descriptor each)',
  open_blobs_hard_limit: 'as open_blobs_soft_limit',
  bloom_filter_memory_limit: 'bob drops bloom filters above it; Oyster keeps them all (oyster_bloom_filter_memory_bytes)',
  index_memory_limit: "bob offloads indexes above it; Oyster keeps a closed blob's index as sparse fences (oyster_index_memory_bytes)",
  index_memory_limit_soft: 'as index_memory_limit',
  'pearl.allow_duplicates': 'every write is a new record with its own version; the newest one wins',
  'pearl.enable_aio': 'blob I/O runs on the engine threads with pread/pwrite',
  'pearl.disks_events_logfile': 'disk state changes go to the log and to oyster_disk_ready',
  'pearl.validate_data_checksum_during_index_regen': 'a rebuilt index always checks every record\'s checksum (as bob does with true)',
  'pearl.skip_holders_by_timestamp_step_when_reading': 'reads skip partitions by the versions they can hold, not by a time step',
  'pearl.settings.create_pearl_wait_delay': "bob's wait between attempts to create a partition; Oyster creates it on the write that needs it",
};

export function readNodeConfig(reader: ConfigReader, document: unknown): NodeConfig {
  const root = reader.root(document);

  const indexMemoryLimit = root.size('index_memory_limit');
  const node: Omit<NodeConfig, 'pearl' | 'metrics' | 'tls' | 'antiEntropy' | 'compaction' | 'noEffect'> = {
    logConfig: root.string('log_config'),
    usersConfig: root.string('users_config'),
    name: root.string('name', { required: true }),
    quorum: root.integer('quorum', { required: true, min: 1 }),
    operationTimeout: root.duration('operation_timeout', { required: true, check: positive }),
    checkInterval: root.duration('check_interval', { required: true, check: positive }),
    countInterval: root.duration('count_interval', { default: 10 * SECOND, check: positive }),
    clusterPolicy: root.string('cluster_policy', {
      required: true,
      check: (v) =>
        v === 'quorum' || v === 'simple' ? undefined : `unknown cluster policy "${v}", expected quorum or simple`,
    }) as ClusterPolicy,
    backendType: root.string('backend_type', {
      required: true,
      check: (v) => (v === 'pearl' ? undefined : `backend "${v}": only the pearl backend is supported`),
    }) as 'pearl',
    cleanupInterval: root.duration('cleanup_interval', { required: true, check: positive }),
    openBlobsSoftLimit: openBlobsLimit(root, 'open_blobs_soft_limit'),
    openBlobsHardLimit: openBlobsLimit(root, 'open_blobs_hard_limit'),
    bloomFilterMemoryLimit: root.size('bloom_filter_memory_limit'),
    indexMemoryLimit,
    // bob's cleaner: the soft limit defaults to 10/9 of the hard one.
    indexMemoryLimitSoft:
      root.size('index_memory_limit_soft') ??
      (indexMemoryLimit === undefined ? undefined : Number((BigInt(indexMemoryLimit) * 10n) / 9n)),
    initParDegree: root.integer('init_par_degree', { default: 1, min: 1 }),
    diskAccessParDegree: root.integer('disk_access_par_degree', { default: 1, min: 1 }),
    httpApiPort: root.integer('http_api_port', { default: 8000, max: U16_MAX }),
    httpApiAddress: root.string('http_api_address', { default: '0.0.0.0', check: parsedBy(parseIp) }),
    bindToIpAddress: root.string('bind_to_ip_address', { check: parsedBy(parseSocketAddress) }),
    holderGroupSize: root.integer('holder_group_size', { default: 8, min: 1 }),
    authenticationType: root.string('authentication_type', {
      default: 'None',
      check: (v) =>
        v === 'None' || v === 'Basic'
          ? undefined
          : v === 'Token'
            ? 'Token authentication is not supported (bob does not implement it either); use None or Basic'
            : `unknown authentication type "${v}", expected None or Basic`,
    }) as AuthenticationType,
    hostnameResolvePeriodMs: root.integer('hostname_resolve_period_ms', { default: 5000 }),
    httpMaxBodySize: root.size('http_max_body_size', {
      default: DEFAULT_HTTP_MAX_BODY_SIZE,
      check: (v) => positive(v) ?? (v <= MAX_VALUE_SIZE ? undefined : `must be at most ${MAX_VALUE_SIZE} bytes, the largest value the engine stores`),
    }),
    httpBodyMemoryLimit: root.size('http_body_memory_limit', { default: DEFAULT_HTTP_BODY_MEMORY_LIMIT, check: positive }),
    httpMaxConnections: root.integer('http_max_connections', { default: DEFAULT_HTTP_MAX_CONNECTIONS, min: 1 }),
    grpcMaxConnections: root.integer('grpc_max_connections', { default: DEFAULT_GRPC_MAX_CONNECTIONS, min: 1 }),
    grpcMaxCalls: root.integer('grpc_max_calls', { default: DEFAULT_GRPC_MAX_CALLS, min: 1 }),
    httpHeadersTimeout: root.duration('http_headers_timeout', { default: DEFAULT_HTTP_HEADERS_TIMEOUT, check: positive }),
    httpRequestTimeout: root.duration('http_request_timeout', { default: DEFAULT_HTTP_REQUEST_TIMEOUT, check: positive }),
    minFreeSpace: root.space('min_free_space', { default: DEFAULT_MIN_FREE_SPACE }),
    stateDir: root.string('state_dir'),
    readCacheSize: root.size('read_cache_size', { default: DEFAULT_READ_CACHE_SIZE }),
  };
  // Node refuses a server whose headers may take longer than the whole request.
  if (node.httpHeadersTimeout > node.httpRequestTimeout) {
    root.reader.problem(root.keyPath('http_headers_timeout'), `must not be longer than http_request_timeout (${node.httpRequestTimeout / SECOND}s)`);
  }
  const pearl = root.section('pearl', { required: true });
  const metrics = root.section('metrics');
  const tls = root.section('tls');
  const antiEntropy = root.section('anti_entropy');
  const compaction = root.section('compaction');
  return {
    ...node,
    antiEntropy: antiEntropy ? readAntiEntropy(antiEntropy) : { ...DEFAULT_ANTI_ENTROPY },
    compaction: compaction ? readCompaction(compaction) : { ...DEFAULT_COMPACTION },
    // Without a pearl section the load fails; defaults stand in for the missing values.
    pearl: readPearl(pearl ?? new ConfigReader(reader.file).mapping('pearl', {})),
    metrics: metrics ? readMetrics(metrics) : { ...DEFAULT_METRICS },
    tls: tls ? readTls(tls) : undefined,
    noEffect: Object.keys(NO_EFFECT_KEYS).filter((key) => root.hasPath(key.split('.'))),
  };
}

function readAntiEntropy(m: MapReader): AntiEntropyConfig {
  return {
    enabled: m.boolean('enabled', { default: DEFAULT_ANTI_ENTROPY.enabled }),
    interval: m.duration('interval', { default: DEFAULT_ANTI_ENTROPY.interval, check: positive }),
    rate: m.size('rate', { default: DEFAULT_ANTI_ENTROPY.rate, check: positive }),
  };
}

function readCompaction(m: MapReader): CompactionConfig {
  const d = DEFAULT_COMPACTION;
  return {
    enabled: m.boolean('enabled', { default: d.enabled }),
    garbageRatio: m.number('garbage_ratio', { default: d.garbageRatio, check: (v) => (v > 0 && v <= 1 ? undefined : 'must be above 0 and at most 1') }),
    interval: m.duration('interval', { default: d.interval, check: positive }),
    rate: m.size('rate', { default: d.rate, check: positive }),
    tombstoneGrace: m.duration('tombstone_grace', { default: d.tombstoneGrace }),
    scrubInterval: m.duration('scrub_interval', { default: d.scrubInterval }),
  };
}

// bob logs an error for a limit of 0 and treats it as unset; we warn.
function openBlobsLimit(root: MapReader, key: string): number | undefined {
  const limit = root.integer(key);
  if (limit !== 0) return limit;
  root.reader.warning(root.keyPath(key), 'is 0, treated as unset');
  return undefined;
}

function readPearl(m: MapReader): PearlConfig {
  const settings = m.section('settings', { required: true }) ?? new ConfigReader(m.reader.file).mapping('settings', {});
  return {
    maxBlobSize: m.size('max_blob_size', { default: 1_000_000_000, check: positive }),
    maxDataInBlob: m.integer('max_data_in_blob', { default: 1_000_000, min: 1 }),
    blobFileNamePrefix: m.string('blob_file_name_prefix', { default: 'bob' }),
    failRetryTimeout: m.duration('fail_retry_timeout', { default: 100 * MS }),
    // bob's retry loop runs fail_retry_count times and panics after zero attempts.
    failRetryCount: m.integer('fail_retry_count', { default: 3, min: 1 }),
    alienDisk: m.string('alien_disk'),
    allowDuplicates: m.boolean('allow_duplicates', { default: true }),
    // A hash of 0 characters would let alien partitions collide with normal ones.
    hashCharsCount: m.integer('hash_chars_count', { default: 10, min: 1, max: U32_MAX }),
    enableAio: m.boolean('enable_aio', { default: false }),
    disksEventsLogfile: m.string('disks_events_logfile', { default: defaultDisksEventsLogfile() }),
    bloomFilterMaxBufBitsCount: m.integer('bloom_filter_max_buf_bits_count'),
    validateDataChecksumDuringIndexRegen: m.boolean('validate_data_checksum_during_index_regen', { default: false }),
    skipHoldersByTimestampStepWhenReading: m.duration('skip_holders_by_timestamp_step_when_reading'),
    maxDirtyBytesBeforeSync: m.size('max_dirty_bytes_before_sync', { default: 10 * MIB }),
    syncWrites: m.boolean('sync_writes', { default: false }),
    settings: {
      rootDirName: settings.string('root_dir_name', { required: true }),
      alienRootDirName: settings.string('alien_root_dir_name', { required: true }),
      // Partitions are keyed by record timestamps in whole seconds.
      timestampPeriod: settings.duration('timestamp_period', {
        required: true,
        check: (v) =>
          v < SECOND
            ? 'must be at least 1s (partitions are whole seconds)'
            : v > 366 * DAY
              ? 'must be at most 366 days'
              : undefined,
      }),
      createPearlWaitDelay: settings.duration('create_pearl_wait_delay', { required: true }),
    },
  };
}

// bob's default: $TMPDIR, else $TEMP, else $TMP, else /tmp.
function defaultDisksEventsLogfile(): string {
  const env = process.env;
  return path.join(env.TMPDIR ?? env.TEMP ?? env.TMP ?? '/tmp', 'bob_events.csv');
}

function readMetrics(m: MapReader): MetricsConfig {
  const name = m.string('name');
  const graphiteEnabled = m.boolean('graphite_enabled', { required: true });
  // bob checks the graphite address only when graphite is enabled.
  const graphite = m.string('graphite', { check: graphiteEnabled ? parsedBy(parseSocketAddress) : undefined });
  if (graphiteEnabled && graphite === undefined && !m.reader.failed(m.keyPath('graphite'))) {
    m.reader.problem(m.keyPath('graphite'), 'is required when graphite_enabled is true');
  }
  return {
    name,
    graphiteEnabled,
    graphite,
    prometheusEnabled: m.boolean('prometheus_enabled', { required: true }),
    prometheusAddr: m.string('prometheus_addr', {
      default: DEFAULT_METRICS.prometheusAddr,
      check: parsedBy(parseSocketAddress),
    }),
    prefix: m.string('prefix', { check: (p) => graphitePrefixProblem(p, name !== undefined) }),
    restFormat: m.string('rest_format', {
      default: DEFAULT_METRICS.restFormat,
      check: (v) => (v === 'prometheus' || v === 'bob' ? undefined : `unknown format "${v}", expected prometheus or bob`),
    }) as MetricsFormat,
  };
}

// bob's rule: after substituting the placeholders, only letters, '.' and '_',
// with no empty segment.
function graphitePrefixProblem(prefix: string, hasName: boolean): string | undefined {
  let p = prefix.replaceAll('{local_address}', '_').replaceAll('{node_name}', '_');
  if (hasName) p = p.replaceAll('{metrics_name}', '_');
  if (/^[A-Za-z._]+$/.test(p) && !p.startsWith('.') && !p.endsWith('.') && !p.includes('..')) return undefined;
  return (
    `invalid graphite prefix "${prefix}": use letters, '.', '_' and the placeholders ` +
    '{node_name}, {local_address}, {metrics_name} (the last only with metrics.name), without empty segments'
  );
}

function readTls(m: MapReader): TlsConfig {
  const tls: TlsConfig = {
    caCertPath: m.string('ca_cert_path', { required: true }),
    domainName: m.string('domain_name', { required: true }),
    certPath: m.string('cert_path'),
    pkeyPath: m.string('pkey_path'),
    rest: m.boolean('rest') ?? false,
    grpc: m.boolean('grpc') ?? false,
  };
  // bob panics at startup when TLS is on without a certificate and key.
  if (tls.rest || tls.grpc) {
    for (const key of ['cert_path', 'pkey_path']) {
      if (!m.has(key) && !m.reader.failed(m.keyPath(key))) {
        m.reader.problem(m.keyPath(key), 'is required when tls.rest or tls.grpc is true');
      }
    }
  }
  return tls;
}
