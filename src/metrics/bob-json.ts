// bob's JSON metrics: GET /metrics as bob answers it, which bob's deploy
// scripts (readiness: backend.backend_state is 1) and bob-management read:
//   {"metrics": {"<name>": {"value": <u64>, "timestamp": <unix seconds>}}}
// Every value is one this node measures: coordinated requests as bob's
// cluster_grinder.*, requests served from this node's storage (gRPC
// force_node) as client.*, engine operations as pearl.*, the storage gauges
// as backend.*, the process and machine as hardware.* (space in MiB, as bob).
// Rates and mean times cover the last complete 5-second window, as bob's do.
import fs from 'node:fs';
import os from 'node:os';
import { NodeStore } from '../store/node-store';
import { spaceOf } from './filesystems';
import { Interface, NodeMetrics, OPERATIONS, OUTCOMES, RequestPath } from './registry';

export interface BobMetricsJson {
  metrics: Record<string, { value: number; timestamp: number }>;
}

const WINDOW_MS = 5000;


/** Cumulative figures at one moment; two of them make the rates of a window. */
interface Sample {
  atMs: number;
  /**
   * Per bob prefix and operation: requests, failures (bob's requests count
   * "not found" as one, the engine's do not), seconds spent.
   */
  requests: Map<string, { count: number; errors: number; seconds: number }>;
  /** Process CPU time, microseconds. */
  cpuUs: number;
}

const PREFIXES: ReadonlyArray<{ prefix: string; path: RequestPath; interfaces: readonly Interface[] }> = [
  { prefix: 'cluster_grinder', path: 'coordinated', interfaces: ['rest', 'grpc'] },
  { prefix: 'client', path: 'local', interfaces: ['grpc'] },
];

export class BobMetrics {
  private started = false;
  private timer: NodeJS.Timeout | null = null;
  private previous: Sample;
  private latest: Sample;

  constructor(
    private readonly m: NodeMetrics,
    private readonly store: NodeStore,
  ) {
    this.previous = this.latest = this.sample();
  }

