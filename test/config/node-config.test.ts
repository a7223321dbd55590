// node.yaml: every key of bob's tables, defaults, Oyster's decisions.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { DEFAULT_METRICS, NO_EFFECT_KEYS } from '../../src/config/node-config';
import { nodeYaml, readNode } from './read';

const fixtures = path.resolve(__dirname, '../../../test/fixtures/bob-configs');
const fixture = (name: string) => fs.readFileSync(path.join(fixtures, name), 'utf8');

const S = 1000;
const H = 3600 * S;
const D = 24 * H;
const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

// A valid node.yaml with one line replaced (`key: value` at the given indentation).
function withLine(pattern: RegExp, replacement: string): string {
  const yaml = nodeYaml();
  if (!pattern.test(yaml)) throw new Error(`no line matches ${pattern}`);
  return yaml.replace(pattern, replacement);
}

t.test('a node.yaml with every key', async (t) => {
  const r = readNode(fixture('node.yaml'));
  t.same(r.problems, []);
  t.same(r.warnings, []);
  t.strictSame(r.config, {
    logConfig: 'config-examples/logger.yaml',
    usersConfig: 'config-examples/users.yaml',
    name: 'local_node',
    quorum: 1,
    operationTimeout: 3 * S,
    checkInterval: 5 * S,
    countInterval: 10 * S,
    clusterPolicy: 'quorum',
    backendType: 'pearl',
    cleanupInterval: D,
    openBlobsSoftLimit: 2,
    openBlobsHardLimit: 10,
    bloomFilterMemoryLimit: 8 * GiB,
    indexMemoryLimit: 8 * GiB,
    indexMemoryLimitSoft: 7 * GiB,
    initParDegree: 2,
    diskAccessParDegree: 1,
    httpApiPort: 8000,
    httpApiAddress: '0.0.0.0',
    bindToIpAddress: '127.0.0.1:20000',
    holderGroupSize: 8,
    authenticationType: 'Basic',
    hostnameResolvePeriodMs: 5000,
    httpMaxBodySize: 100 * MiB,
    httpBodyMemoryLimit: 512 * MiB,
    httpMaxConnections: 1000,
    grpcMaxConnections: 500,
    grpcMaxCalls: 4000,
    httpHeadersTimeout: 30 * S,
    httpRequestTimeout: 600 * S,
    minFreeSpace: { bytes: 2 * GiB },
    stateDir: '/var/lib/oyster',
    readCacheSize: 64 * MiB,
    pearl: {
      maxBlobSize: 1e9,
      maxDataInBlob: 10000,
      blobFileNamePrefix: 'bob',
      failRetryTimeout: 100,
      failRetryCount: 3,
      alienDisk: 'disk1',
      allowDuplicates: true,
      hashCharsCount: 10,
      enableAio: false,
      disksEventsLogfile: '/tmp/bob_events.csv',
      bloomFilterMaxBufBitsCount: 10000,
      validateDataChecksumDuringIndexRegen: false,
      skipHoldersByTimestampStepWhenReading: 2 * D,
      maxDirtyBytesBeforeSync: 10 * MiB,
      syncWrites: false,
      settings: { rootDirName: 'bob', alienRootDirName: 'alien', timestampPeriod: D, createPearlWaitDelay: 100 },
    },
    metrics: {
      name: 'bob',
      graphiteEnabled: true,
      graphite: '127.0.0.1:2003',
      prometheusEnabled: true,
      prometheusAddr: '0.0.0.0:9000',
      prefix: '{node_name}.bob',
      restFormat: 'prometheus',
    },
    tls: { caCertPath: 'my_ca.pem', domainName: 'bob', certPath: 'server.pem', pkeyPath: 'server.key', rest: false, grpc: false },
    antiEntropy: { enabled: true, interval: 60 * S, rate: 64 * MiB },
    compaction: { enabled: true, garbageRatio: 0.3, interval: 60 * S, rate: 64 * MiB, tombstoneGrace: 10 * 86_400 * S, scrubInterval: 7 * 86_400 * S },
    noEffect: Object.keys(NO_EFFECT_KEYS),
  });
});

