// The request-path metric types (src/metrics/hot.ts) as a prom-client
// Registry exposes them: cumulative buckets with inclusive upper bounds,
// _sum and _count, one series per label set, the registry's default labels,
// and reset.
import { Registry } from 'prom-client';
import t from 'tap';
import { HotCounter, HotHistogram } from '../../src/metrics/hot';

function setup() {
  const registry = new Registry();
  registry.setDefaultLabels({ node: 'n1' });
  const registers = [registry];
  const counter = new HotCounter({ name: 'x_ops_total', help: 'ops', labelNames: ['op', 'outcome'] as const, registers });
  const histogram = new HotHistogram({ name: 'x_seconds', help: 'latency', labelNames: ['op'] as const, buckets: [0.5, 0.1, 1], registers });
  return { registry, counter, histogram };
}

t.test('counter children add up per label set', async (t) => {
  const { registry, counter } = setup();
  counter.child('get', 'ok').inc();
  counter.child('get', 'ok').inc(2);
  counter.child('put', 'error').inc();
  const text = await registry.metrics();
  t.match(text, '# TYPE x_ops_total counter');
  t.match(text, 'x_ops_total{op="get",outcome="ok",node="n1"} 3\n');
  t.match(text, 'x_ops_total{op="put",outcome="error",node="n1"} 1');
  t.equal(counter.child('get', 'ok'), counter.child('get', 'ok'), 'a label set resolves to one child');
});

t.test('label values are kept apart whatever characters they hold', async (t) => {
  const { registry, counter } = setup();
  counter.child('a', 'bc').inc();
  counter.child('ab', 'c').inc(2);
  counter.child('a\u0000b', 'c').inc(3);
  counter.child('a', '\u0000bc').inc(4);
  t.not(counter.child('a', 'bc'), counter.child('ab', 'c'));
  const json = await registry.getMetricsAsJSON();
  t.same(
    json[0].values.map((v) => [v.labels.op, v.labels.outcome, v.value]),
    [
      ['a', 'bc', 1],
      ['ab', 'c', 2],
      ['a\u0000b', 'c', 3],
      ['a', '\u0000bc', 4],
    ],
    'one series per label set, in the order they appeared',
  );
  registry.resetMetrics();
  counter.child('a', 'bc').inc(5);
  t.same((await registry.getMetricsAsJSON())[0].values.map((v) => v.value), [5], 'a child made after reset starts anew');
});

t.test('histogram buckets are cumulative with inclusive bounds, sorted', async (t) => {
  const { registry, histogram } = setup();
  const h = histogram.child('get');
  for (const v of [0.1, 0.05, 0.2, 0.5, 3]) h.observe(v);
  const text = await registry.metrics();
  t.match(text, '# TYPE x_seconds histogram');
  t.match(text, 'x_seconds_bucket{op="get",le="0.1",node="n1"} 2\n');
  t.match(text, 'x_seconds_bucket{op="get",le="0.5",node="n1"} 4\n');
  t.match(text, 'x_seconds_bucket{op="get",le="1",node="n1"} 4\n');
  t.match(text, 'x_seconds_bucket{op="get",le="+Inf",node="n1"} 5\n');
  t.match(text, 'x_seconds_count{op="get",node="n1"} 5');
  const sum = Number(/x_seconds_sum\{op="get",node="n1"\} (\S+)/.exec(text)?.[1]);
  t.ok(Math.abs(sum - 3.85) < 1e-9, `sum ${sum}`);
  t.ok(text.indexOf('le="0.1"') < text.indexOf('le="0.5"'), 'buckets in ascending order');
});

t.test('reset drops every series; JSON matches prom-client shape', async (t) => {
  const { registry, counter, histogram } = setup();
  counter.child('get', 'ok').inc();
  histogram.child('get').observe(0.2);
  const json = await registry.getMetricsAsJSON();
  t.same(
    json.map((m) => [m.name, m.type, m.values.length]),
    [
      ['x_ops_total', 'counter', 1],
      ['x_seconds', 'histogram', 6],
    ],
  );
  registry.resetMetrics();
  const text = await registry.metrics();
  t.notMatch(text, /x_ops_total\{/);
  t.notMatch(text, /x_seconds_bucket\{/);
});