  /** The backend has started (bob's backend_state 1), and the windows begin. */
  start(): void {
    this.started = true;
    this.timer = setInterval(() => {
      this.previous = this.latest;
      this.latest = this.sample();
    }, WINDOW_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  async json(): Promise<BobMetricsJson> {
    const timestamp = Math.floor(Date.now() / 1000);
    const metrics: BobMetricsJson['metrics'] = {};
    const put = (name: string, value: number) => (metrics[name] = { value: Math.max(0, Math.round(value)), timestamp });
    put('backend.backend_state', this.started ? 1 : 0);

    const now = this.sample();
    const windowSeconds = (this.latest.atMs - this.previous.atMs) / 1000;
    for (const [key, total] of now.requests) {
      const [prefix, op] = key.split('.');
      const a = this.previous.requests.get(key)!;
      const b = this.latest.requests.get(key)!;
      const count = b.count - a.count;
      put(`${prefix}.${op}_count`, total.count);
      put(`${prefix}.${op}_error_count`, total.errors);
      put(`${prefix}.${op}_count_rate`, windowSeconds > 0 ? count / windowSeconds : 0);
      // The engine's calls are not timed one by one.
      if (prefix !== 'pearl') put(`${prefix}.${op}_timer`, count > 0 ? ((b.seconds - a.seconds) / count) * 1e9 : 0);
    }

    const gauge = async (name: string) => (await this.m.registry.getSingleMetric(name)?.get())?.values ?? [];
    // Started together, the storage gauges share one walk over the partitions.
    const [blobs, indexMemory, filterMemory, used, corrupted, ready, peersUp] = await Promise.all(
      ['oyster_blobs', 'oyster_index_memory_bytes', 'oyster_bloom_filter_memory_bytes', 'oyster_disk_used_bytes', 'oyster_corrupted_blobs', 'oyster_disk_ready', 'oyster_peer_up'].map(gauge),
    );
    const sum = (values: typeof blobs, alien?: boolean) =>
      values.filter((v) => alien === undefined || v.labels.alien === String(alien)).reduce((a, v) => a + v.value, 0);
    put('backend.blob_count', sum(blobs, false));
    put('backend.alien_count', sum(blobs, true));
    put('backend.corrupted_blob_count', sum(corrupted));
    put('backend.index_memory', sum(indexMemory));
    put('backend.bloom_filters_ram', sum(filterMemory));
    put('backend.used_disk', sum(used));
    put('backend.active_disks', sum(ready, false));
    // bob's link manager counts every node of the cluster that answers, itself included.
    put('link_manager.nodes_number', 1 + sum(peersUp));
    const space = await spaceOf(this.store.disks.map((d) => d.options.diskPath));
    const mib = (bytes: number) => Math.floor(bytes / 1024 / 1024);
    put('hardware.total_space', mib(space.total));
    put('hardware.free_space', mib(space.free));
    put('hardware.used_space', mib(space.used));
    const memory = meminfo();
    const total = os.totalmem();
    const available = memory.MemAvailable ?? os.freemem();
    put('hardware.total_ram', total);
    put('hardware.available_ram', available);
    put('hardware.used_ram', total - available);
    put('hardware.used_swap', (memory.SwapTotal ?? 0) - (memory.SwapFree ?? 0));
    put('hardware.bob_ram', process.memoryUsage.rss());
    put('hardware.bob_virtual_ram', processStatus('VmSize'));
    put('hardware.descr_amount', openDescriptors());
    // Percent of one CPU, as bob reports it (over 100 when several are busy).
    const cpuWindowMs = this.latest.atMs - this.previous.atMs;
    put('hardware.bob_cpu_load', cpuWindowMs > 0 ? ((this.latest.cpuUs - this.previous.cpuUs) / 1000 / cpuWindowMs) * 100 : 0);
    return { metrics };
  }

  private sample(): Sample {
    const requests: Sample['requests'] = new Map();
    for (const { prefix, path, interfaces } of PREFIXES) {
      for (const op of OPERATIONS) {
        const r = { count: 0, errors: 0, seconds: 0 };
        for (const iface of interfaces) {
          if (iface === 'rest' && op === 'exist') continue;
          for (const outcome of OUTCOMES) {
            const n = this.m.requests.child(iface, op, path, outcome).value;
            r.count += n;
            if (outcome !== 'ok') r.errors += n;
          }
          r.seconds += this.m.requestDuration.child(iface, op, path).sum;
        }
        requests.set(`${prefix}.${op}`, r);
      }
    }
    for (const op of OPERATIONS) {
      const r = { count: 0, errors: 0, seconds: 0 };
      for (const outcome of ['ok', 'not_found', 'error'] as const) {
        const n = this.m.engineOperations.child(op, outcome).value;
        r.count += n;
        if (outcome === 'error') r.errors += n;
      }
      requests.set(`pearl.${op}`, r);
    }
    const cpu = process.cpuUsage();
    return { atMs: performance.now(), requests, cpuUs: cpu.user + cpu.system };
  }
}

// Linux's /proc answers the rest; elsewhere they read 0.

/** /proc/meminfo in bytes, by field. */
function meminfo(): Record<string, number> {
  const out: Record<string, number> = {};
  try {
    for (const m of fs.readFileSync('/proc/meminfo', 'utf8').matchAll(/^(\w+):\s+(\d+) kB$/gm)) out[m[1]] = Number(m[2]) * 1024;
  } catch {
    // not Linux
  }
  return out;
}

/** A size field of /proc/self/status in bytes (VmSize: the virtual memory). */
function processStatus(field: string): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(fs.readFileSync('/proc/self/status', 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

function openDescriptors(): number {
  try {
    return fs.readdirSync('/proc/self/fd').length;
  } catch {
    return 0;
  }
}
