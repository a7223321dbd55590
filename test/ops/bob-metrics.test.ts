// bob's JSON metrics (docs/OPERATIONS.md, "bob's JSON metrics"): the
// readiness check of bob's integration deploy script, exactly as it runs —
// GET http://127.0.0.1:<rest_min_port + i>/metrics for every node, with what
// python-requests sends, then the body decoded as ASCII JSON and
// metrics["backend.backend_state"]["value"] == 1 — passes against nodes with
// metrics.rest_format: bob and fails against the default (Prometheus text);
// Accept: application/json and /metrics/bob answer JSON whatever the format;
// every name bob-management reads is there, with integer values that follow
// the traffic.
import fs from 'node:fs';
import net from 'node:net';
import t from 'tap';
import YAML from 'yaml';
import { freePort, writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import { waitFor } from '../cluster/lib';
import { call } from '../rest/lib/node';
import { runNode, scrape } from './lib';

interface BobJson {
  metrics: Record<string, { value: number; timestamp: number }>;
}

/** The headers python-requests sends with requests.get(url). */
const PYTHON_REQUESTS = { 'User-Agent': 'python-requests/2.31.0', 'Accept-Encoding': 'gzip, deflate', Accept: '*/*', Connection: 'keep-alive' };

/**
 * bob's ensure_backend_up, one attempt: the outcome it reaches for every
 * node, "ready" or why it would retry (a non-200, a body json.loads refuses
 * or decode('ascii') refuses, no backend.backend_state, a value other than 1).
 */
async function bobReadiness(restMinPort: number, nodes: number): Promise<string[]> {
  const outcomes: string[] = [];
  for (let item = 0; item < nodes; item++) {
    const res = await fetch(`http://127.0.0.1:${restMinPort + item}/metrics`, { headers: PYTHON_REQUESTS });
    const body = Buffer.from(await res.arrayBuffer());
    if (res.status !== 200) {
      outcomes.push(`node ${item}: status ${res.status}`);
      continue;
    }
    if (body.some((b) => b > 0x7f)) {
      outcomes.push(`node ${item}: not ASCII`);
      continue;
    }
    let metrics: BobJson;
    try {
      metrics = JSON.parse(body.toString('latin1')) as BobJson;
    } catch {
      outcomes.push(`node ${item}: not JSON (${body.toString('latin1').slice(0, 40)}…)`);
      continue;
    }
    const state = metrics?.metrics?.['backend.backend_state'];
    if (state === undefined) outcomes.push(`node ${item}: no backend.backend_state`);
    else outcomes.push(state.value === 1 ? `node ${item}: ready` : `node ${item}: backend down`);
  }
  return outcomes;
}

/** Two free ports in a row: the script finds node i at rest_min_port + i. */
async function twoPortsInARow(): Promise<number> {
  for (;;) {
    const p = await freePort();
    const server = net.createServer();
    const free = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(p + 1, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return p;
  }
}

/** The names bob-management reads (its RawMetricEntry) and bob's deploy script reads. */
const READ_BY_BOBS_TOOLS = [
  'backend.backend_state',
  'cluster_grinder.get_count_rate',
  'cluster_grinder.put_count_rate',
  'cluster_grinder.exist_count_rate',
  'cluster_grinder.delete_count_rate',
  'pearl.exist_count_rate',
  'pearl.get_count_rate',
  'pearl.put_count_rate',
  'pearl.delete_count_rate',
  'backend.alien_count',
  'backend.corrupted_blob_count',
  'hardware.bob_virtual_ram',
  'hardware.total_ram',
  'hardware.used_ram',
  'hardware.bob_cpu_load',
  'hardware.free_space',
  'hardware.total_space',
  'hardware.descr_amount',
];

t.test("bob's deploy script finds nodes with rest_format: bob ready", async (t) => {
  const base = await twoPortsInARow();
  for (const [format, expectReady] of [
    ['bob', true],
    ['prometheus', false],
  ] as const) {
    await t.test(`metrics.rest_format: ${format}`, async (t) => {
      const port = format === 'bob' ? base : await twoPortsInARow();
      const files = await writeCluster(
        tempDir(t, 'oyster-bob-metrics-'),
        { nodes: [{ name: 'a' }, { name: 'b' }], vdisks: 2 },
        { extra: { metrics: { graphite_enabled: false, prometheus_enabled: false, rest_format: format } } },
      );
      for (const [i, name] of ['a', 'b'].entries()) {
        const doc = YAML.parse(fs.readFileSync(files.nodeYaml[name], 'utf8')) as Record<string, unknown>;
        fs.writeFileSync(files.nodeYaml[name], YAML.stringify({ ...doc, http_api_port: port + i }));
      }
      await Promise.all(['a', 'b'].map((n) => runNode(t, files, n)));
      const outcomes = await bobReadiness(port, 2);
      if (expectReady) t.same(outcomes, ['node 0: ready', 'node 1: ready'], 'every node is ready');
      else t.ok(outcomes.every((o) => /not JSON/.test(o)), `Prometheus text by default: the check would retry (${outcomes.join('; ')})`);
      // A Prometheus scraper names its formats: it gets text either way.
      const text = await fetch(`http://127.0.0.1:${port}/metrics`, {
        headers: { Accept: 'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1' },
      });
      t.match(text.headers.get('content-type'), /^text\/plain; version=0\.0\.4/, "Prometheus's Accept: text");
      t.match(await text.text(), /^# HELP /m);
      for (const [what, url, headers] of [
        ['Accept: application/json', '/metrics', { Accept: 'application/json' }],
        ['/metrics/bob', '/metrics/bob', { Accept: 'text/plain' }],
      ] as const) {
        const res = await fetch(`http://127.0.0.1:${port}${url}`, { headers });
        t.match(res.headers.get('content-type'), /^application\/json/, `${what}: JSON`);
        t.equal(((await res.json()) as BobJson).metrics['backend.backend_state']?.value, 1, `${what}: backend.backend_state is 1`);
      }
    });
  }
});

t.test("bob's JSON metrics follow the node", async (t) => {
  const files = await writeCluster(tempDir(t, 'oyster-bob-json-'), { nodes: [{ name: 'n1', disks: ['d1', 'd2'] }], replicas: [['n1/d1'], ['n1/d2']] });
  const proc = await runNode(t, files, 'n1');
  const json = async () => (await (await fetch(`${proc.url}/metrics/bob`)).json()) as BobJson;
  const first = await json();
  const names = Object.keys(first.metrics);
  t.same(READ_BY_BOBS_TOOLS.filter((n) => !names.includes(n)), [], "every name bob's tools read is there");
  const now = Date.now() / 1000;
  for (const [name, e] of Object.entries(first.metrics)) {
    if (!Number.isSafeInteger(e.value) || e.value < 0 || !Number.isSafeInteger(e.timestamp) || Math.abs(e.timestamp - now) > 60) {
      t.fail(`${name}: value and timestamp are non-negative integers, the timestamp in seconds now (${JSON.stringify(e)})`);
    }
  }
  t.equal(first.metrics['backend.active_disks'].value, 2, 'both disks are active');
  t.equal(first.metrics['link_manager.nodes_number'].value, 1, 'the node itself is the one node');
  t.ok(first.metrics['hardware.total_space'].value > 0 && first.metrics['hardware.free_space'].value <= first.metrics['hardware.total_space'].value, 'space in MiB');
  t.ok(first.metrics['hardware.bob_ram'].value > 10e6 && first.metrics['hardware.bob_virtual_ram'].value >= first.metrics['hardware.bob_ram'].value, 'resident and virtual memory in bytes');
  t.ok(first.metrics['hardware.descr_amount'].value > 5, 'open descriptors');
  t.equal(first.metrics['cluster_grinder.put_count'].value, 0, 'no puts yet');

  for (let k = 0; k < 10; k++) t.equal((await call(proc.url, 'POST', `/data/${k}`, `v${k}`)).status, 201);
  for (let k = 0; k < 12; k++) await call(proc.url, 'GET', `/data/${k}`);
  const after = await json();
  const m = (name: string) => after.metrics[name].value;
  t.equal(m('cluster_grinder.put_count'), 10, 'coordinated puts');
  t.equal(m('cluster_grinder.get_count'), 12, 'coordinated gets');
  t.equal(m('cluster_grinder.get_error_count'), 2, "gets of absent keys fail, as bob counts them");
  t.equal(m('cluster_grinder.put_error_count'), 0);
  t.ok(m('pearl.put_count') >= 10, 'engine puts');
  t.ok(m('backend.blob_count') >= 2, 'blobs on both disks');
  t.equal(m('backend.alien_count'), 0, 'no alien blobs');
  t.equal(m('backend.corrupted_blob_count'), 0);
  const prom = await scrape(`${proc.url}/metrics`);
  t.match(prom, /^oyster_requests_total\{interface="rest",operation="put",path="coordinated",outcome="ok"\} 10$/m, 'the same figures as the Prometheus counters');

  // The rates cover the last complete 5-second window: wait for the one holding the traffic.
  let rated: BobJson | undefined;
  await waitFor('a window with the puts in it', async () => (rated = await json()).metrics['cluster_grinder.put_count_rate'].value > 0, 12_000);
  // All 10 in one window are 2 per second; split over two, one of them has 1.
  const rate = rated!.metrics['cluster_grinder.put_count_rate'].value;
  t.ok(rate === 1 || rate === 2, `10 puts within 5 s: ${rate} per second`);
  t.ok(rated!.metrics['cluster_grinder.put_timer'].value > 0, 'mean put time in nanoseconds');
  t.ok(rated!.metrics['pearl.put_count_rate'].value >= 1, 'engine puts per second');
});
