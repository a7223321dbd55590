// The monitoring the package ships (packaging/share, installed under
// /usr/share/oyster): Prometheus's alerting rules pass `promtool check
// rules`, and `promtool test rules` sees them fire on series shaped as a node
// exports them (a counter at 0 from the start, then its first increment);
// the Grafana dashboard is a well-formed dashboard; and every metric the
// dashboard and the rules query is one a running node exports.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t, { Test } from 'tap';
import YAML from 'yaml';
import { writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import { runNode, scrape } from './lib';

const SHARE = path.resolve(__dirname, '..', '..', '..', 'packaging', 'share');
const RULES = path.join(SHARE, 'oyster-alerts.yml');
const DASHBOARD = path.join(SHARE, 'oyster-dashboard.json');

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

interface Panel {
  type: string;
  id: number;
  title: string;
  gridPos?: { h: number; w: number; x: number; y: number };
  targets?: Array<{ expr: string; refId: string }>;
}

const rules = (YAML.parse(fs.readFileSync(RULES, 'utf8')) as { groups: Array<{ rules: Rule[] }> }).groups.flatMap((g) => g.rules);
const dashboard = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8')) as {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: Array<{ name: string; definition?: string }> };
};

/** promtool with arguments; null when it is not installed (a passing note says so). */
function promtool(t: Test, args: string[], cwd?: string): { status: number | null; output: string } | null {
  const r = spawnSync('promtool', args, { encoding: 'utf8', cwd, timeout: 60_000 });
  if ((r.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') {
    t.pass(`SKIP promtool ${args[0]} ${args[1]}: promtool is not installed (apt-get install prometheus)`);
    return null;
  }
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

const PROMQL_WORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'inf', 'nan']);

/** The metric names a PromQL expression reads (functions, keywords, labels and Grafana variables left out). */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  for (const m of bare.matchAll(/(?<![\w$.:])([a-zA-Z_:][\w:]*)(?![\w:])(?!\s*\()/g)) {
    if (!PROMQL_WORDS.has(m[1])) names.add(m[1]);
  }
  return [...names];
}

t.test('metricNames reads a query as PromQL does', async (t) => {
  t.same(metricNames('sum by (job, instance) (rate(a_total{x=~"e|u"}[5m])) / sum by (job) (rate(b_total[5m])) > 0.05'), ['a_total', 'b_total']);
  t.same(metricNames('histogram_quantile(0.99, sum by (le) (rate(h_bucket{instance=~"$instance"}[$__rate_interval])))'), ['h_bucket']);
  t.same(metricNames('x - time() < 14 * 86400 and on (instance) y offset 5m'), ['x', 'y']);
  t.same(metricNames('label_values(oyster_build_info, instance)'), ['oyster_build_info', 'instance'], 'label_values names its label as a bare word');
});

