// Counters and histograms for the request paths. prom-client's own types
// build, validate and hash a label object on every inc/observe, which costs
// several microseconds per request at REST rates. Here a label set is
// resolved once to a child holding plain numbers, and the registry reads the
// children when it is scraped (Registry.registerMetric takes any object with
// prom-client's get()/reset() shape).
import type { Metric, Registry } from 'prom-client';

type Labels = Record<string, string>;

interface Sample {
  value: number;
  labels: Labels;
  metricName?: string;
}

interface Child {
  readonly labels: Labels;
}

interface HotOptions<L extends string> {
  name: string;
  help: string;
  labelNames: readonly L[];
  registers: Registry[];
}

abstract class HotMetric<L extends string, C extends Child> {
  readonly name: string;
  readonly help: string;
  readonly aggregator = 'sum';
  private readonly labelNames: readonly L[];
  private readonly children: C[] = [];
  // One level per label, keyed by its value: a lookup hashes the (usually
  // constant) label strings, never a string built per call.
  private tree = new Map<string, unknown>();

  protected constructor(
    readonly type: 'counter' | 'histogram',
    o: HotOptions<L>,
  ) {
    this.name = o.name;
    this.help = o.help;
    this.labelNames = o.labelNames;
    for (const r of o.registers) r.registerMetric(this as unknown as Metric);
  }

  /** The child of one label set, in labelNames order; keep it where the values are fixed. */
  child(...values: string[]): C {
    let level = this.tree;
    const last = values.length - 1;
    for (let i = 0; i < last; i++) {
      let next = level.get(values[i]) as Map<string, unknown> | undefined;
      if (next === undefined) {
        next = new Map();
        level.set(values[i], next);
      }
      level = next;
    }
    let c = level.get(values[last]) as C | undefined;
    if (c === undefined) {
      const labels: Labels = {};
      this.labelNames.forEach((n, i) => (labels[n] = values[i]));
      c = this.create(labels);
      level.set(values[last], c);
      this.children.push(c);
    }
    return c;
  }

  protected abstract create(labels: Labels): C;
  protected abstract samples(c: C): Sample[];

  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Sample[] }> {
    const values: Sample[] = [];
    for (const c of this.children) values.push(...this.samples(c));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.children.length = 0;
    this.tree = new Map();
  }
}

export class CounterChild implements Child {
  value = 0;
  constructor(readonly labels: Labels) {}
  inc(n = 1): void {
    this.value += n;
  }
}

export class HotCounter<L extends string> extends HotMetric<L, CounterChild> {
  constructor(o: HotOptions<L>) {
    super('counter', o);
  }
  protected create(labels: Labels): CounterChild {
    return new CounterChild(labels);
  }
  protected samples(c: CounterChild): Sample[] {
    return [{ value: c.value, labels: c.labels }];
  }
}

export class HistogramChild implements Child {
  /** Observations per bucket (not cumulative); the last one is +Inf. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  constructor(
    readonly labels: Labels,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }
  observe(v: number): void {
    let i = 0;
    while (i < this.bounds.length && v > this.bounds[i]) i++;
    this.counts[i]++;
    this.sum += v;
    this.count++;
  }
}

export class HotHistogram<L extends string> extends HotMetric<L, HistogramChild> {
  private readonly bounds: readonly number[];
  constructor(o: HotOptions<L> & { buckets: readonly number[] }) {
    super('histogram', o);
    this.bounds = [...o.buckets].sort((a, b) => a - b);
  }
  protected create(labels: Labels): HistogramChild {
    return new HistogramChild(labels, this.bounds);
  }
  protected samples(c: HistogramChild): Sample[] {
    const out: Sample[] = [];
    let cumulative = 0;
    this.bounds.forEach((le, i) => {
      cumulative += c.counts[i];
      out.push({ metricName: `${this.name}_bucket`, labels: { ...c.labels, le: String(le) }, value: cumulative });
    });
    out.push({ metricName: `${this.name}_bucket`, labels: { ...c.labels, le: '+Inf' }, value: c.count });
    out.push({ metricName: `${this.name}_sum`, labels: c.labels, value: c.sum });
    out.push({ metricName: `${this.name}_count`, labels: c.labels, value: c.count });
    return out;
  }
}

/** Seconds since an earlier performance.now() reading. */
export function secondsSince(startMs: number): number {
  return (performance.now() - startMs) / 1000;
}