t.test('defaults of every optional key', async (t) => {
  const saved = { TMPDIR: process.env.TMPDIR, TEMP: process.env.TEMP, TMP: process.env.TMP };
  t.teardown(() => Object.assign(process.env, saved));
  process.env.TMPDIR = '/var/tmp/x';
  const r = readNode(fixture('node-minimal.yaml'));
  t.same(r.problems, []);
  t.strictSame(r.config, {
    logConfig: undefined,
    usersConfig: undefined,
    name: 'local_node',
    quorum: 1,
    operationTimeout: 3 * S,
    checkInterval: 5 * S,
    countInterval: 10 * S,
    clusterPolicy: 'quorum',
    backendType: 'pearl',
    cleanupInterval: H,
    openBlobsSoftLimit: undefined,
    openBlobsHardLimit: undefined,
    bloomFilterMemoryLimit: undefined,
    indexMemoryLimit: undefined,
    indexMemoryLimitSoft: undefined,
    initParDegree: 1,
    diskAccessParDegree: 1,
    httpApiPort: 8000,
    httpApiAddress: '0.0.0.0',
    bindToIpAddress: undefined,
    holderGroupSize: 8,
    authenticationType: 'None',
    hostnameResolvePeriodMs: 5000,
    httpMaxBodySize: 1024 * MiB,
    httpBodyMemoryLimit: 256 * MiB,
    httpMaxConnections: 2048,
    grpcMaxConnections: 1024,
    grpcMaxCalls: 2048,
    httpHeadersTimeout: 60 * S,
    httpRequestTimeout: 300 * S,
    minFreeSpace: { percent: 1 },
    stateDir: undefined,
    readCacheSize: 128 * MiB,
    pearl: {
      maxBlobSize: 1_000_000_000,
      maxDataInBlob: 1_000_000,
      blobFileNamePrefix: 'bob',
      failRetryTimeout: 100,
      failRetryCount: 3,
      alienDisk: undefined,
      allowDuplicates: true,
      hashCharsCount: 10,
      enableAio: false,
      disksEventsLogfile: '/var/tmp/x/bob_events.csv',
      bloomFilterMaxBufBitsCount: undefined,
      validateDataChecksumDuringIndexRegen: false,
      skipHoldersByTimestampStepWhenReading: undefined,
      maxDirtyBytesBeforeSync: 10 * MiB,
      syncWrites: false,
      settings: { rootDirName: 'bob', alienRootDirName: 'alien', timestampPeriod: H, createPearlWaitDelay: 100 },
    },
    metrics: { graphiteEnabled: false, prometheusEnabled: false, prometheusAddr: '127.0.0.1:9000', restFormat: 'prometheus' },
    tls: undefined,
    antiEntropy: { enabled: true, interval: 60 * S, rate: 64 * MiB },
    compaction: { enabled: true, garbageRatio: 0.3, interval: 60 * S, rate: 64 * MiB, tombstoneGrace: 10 * 86_400 * S, scrubInterval: 7 * 86_400 * S },
    noEffect: ['pearl.settings.create_pearl_wait_delay'],
  });
  t.strictSame(DEFAULT_METRICS, { graphiteEnabled: false, prometheusEnabled: false, prometheusAddr: '127.0.0.1:9000', restFormat: 'prometheus' });
});