t.test('the alerting rules', async (t) => {
  t.ok(rules.length >= 10, `${rules.length} rules`);
  for (const r of rules) {
    t.ok(r.labels?.severity === 'warning' || r.labels?.severity === 'critical', `${r.alert}: a severity`);
    t.ok(r.annotations?.summary && r.annotations?.description, `${r.alert}: a summary and a description`);
  }
  const names = rules.map((r) => r.alert);
  for (const wanted of ['OysterDiskNotReady', 'OysterDiskNearlyFull', 'OysterPeerDown', 'OysterErrorRatio', 'OysterCorruptRecords', 'OysterAliensPending', 'OysterCertificateExpiry']) {
    t.ok(names.includes(wanted), `${wanted} is there`);
  }
  const checked = promtool(t, ['check', 'rules', RULES]);
  if (checked) t.equal(checked.status, 0, `promtool check rules accepts them${checked.status === 0 ? '' : `:\n${checked.output}`}`);

  // Unit tests of the rules, on series shaped as a node exports them.
  const dir = tempDir(t, 'oyster-rules-');
  const node = 'instance: "n1:8000", job: "oyster"';
  const tests = {
    rule_files: [RULES],
    evaluation_interval: '1m',
    tests: [
      {
        interval: '1m',
        input_series: [
          // Exported at 0 from the start: the first damaged record is an increase.
          { series: `oyster_corrupt_records_total{${node}, disk: "d1"}`.replace(/: /g, '=').replace(/, /g, ','), values: '0 0 1 1' },
          // A series born with its first increment has no increase to show.
          { series: `oyster_corrupt_records_total{${node}, disk: "d2"}`.replace(/: /g, '=').replace(/, /g, ','), values: '_ _ 1 1' },
          { series: `oyster_disk_ready{${node}, disk: "d1", alien: "false"}`.replace(/: /g, '=').replace(/, /g, ','), values: '1 0x10' },
          { series: `oyster_peer_up{${node}, peer: "n2"}`.replace(/: /g, '=').replace(/, /g, ','), values: '1 1 0x10' },
        ],
        alert_rule_test: [
          {
            eval_time: '3m',
            alertname: 'OysterCorruptRecords',
            exp_alerts: [{ exp_labels: { severity: 'critical', instance: 'n1:8000', job: 'oyster', disk: 'd1' } }],
          },
          {
            eval_time: '7m',
            alertname: 'OysterDiskNotReady',
            exp_alerts: [{ exp_labels: { severity: 'critical', instance: 'n1:8000', job: 'oyster', disk: 'd1', alien: 'false' } }],
          },
          { eval_time: '4m', alertname: 'OysterPeerDown', exp_alerts: [] },
          {
            eval_time: '8m',
            alertname: 'OysterPeerDown',
            exp_alerts: [{ exp_labels: { severity: 'warning', instance: 'n1:8000', job: 'oyster', peer: 'n2' } }],
          },
        ],
      },
    ],
  };
  // The exp_alerts of a unit test list annotations too: take them from the rules, with the labels filled in.
  for (const test of tests.tests) {
    for (const a of test.alert_rule_test) {
      const rule = rules.find((r) => r.alert === a.alertname)!;
      for (const e of a.exp_alerts as Array<{ exp_labels: Record<string, string>; exp_annotations?: Record<string, string> }>) {
        e.exp_annotations = Object.fromEntries(
          Object.entries(rule.annotations).map(([k, v]) => [k, v.replace(/\{\{ \$labels\.(\w+) \}\}/g, (_m, l: string) => e.exp_labels[l] ?? '')]),
        );
      }
    }
  }
  const file = path.join(dir, 'rules.test.yml');
  fs.writeFileSync(file, YAML.stringify(tests));
  const tested = promtool(t, ['test', 'rules', file], dir);
  if (tested) t.equal(tested.status, 0, `promtool test rules: the alerts fire as expected${tested.status === 0 ? '' : `:\n${tested.output}`}`);
});

t.test('the Grafana dashboard', async (t) => {
  t.equal(dashboard.uid, 'oyster-nodes');
  const ids = dashboard.panels.map((p) => p.id);
  t.equal(new Set(ids).size, ids.length, 'panel ids are unique');
  const graphs = dashboard.panels.filter((p) => p.type !== 'row');
  t.ok(graphs.length >= 25, `${graphs.length} panels`);
  for (const p of graphs) {
    t.ok(p.gridPos && p.gridPos.x + p.gridPos.w <= 24, `${p.title}: placed on the grid`);
    t.ok(p.targets && p.targets.length > 0 && p.targets.every((q) => q.expr.length > 0), `${p.title}: queries`);
  }
  const titles = graphs.map((p) => p.title.toLowerCase()).join('\n');
  for (const topic of ['requests', 'failed', 'latency', 'disks', 'space', 'alien', 'peers', 'repair', 'anti-entropy', 'damaged']) {
    t.match(titles, topic, `a panel on ${topic}`);
  }
  t.same(dashboard.templating.list.map((v) => v.name), ['datasource', 'instance'], 'a data source and a node to choose');
});

t.test('every metric the dashboard and the rules query is exported by a running node', async (t) => {
  const files = await writeCluster(tempDir(t, 'oyster-monitoring-'), { nodes: [{ name: 'n1' }, { name: 'n2' }], vdisks: 2 });
  const proc = await runNode(t, files, 'n1');
  const exposition = await scrape(`${proc.url}/metrics`);
  const families = new Map([...exposition.matchAll(/^# TYPE (\w+) (\w+)$/gm)].map((m) => [m[1], m[2]]));
  const exported = (name: string) => {
    if (families.has(name)) return true;
    const m = /^(\w+)_(bucket|sum|count)$/.exec(name);
    return m !== null && families.get(m[1]) === 'histogram';
  };
  const queried = new Map<string, string>();
  for (const r of rules) for (const n of metricNames(r.expr)) queried.set(n, `rule ${r.alert}`);
  for (const p of dashboard.panels) for (const q of p.targets ?? []) for (const n of metricNames(q.expr)) queried.set(n, `panel "${p.title}"`);
  for (const v of dashboard.templating.list) for (const n of metricNames(v.definition ?? '').slice(0, 1)) queried.set(n, `variable ${v.name}`);
  // Made by Prometheus itself, not by the node.
  queried.delete('up');
  t.ok(queried.size >= 30, `${queried.size} metrics queried`);
  for (const [name, where] of queried) t.ok(exported(name), `${name} (${where}) is exported`);
});
