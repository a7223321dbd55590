// Logs (docs/OPERATIONS.md): every line oysterd prints is a JSON object with
// the node name and its level by name; the level comes from
// OYSTER_LOG_LEVEL, else from log_config (a small YAML with `level`, or bob's
// log4rs file: its root level and its loggers' levels where they map), else
// info; request lines are written at debug only; one line at start says
// where everything is; disk state changes after the start and peers lost
// and back are logged at warn, as are unknown configuration keys, naming the
// key and what it may have meant; grpc-js's own messages are JSON lines too.
// Alien hand-off progress (info) and damaged records (error) are checked
// where those scenarios run: test/ops/metrics-cluster.test.ts and
// test/ops/metrics.test.ts.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import t, { Test } from 'tap';
import YAML from 'yaml';
import { ClusterFiles, NodeYamlOptions, OysterProcess, writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import { waitFor } from '../cluster/lib';
import { call } from '../rest/lib/node';

const OYSTERD = path.resolve(__dirname, '..', '..', '..', 'bin', 'oysterd.js');
import { below, LEVEL, LEVELS, LogLine, logLines, logs, runNode, stopNode } from './lib';

/** bob's config-examples/logger.yaml shape (log4rs), at the given root level. */
const log4rs = (level: string) => ({
  refresh_rate: '30 seconds',
  appenders: { stdout: { kind: 'console', encoder: { pattern: '{d} {l} {t} - {m}{n}' } } },
  root: { level, appenders: ['stdout'] },
  loggers: { bob: { level: 'info' }, pearl: { level: 'error' } },
});

interface Variant {
  name: string;
  /** Written next to node.yaml as log.yaml, and named by log_config. */
  logConfig?: unknown;
  /** log_config naming a file that does not exist. */
  missingLogConfig?: boolean;
  /** OYSTER_LOG_LEVEL; undefined: not set at all. */
  envLevel?: string;
  /** Whether request lines are expected. */
  debug: boolean;
}

const VARIANTS: Variant[] = [
  { name: 'no log_config, no OYSTER_LOG_LEVEL: info', debug: false },
  { name: 'log_config with level: debug', logConfig: { level: 'debug' }, debug: true },
  { name: "bob's log4rs file with root.level: debug", logConfig: log4rs('debug'), debug: true },
  { name: 'OYSTER_LOG_LEVEL=info over a log_config at debug', logConfig: log4rs('debug'), envLevel: 'info', debug: false },
  { name: 'OYSTER_LOG_LEVEL=DEBUG (any case) over a log_config at warn', logConfig: { level: 'warn' }, envLevel: 'DEBUG', debug: true },
  { name: 'a missing log_config file: a warning, then info', missingLogConfig: true, debug: false },
  { name: 'an unknown OYSTER_LOG_LEVEL: a warning, then info', envLevel: 'verbose', debug: false },
];

async function startVariant(t: Test, v: Variant, opts: NodeYamlOptions = {}, prepare?: (files: ClusterFiles) => void): Promise<OysterProcess> {
  const dir = tempDir(t, 'oyster-logs-');
  const files = await writeCluster(dir, { nodes: [{ name: 'logger' }], vdisks: 2 }, {
    ...opts,
    extra: {
      ...(v.logConfig !== undefined ? { log_config: 'log.yaml' } : {}),
      ...(v.missingLogConfig ? { log_config: '/nonexistent/logger.yaml' } : {}),
      ...opts.extra,
    },
  });
  if (v.logConfig !== undefined) fs.writeFileSync(path.join(dir, 'log.yaml'), YAML.stringify(v.logConfig));
  prepare?.(files);
  // undefined leaves OYSTER_LOG_LEVEL out of the environment (the helper sets it otherwise).
  return runNode(t, files, 'logger', { env: { OYSTER_LOG_LEVEL: v.envLevel as string } });
}

/** Sends requests, then stops and starts a disk and waits for that to be logged, so that every earlier line has been read. */
async function traffic(proc: OysterProcess): Promise<void> {
  await call(proc.url, 'POST', '/data/7', 'logged?');
  await call(proc.url, 'GET', '/data/7');
  await call(proc.url, 'GET', '/data/8');
  await call(proc.url, 'GET', '/nodes');
  await call(proc.url, 'POST', '/disks/disk1/stop');
  await call(proc.url, 'POST', '/disks/disk1/start');
  await waitFor(
    'the disk start to be logged',
    () => {
      const stopped = proc.output.findIndex((l) => l.includes('"state":"NotReady"'));
      return stopped >= 0 && proc.output.slice(stopped).some((l) => l.includes('"state":"Ready"'));
    },
    5000,
  );
}

/** Asserts that every line is a JSON object with level, time, msg and the node name; returns them parsed. */
function everyLineJson(t: Test, proc: OysterProcess, node: string, what: string): LogLine[] {
  const lines = logLines(proc);
  const bad = lines.filter((l) => {
    if ('notJson' in l) return true;
    return l.node !== node || !LEVELS.includes(l.level) || typeof l.msg !== 'string' || Number.isNaN(Date.parse(l.time));
  });
  t.same(bad, [], `${what}: every one of the ${lines.length} lines is JSON with a level by name, time, msg and node "${node}"`);
  return logs(proc);
}

t.test('log levels: log_config, OYSTER_LOG_LEVEL and request lines', async (t) => {
  // The nodes start together: each start costs about a second.
  const procs = await Promise.all(VARIANTS.map((v) => startVariant(t, v)));
  for (const [i, v] of VARIANTS.entries()) {
    const proc = procs[i];
    await traffic(proc);
    // A request line is written just before its answer goes out, on another pipe: wait for the last one.
    if (v.debug) await waitFor('the last request line', () => proc.output.some((l) => l.includes('"path":"/disks/disk1/start"')), 5000);
    const lines = everyLineJson(t, proc, 'logger', v.name);
    const requests = lines.filter((l) => l.msg === 'request');
    if (v.debug) {
      t.ok(requests.length >= 6, `${v.name}: a line per request (${requests.length})`);
      t.ok(requests.every((l) => l.level === LEVEL.debug), `${v.name}: request lines are at debug`);
      t.match(requests.find((l) => l.method === 'GET' && l.path === '/data/8'), { status: 404, ms: Number }, `${v.name}: with method, path, status and duration`);
    } else {
      t.same(requests, [], `${v.name}: no request lines`);
      t.same(lines.filter((l) => below(l.level, 'info')), [], `${v.name}: nothing below info`);
    }
    // The traffic stops and starts a disk: those state changes are warnings of their own (below).
    const warned = lines.filter((l) => l.level === LEVEL.warn && l.state === undefined);
    if (v.missingLogConfig) t.ok(warned.some((l) => l.key === 'log_config' && /nonexistent/.test(l.msg)), `${v.name}: the warning names log_config`);
    else if (v.envLevel === 'verbose') t.ok(warned.some((l) => /verbose/.test(l.msg)), `${v.name}: the warning names the level`);
    else t.same(warned, [], `${v.name}: no warnings`);
  }
});

t.test('disk state changes after the start and unknown configuration keys at warn, one line at start', async (t) => {
  const proc = await startVariant(
    t,
    { name: 'unknown keys', debug: false },
    {
      extra: {
        bogus_top_level: 1,
        // bob would silently ignore the typo and listen on 0.0.0.0:9000.
        metrics: { graphite_enabled: false, prometheus_enabled: false, prometheus_adr: '127.0.0.1:9999' },
      },
      pearl: { nonsense_option: true, enable_aio: true },
    },
    (files) => fs.appendFileSync(files.clusterYaml, 'replication_factor: 3\n'),
  );
  await traffic(proc);
  const lines = everyLineJson(t, proc, 'logger', 'a node with unknown keys');
  const warned = lines.filter((l) => l.level === LEVEL.warn);
  for (const [key, file] of [
    ['bogus_top_level', /logger\.node\.yaml$/],
    ['metrics.prometheus_adr', /logger\.node\.yaml$/],
    ['pearl.nonsense_option', /logger\.node\.yaml$/],
    ['replication_factor', /cluster\.yaml$/],
  ] as const) {
    const w = warned.find((l) => l.key === key);
    t.ok(w, `unknown key ${key}: a warning`);
    t.match(w?.msg, new RegExp(`${key.replace('.', '\\.')}.*unknown key`), `naming ${key} in its message`);
    t.match(w?.file, file, 'and the file');
  }
  t.match(warned.find((l) => l.key === 'metrics.prometheus_adr')?.msg, /unknown key, ignored; did you mean prometheus_addr\?$/, 'a typo gets the key it is close to');
  t.notMatch(warned.find((l) => l.key === 'bogus_top_level')?.msg, /did you mean/, 'a key close to none gets no guess');
  const serving = lines.filter((l) => l.msg === 'node is serving');
  t.equal(serving.length, 1, 'one line at start');
  t.match(
    serving[0],
    {
      level: 'info',
      version: /^\d+\.\d+\.\d+/,
      config: { cluster: /cluster\.yaml$/, node: /logger\.node\.yaml$/ },
      rest: /^http:\/\/127\.0\.0\.1:\d+$/,
      grpc: /^127\.0\.0\.1:\d+$/,
      metrics: null,
      authentication: 'None',
      disks: [
        { name: 'disk1', path: /logger\/disk1\/bob$/, alien: false, state: 'Ready' },
        { name: 'disk1', path: /logger\/disk1\/alien$/, alien: true, state: 'Ready' },
      ],
    },
    'with the version, the files, the addresses and where the data goes',
  );
  const inert = lines.filter((l) => /no effect in Oyster/.test(l.msg));
  t.equal(inert.length, 1, 'keys bob reads and Oyster does not use: one line');
  t.equal(inert[0]?.level, LEVEL.info, 'at info');
  t.match(inert[0]?.msg, /pearl\.enable_aio/, 'naming them');
  const disk = lines.filter((l) => l.disk === 'disk1' && !l.alien);
  const states = disk.filter((l) => typeof l.state === 'string');
  t.same(
    states.map((l) => `${l.state} ${l.level}`),
    ['Initialized info', 'Ready info', 'NotReady warn', 'Initialized warn', 'Ready warn'],
    'start (at info: routine), POST /disks/disk1/stop, POST /disks/disk1/start (at warn)',
  );
  t.match(states.at(-1), { msg: 'disk disk1 is Ready', node: 'logger' });
  t.ok(disk.some((l) => l.level === LEVEL.info && /out of service/.test(l.msg) && typeof l.reason === 'string'), 'the stop is logged with its reason');
  t.equal(await stopNode(proc), 0, 'a clean stop');
});

/** bob's logger.yaml as its deploy templates write it: root at warn, its crates at info, pearl at error. */
const BOB_TEMPLATE = {
  refresh_rate: '30 seconds',
  appenders: { stdout: { kind: 'console', encoder: { pattern: '{d(%Y-%m-%d %H:%M:%S):<20} {M:>20.30}:{L:>3} {h({l})}    {m}\n' } } },
  root: { level: 'warn', appenders: ['stdout'] },
  loggers: Object.fromEntries([
    ...['bob', 'bob_backend', 'bob_common', 'bob_apps', 'bob_grpc'].map((l) => [l, { level: 'info', appenders: ['stdout'], additive: false }]),
    ['pearl', { level: 'error', appenders: ['stdout'], additive: false }],
    ['h2', { level: 'off' }],
  ]),
};

t.test("a peer going down and coming back, under bob's logger configuration", async (t) => {
  const dir = tempDir(t, 'oyster-logs-peers-');
  const files = await writeCluster(dir, { nodes: [{ name: 'n1' }, { name: 'n2' }], vdisks: 2 }, { extra: { log_config: 'bob-logger.yaml' } });
  fs.writeFileSync(path.join(dir, 'bob-logger.yaml'), YAML.stringify(BOB_TEMPLATE));
  // n2: everything at info but bob's backend, at error: the storage's lines go.
  fs.writeFileSync(path.join(dir, 'quiet-backend.yaml'), YAML.stringify({ root: { level: 'info' }, loggers: { bob_backend: { level: 'error' } } }));
  const n2Yaml = YAML.parse(fs.readFileSync(files.nodeYaml.n2, 'utf8')) as Record<string, unknown>;
  fs.writeFileSync(files.nodeYaml.n2, YAML.stringify({ ...n2Yaml, log_config: 'quiet-backend.yaml' }));
  const env = { OYSTER_LOG_LEVEL: undefined as unknown as string };
  const n1 = await runNode(t, files, 'n1', { env });
  let n2 = await runNode(t, files, 'n2', { env });
  const has = (proc: OysterProcess, msg: string) => logs(proc).some((l) => l.msg === msg);
  await waitFor('n1 to reach n2', () => has(n1, 'node n2 is reachable'), 10_000);
  t.equal(await stopNode(n2), 0);
  await waitFor('n1 to lose n2', () => has(n1, 'node n2 is unreachable'), 10_000);
  n2 = await runNode(t, files, 'n2', { env });
  await waitFor('n1 to see n2 again', () => logs(n1).filter((l) => l.msg === 'node n2 is reachable').length >= 2, 10_000);

  const lines = everyLineJson(t, n1, 'n1', "n1, under bob's template");
  const peers = lines.filter((l) => l.peer === 'n2').map((l) => `${l.msg} ${l.level}`);
  t.same(peers.slice(-2), ['node n2 is unreachable warn', 'node n2 is reachable warn'], 'the peer lost and back, at warn: root is warn, bob is info');
  t.ok(lines.some((l) => l.msg === 'node is serving' && l.level === 'info'), "the start line at info: bob's logger is at info");
  t.same(lines.filter((l) => below(l.level, 'info')), [], 'nothing below info');

  const quiet = everyLineJson(t, n2, 'n2', 'n2, with bob_backend at error');
  t.notOk(quiet.some((l) => l.state !== undefined), 'no disk lines: bob_backend is at error');
  t.ok(quiet.some((l) => l.msg === 'node is serving' && l.level === 'info'), 'the start line (bob, unset) at the root level, info');
});

t.test("grpc-js's own messages are JSON lines", async (t) => {
  const dir = tempDir(t, 'oyster-logs-grpc-');
  const files = await writeCluster(dir, { nodes: [{ name: 'n1' }] });
  // The gRPC port is taken: the node gives up. Before that, grpc-js traces
  // its server's construction (GRPC_TRACE, at GRPC_VERBOSITY=DEBUG).
  const [host, port] = [files.addresses.n1.split(':')[0], Number(files.addresses.n1.split(':')[1])];
  const squatter = net.createServer();
  await new Promise<void>((resolve) => squatter.listen(port, host, resolve));
  t.teardown(() => squatter.close());
  const r = spawnSync(process.execPath, [OYSTERD, '-c', files.clusterYaml, '-n', files.nodeYaml.n1, '--init-folders'], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, OYSTER_LOG_LEVEL: 'debug', GRPC_VERBOSITY: 'DEBUG', GRPC_TRACE: 'server' } });
  t.equal(r.status, 1, 'the node does not start');
  const lines = `${r.stdout}${r.stderr}`.split('\n').filter((l) => l.trim() !== '');
  const notJson = lines.filter((l) => {
    try {
      return typeof (JSON.parse(l) as { level?: unknown }).level !== 'string';
    } catch {
      return true;
    }
  });
  t.same(notJson, [], 'every line is JSON with a level');
  const grpcLine = lines.map((l) => JSON.parse(l) as LogLine).find((l) => l.source === 'grpc-js');
  t.match(grpcLine, { level: 'debug', node: 'n1', msg: /^grpc-js: .*\| server \|/ }, "grpc-js's line, in the node's log");
  t.ok(lines.some((l) => l.includes('node failed to start') && l.includes('EADDRINUSE')), 'and why the node stopped');
});