t.test("disks_events_logfile defaults to bob's temp directory choice", async (t) => {
  const saved = { TMPDIR: process.env.TMPDIR, TEMP: process.env.TEMP, TMP: process.env.TMP };
  t.teardown(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
  const logfile = () => readNode(nodeYaml()).config.pearl.disksEventsLogfile;
  delete process.env.TMPDIR;
  delete process.env.TEMP;
  delete process.env.TMP;
  t.equal(logfile(), '/tmp/bob_events.csv');
  process.env.TMP = '/a';
  t.equal(logfile(), '/a/bob_events.csv');
  process.env.TEMP = '/b';
  t.equal(logfile(), '/b/bob_events.csv');
  process.env.TMPDIR = '/c';
  t.equal(logfile(), '/c/bob_events.csv');
});

t.test('required keys', async (t) => {
  t.same(readNode('').lines, [
    'name: is required',
    'quorum: is required',
    'operation_timeout: is required',
    'check_interval: is required',
    'cluster_policy: is required',
    'backend_type: is required',
    'cleanup_interval: is required',
    'pearl: is required',
  ]);
  t.same(readNode('pearl: {}\n').lines.filter((l) => l.startsWith('pearl')), ['pearl.settings: is required']);
  t.same(readNode('pearl: {settings: {}}\n').lines.filter((l) => l.startsWith('pearl')), [
    'pearl.settings.root_dir_name: is required',
    'pearl.settings.alien_root_dir_name: is required',
    'pearl.settings.timestamp_period: is required',
    'pearl.settings.create_pearl_wait_delay: is required',
  ]);
});

t.test('"~" and empty values of required keys are errors, as in bob', async (t) => {
  const r = readNode(`
log_config:
users_config: ~
name:
quorum:
operation_timeout: ~
check_interval: "~"
cluster_policy: ""
backend_type:
cleanup_interval:
pearl:
  blob_file_name_prefix:
  fail_retry_timeout: ~
  alien_disk:
  settings:
    root_dir_name:
    alien_root_dir_name: ~
    timestamp_period:
    create_pearl_wait_delay:
metrics:
tls:
`);
  t.same(r.lines, [
    'name: is present but empty',
    'quorum: is present but empty',
    'operation_timeout: is present but empty',
    'check_interval: is present but empty',
    'cluster_policy: must not be empty',
    'backend_type: is present but empty',
    'cleanup_interval: is present but empty',
    'pearl.blob_file_name_prefix: is present but empty',
    'pearl.fail_retry_timeout: is present but empty',
    'pearl.settings.root_dir_name: is present but empty',
    'pearl.settings.alien_root_dir_name: is present but empty',
    'pearl.settings.timestamp_period: is present but empty',
    'pearl.settings.create_pearl_wait_delay: is present but empty',
  ]);
  t.equal(r.config.logConfig, undefined, 'optional in Oyster');
  t.equal(r.config.usersConfig, undefined, 'optional in Oyster');
  t.equal(r.config.pearl.alienDisk, undefined, 'an empty optional key is absent');
  t.same(r.config.metrics, DEFAULT_METRICS);
  t.equal(r.config.tls, undefined);
});

t.test('top-level values', async (t) => {
  const one = (pattern: RegExp, replacement: string) => readNode(withLine(pattern, replacement)).lines;
  t.same(one(/^quorum: 1$/m, 'quorum: 0'), ['quorum: must be at least 1']);
  t.same(one(/^quorum: 1$/m, 'quorum: two'), ['quorum: must be a whole number']);
  t.same(one(/^operation_timeout: .*$/m, 'operation_timeout: 3'), [
    'operation_timeout: invalid duration "3": time unit needed, for example 3sec or 3ms',
  ]);
  t.same(one(/^operation_timeout: .*$/m, 'operation_timeout: 0s'), ['operation_timeout: must be greater than 0']);
  t.same(one(/^check_interval: .*$/m, 'check_interval: 0ms'), ['check_interval: must be greater than 0']);
  t.same(one(/^cleanup_interval: .*$/m, 'cleanup_interval: 1 hour'), []);
  t.same(one(/^cleanup_interval: .*$/m, 'cleanup_interval: hourly'), [
    'cleanup_interval: invalid duration "hourly": expected a number at 0',
  ]);
  t.same(one(/^cluster_policy: .*$/m, 'cluster_policy: simple'), []);
  t.same(one(/^cluster_policy: .*$/m, 'cluster_policy: Quorum'), [
    'cluster_policy: unknown cluster policy "Quorum", expected quorum or simple',
  ]);
  for (const backend of ['in_memory', 'stub', 'rocksdb']) {
    t.same(one(/^backend_type: .*$/m, `backend_type: ${backend}`), [
      `backend_type: backend "${backend}": only the pearl backend is supported`,
    ]);
  }
  const extra = (lines: string) => readNode(nodeYaml(lines));
  t.same(extra('count_interval: 1s').config.countInterval, 1000);
  t.same(extra('count_interval: 0s').lines, ['count_interval: must be greater than 0']);
  t.same(extra('count_interval: 10').lines, ['count_interval: invalid duration "10": time unit needed, for example 10sec or 10ms']);
  t.same(extra('authentication_type: Basic').config.authenticationType, 'Basic');
  t.same(extra('authentication_type: None').config.authenticationType, 'None');
  t.same(extra('authentication_type: Token').lines, [
    'authentication_type: Token authentication is not supported (bob does not implement it either); use None or Basic',
  ]);
  t.same(extra('authentication_type: basic').lines, ['authentication_type: unknown authentication type "basic", expected None or Basic']);
  t.same(extra('http_api_port: 0').config.httpApiPort, 0);
  t.same(extra('http_api_port: 65536').lines, ['http_api_port: must be at most 65535']);
  t.same(extra('http_api_port: "8000"').lines, ['http_api_port: must be a whole number']);
  t.same(extra('http_api_address: "::"').config.httpApiAddress, '::');
  t.same(extra('http_api_address: 127.0.0.1').config.httpApiAddress, '127.0.0.1');
  t.same(extra('http_api_address: localhost').lines, ['http_api_address: "localhost" is not an IP address']);
  t.same(extra('http_api_address: 0.0.0.0:8000').lines, ['http_api_address: "0.0.0.0:8000" is not an IP address']);
  t.same(extra('bind_to_ip_address: "[::1]:20000"').config.bindToIpAddress, '[::1]:20000');
  t.same(extra('bind_to_ip_address: localhost:20000').lines, [
    'bind_to_ip_address: "localhost:20000" must be an IP address and port, like 0.0.0.0:9000 or [::1]:9000',
  ]);
  t.same(extra('bind_to_ip_address: 10.0.0.1').lines, ['bind_to_ip_address: "10.0.0.1" has no port']);
  t.same(extra('init_par_degree: 0').lines, ['init_par_degree: must be at least 1']);
  t.same(extra('disk_access_par_degree: 0').lines, ['disk_access_par_degree: must be at least 1']);
  t.same(extra('holder_group_size: 0').lines, ['holder_group_size: must be at least 1']);
  t.same(extra('hostname_resolve_period_ms: 100').config.hostnameResolvePeriodMs, 100);
  t.same(extra('hostname_resolve_period_ms: 1s').lines, ['hostname_resolve_period_ms: must be a whole number']);
  t.same(extra('http_max_body_size: 1 GiB').config.httpMaxBodySize, GiB);
  t.same(extra('http_max_body_size: 1024').config.httpMaxBodySize, 1024);
  t.same(extra('http_max_body_size: 0').lines, ['http_max_body_size: must be greater than 0']);
  t.same(extra('http_max_body_size: 5 GiB').lines, ['http_max_body_size: must be at most 4294705151 bytes, the largest value the engine stores']);
  t.same(extra('http_body_memory_limit: 0').lines, ['http_body_memory_limit: must be greater than 0']);
  t.same(extra('http_max_connections: 0').lines, ['http_max_connections: must be at least 1']);
  t.same(extra('grpc_max_connections: 0').lines, ['grpc_max_connections: must be at least 1']);
  t.same(extra('grpc_max_calls: 0').lines, ['grpc_max_calls: must be at least 1']);
  t.same(extra('http_headers_timeout: 0s').lines, ['http_headers_timeout: must be greater than 0']);
  t.same(extra('http_headers_timeout: 10m').lines, ['http_headers_timeout: must not be longer than http_request_timeout (300s)']);
  t.same(extra('http_request_timeout: 20s\nhttp_headers_timeout: 20s').config.httpRequestTimeout, 20 * S);
  t.same(extra('anti_entropy:\n  interval: 10s\n  rate: 1 MiB\n  enabled: false').config.antiEntropy, { enabled: false, interval: 10 * S, rate: MiB });
  t.same(extra('anti_entropy:\n  rate: 0').lines, ['anti_entropy.rate: must be greater than 0']);
  t.same(extra('compaction:\n  garbage_ratio: 0.5\n  tombstone_grace: 1h\n  rate: 8 MiB').config.compaction, {
    enabled: true,
    garbageRatio: 0.5,
    interval: 60 * S,
    rate: 8 * MiB,
    tombstoneGrace: 3600 * S,
    scrubInterval: 7 * 86_400 * S,
  });
  t.same(extra('compaction:\n  garbage_ratio: 1.5').lines, ['compaction.garbage_ratio: must be above 0 and at most 1']);
  t.same(extra('compaction:\n  garbage_ratio: lots').lines, ['compaction.garbage_ratio: must be a number']);
  t.same(extra('compaction:\n  rate: 0').lines, ['compaction.rate: must be greater than 0']);
  t.same(extra('anti_entropy:\n  interval: 0s').lines, ['anti_entropy.interval: must be greater than 0']);
  t.same(
    extra('anti_entropy:\n  every: 1m').warnings.map((w) => w.key),
    ['anti_entropy.every'],
    'unknown keys in the section are warned about',
  );
  t.same(extra('log_config: ""').lines, ['log_config: must not be empty']);
});

t.test('open blob limits of 0 are unset, with a warning', async (t) => {
  const r = readNode(nodeYaml('open_blobs_soft_limit: 0\nopen_blobs_hard_limit: 0\n'));
  t.same(r.problems, []);
  t.equal(r.config.openBlobsSoftLimit, undefined);
  t.equal(r.config.openBlobsHardLimit, undefined);
  t.same(
    r.warnings.map((w) => `${w.key}: ${w.reason}`),
    ['open_blobs_soft_limit: is 0, treated as unset', 'open_blobs_hard_limit: is 0, treated as unset'],
  );
  t.equal(readNode(nodeYaml('open_blobs_soft_limit: 3')).config.openBlobsSoftLimit, 3);
});

t.test('memory limits are sizes; the soft index limit defaults to 10/9 of the hard one', async (t) => {
  const r = readNode(nodeYaml('index_memory_limit: 9 GiB\nbloom_filter_memory_limit: 100 mb\n'));
  t.same(r.problems, []);
  t.equal(r.config.indexMemoryLimit, 9 * GiB);
  t.equal(r.config.indexMemoryLimitSoft, 10 * GiB);
  t.equal(r.config.bloomFilterMemoryLimit, 100e6);
  t.equal(readNode(nodeYaml('index_memory_limit: 10')).config.indexMemoryLimitSoft, 11, 'integer division');
  t.same(readNode(nodeYaml('index_memory_limit: 8 kk')).lines, [
    'index_memory_limit: unknown size unit "kk" in "8 kk", expected B, kB, KiB, MB, MiB, GB, GiB, TB, TiB, PB, PiB, EB or EiB',
  ]);
  t.same(readNode(nodeYaml('index_memory_limit: 8 GX')).lines, ['index_memory_limit: invalid character "X" at 3 in size "8 GX"']);
});

t.test('min_free_space: a size or a percentage of the disk', async (t) => {
  t.same(readNode(nodeYaml('min_free_space: 5%')).config.minFreeSpace, { percent: 5 });
  t.same(readNode(nodeYaml('min_free_space: 0.5 %')).config.minFreeSpace, { percent: 0.5 });
  t.same(readNode(nodeYaml('min_free_space: 10 GiB')).config.minFreeSpace, { bytes: 10 * GiB });
  t.same(readNode(nodeYaml('min_free_space: 0')).config.minFreeSpace, { bytes: 0 }, '0 turns the watermark off');
  t.same(readNode(nodeYaml('min_free_space: 100%')).lines, ['min_free_space: a percentage of the disk must be below 100%']);
  t.match(readNode(nodeYaml('min_free_space: lots')).lines[0], /^min_free_space: .*, or a percentage of the disk such as "5%"$/);
  t.match(readNode(nodeYaml('min_free_space: -5%')).lines[0], /^min_free_space: /);
});

t.test('pearl values', async (t) => {
  const pearl = (lines: string) =>
    readNode(nodeYaml().replace('pearl:\n', `pearl:\n${lines.replace(/^/gm, '  ')}\n`));
  t.same(pearl('fail_retry_timeout: 100').lines, [
    'pearl.fail_retry_timeout: invalid duration "100": time unit needed, for example 100sec or 100ms',
  ]);
  t.same(pearl('fail_retry_timeout: 1s 500ms').config.pearl.failRetryTimeout, 1500);
  t.same(pearl('fail_retry_count: 0').lines, ['pearl.fail_retry_count: must be at least 1']);
  t.same(pearl('max_blob_size: 0').lines, ['pearl.max_blob_size: must be greater than 0']);
  t.same(pearl('max_blob_size: 100 mb').config.pearl.maxBlobSize, 100e6);
  t.same(pearl('max_data_in_blob: 0').lines, ['pearl.max_data_in_blob: must be at least 1']);
  t.same(pearl('hash_chars_count: 0').lines, ['pearl.hash_chars_count: must be at least 1']);
  t.same(pearl('hash_chars_count: 43').config.pearl.hashCharsCount, 43);
  t.same(pearl('allow_duplicates: false').config.pearl.allowDuplicates, false);
  t.same(pearl('allow_duplicates: no').lines, ['pearl.allow_duplicates: must be true or false']);
  t.same(pearl('sync_writes: true').config.pearl.syncWrites, true);
  t.same(pearl('enable_aio: true').config.pearl.enableAio, true);
  t.same(pearl('bloom_filter_max_buf_bits_count: 1000000').config.pearl.bloomFilterMaxBufBitsCount, 1_000_000);
  t.same(pearl('max_dirty_bytes_before_sync: 1 MiB').config.pearl.maxDirtyBytesBeforeSync, MiB);
  t.same(pearl('skip_holders_by_timestamp_step_when_reading: 2h').config.pearl.skipHoldersByTimestampStepWhenReading, 2 * H);
  t.same(pearl('skip_holders_by_timestamp_step_when_reading: 2').lines.length, 1);
  t.same(pearl('blob_file_name_prefix: data').config.pearl.blobFileNamePrefix, 'data');
});

t.test('timestamp_period: at least a second, at most 366 days', async (t) => {
  const period = (value: string) =>
    readNode(withLine(/^ {4}timestamp_period: .*$/m, `    timestamp_period: ${value}`));
  t.equal(period('1s').config.pearl.settings.timestampPeriod, 1000);
  t.equal(period('1h').config.pearl.settings.timestampPeriod, H);
  t.equal(period('1w').config.pearl.settings.timestampPeriod, 7 * D);
  t.equal(period('366d').config.pearl.settings.timestampPeriod, 366 * D);
  t.same(period('0s').lines, ['pearl.settings.timestamp_period: must be at least 1s (partitions are whole seconds)']);
  t.same(period('500ms').lines, ['pearl.settings.timestamp_period: must be at least 1s (partitions are whole seconds)']);
  t.same(period('366d 1s').lines, ['pearl.settings.timestamp_period: must be at most 366 days']);
  t.same(period('1y').lines, [], '1y is 365.25 days');
  t.same(period('2y').lines, ['pearl.settings.timestamp_period: must be at most 366 days']);
  t.same(period('1').lines, ['pearl.settings.timestamp_period: invalid duration "1": time unit needed, for example 1sec or 1ms']);
});

t.test('metrics', async (t) => {
  const metrics = (lines: string) => readNode(nodeYaml(`metrics:\n${lines.replace(/^/gm, '  ')}\n`));
  t.same(metrics('graphite_enabled: false\nprometheus_enabled: false').config.metrics, DEFAULT_METRICS);
  t.same(metrics('prometheus_enabled: true').lines, ['metrics.graphite_enabled: is required']);
  t.same(metrics('graphite_enabled: false').lines, ['metrics.prometheus_enabled: is required']);
  t.same(metrics('graphite_enabled: true\nprometheus_enabled: false').lines, [
    'metrics.graphite: is required when graphite_enabled is true',
  ]);
  t.same(metrics('graphite_enabled: true\ngraphite: localhost:2003\nprometheus_enabled: false').lines, [
    'metrics.graphite: "localhost:2003" must be an IP address and port, like 0.0.0.0:9000 or [::1]:9000',
  ]);
  t.same(metrics('graphite_enabled: false\ngraphite: not-checked\nprometheus_enabled: false').lines, [], 'as bob');
  t.same(metrics('graphite_enabled: false\nprometheus_enabled: true\nprometheus_addr: 127.0.0.1:9100').config.metrics, {
    name: undefined,
    graphiteEnabled: false,
    graphite: undefined,
    prometheusEnabled: true,
    prometheusAddr: '127.0.0.1:9100',
    prefix: undefined,
    restFormat: 'prometheus',
  });
  t.equal(metrics('graphite_enabled: false\nprometheus_enabled: false\nrest_format: bob').config.metrics.restFormat, 'bob', "rest_format: bob's JSON by default on REST");
  t.same(metrics('graphite_enabled: false\nprometheus_enabled: false\nrest_format: json').lines, ['metrics.rest_format: unknown format "json", expected prometheus or bob']);
  t.same(metrics('graphite_enabled: false\nprometheus_enabled: true\nprometheus_addr: 0.0.0.0').lines, [
    'metrics.prometheus_addr: "0.0.0.0" has no port',
  ]);
  t.same(metrics('graphite_enabled: false\nprometheus_enabled: false\nname: ""').lines, ['metrics.name: must not be empty']);
  const prefix = (p: string, name = '') =>
    metrics(`graphite_enabled: false\nprometheus_enabled: false\nprefix: "${p}"${name ? `\nname: ${name}` : ''}`).lines;
  t.same(prefix('bob.{node_name}.{local_address}'), []);
  t.same(prefix('{metrics_name}.x', 'bob'), []);
  t.match(prefix('{metrics_name}.x')[0], /^metrics.prefix: invalid graphite prefix "\{metrics_name\}.x"/);
  t.equal(prefix('bob.').length, 1);
  t.equal(prefix('.bob').length, 1);
  t.equal(prefix('a..b').length, 1);
  t.equal(prefix('bob1').length, 1);
  t.equal(prefix('bob-x').length, 1);
  t.same(metrics('graphite_enabled: false\nprometheus_enabled: false\nprometheus: 0.0.0.0:9000').warnings.map((w) => w.key), [
    'metrics.prometheus',
  ]);
});

t.test('tls', async (t) => {
  const tls = (lines: string) => readNode(nodeYaml(`tls:\n${lines.replace(/^/gm, '  ')}\n`));
  t.same(tls('ca_cert_path: ca.pem\ndomain_name: bob').config.tls, {
    caCertPath: 'ca.pem',
    domainName: 'bob',
    certPath: undefined,
    pkeyPath: undefined,
    rest: false,
    grpc: false,
  });
  t.same(tls('rest: false').lines, ['tls.ca_cert_path: is required', 'tls.domain_name: is required']);
  t.same(tls('ca_cert_path: ca.pem\ndomain_name: bob\nrest: true').lines, [
    'tls.cert_path: is required when tls.rest or tls.grpc is true',
    'tls.pkey_path: is required when tls.rest or tls.grpc is true',
  ]);
  t.same(tls('ca_cert_path: ca.pem\ndomain_name: bob\ngrpc: true\ncert_path: c.pem').lines, [
    'tls.pkey_path: is required when tls.rest or tls.grpc is true',
  ]);
  const on = tls('ca_cert_path: ca.pem\ndomain_name: bob\ngrpc: true\nrest: true\ncert_path: c.pem\npkey_path: k.pem');
  t.same(on.lines, []);
  t.equal(on.config.tls?.grpc, true);
  t.equal(on.config.tls?.rest, true);
});

t.test('unknown keys are warnings naming the key', async (t) => {
  const r = readNode(
    nodeYaml('typo_quorum: 2\nmetrics:\n  graphite_enabled: false\n  prometheus_enabled: false\n  prometheus: 0.0.0.0:9000\n').replace(
      '    root_dir_name: bob\n',
      '    root_dir_name: bob\n    root_dir: x\n',
    ),
  );
  t.same(r.problems, []);
  t.same(
    r.warnings.map((w) => `${w.file}: ${w.key}: ${w.reason}`),
    [
      'node.yaml: typo_quorum: unknown key, ignored',
      'node.yaml: metrics.prometheus: unknown key, ignored; did you mean prometheus_addr?',
      'node.yaml: pearl.settings.root_dir: unknown key, ignored',
    ],
  );
});

t.test('every problem is reported at once', async (t) => {
  const r = readNode(`
name: n1
quorum: 0
operation_timeout: 3
check_interval: 5000ms
cluster_policy: majority
backend_type: in_memory
cleanup_interval: often
http_api_port: 80000
authentication_type: Token
pearl:
  fail_retry_timeout: 100
  settings:
    root_dir_name: bob
    timestamp_period: 400d
    create_pearl_wait_delay: 100ms
metrics:
  graphite_enabled: yes
  prometheus_enabled: true
  prometheus_addr: nowhere
`);
  t.same(r.lines, [
    'quorum: must be at least 1',
    'operation_timeout: invalid duration "3": time unit needed, for example 3sec or 3ms',
    'cluster_policy: unknown cluster policy "majority", expected quorum or simple',
    'backend_type: backend "in_memory": only the pearl backend is supported',
    'cleanup_interval: invalid duration "often": expected a number at 0',
    'http_api_port: must be at most 65535',
    'authentication_type: Token authentication is not supported (bob does not implement it either); use None or Basic',
    'pearl.fail_retry_timeout: invalid duration "100": time unit needed, for example 100sec or 100ms',
    'pearl.settings.alien_root_dir_name: is required',
    'pearl.settings.timestamp_period: must be at most 366 days',
    'metrics.graphite_enabled: must be true or false',
    'metrics.prometheus_addr: "nowhere" has no port',
  ]);
});

t.test('keys that change nothing are named, whether set at the top, in pearl or in its settings', async (t) => {
  const r = readNode(nodeYaml('count_interval: 5s'));
  t.same(r.problems, []);
  t.ok(Object.keys(NO_EFFECT_KEYS).length >= 10, 'the table lists them, each with why');
  t.same(r.config.noEffect, ['count_interval', 'pearl.settings.create_pearl_wait_delay']);
  const aio = readNode(withLine(/^pearl:$/m, 'pearl:\n  enable_aio: true'));
  t.same(aio.problems, []);
  t.same(aio.config.noEffect, ['pearl.enable_aio', 'pearl.settings.create_pearl_wait_delay']);
  t.equal(aio.config.pearl.enableAio, true, 'still read as bob reads it');
  const wrong = readNode(withLine(/^pearl:$/m, 'pearl:\n  enable_aio: sometimes'));
  t.ok(wrong.problems.some((p) => p.key === 'pearl.enable_aio'), 'and checked as bob checks it');
});
