// The read cache as Prometheus sees it: what it holds and how often it
// answered a read (hits / (hits + misses) is its hit ratio).
import { Counter, Gauge, Registry } from 'prom-client';
import { ReadCache } from '../store/engine';

export function registerReadCacheMetrics(registry: Registry, cache: ReadCache): void {
  const gauge = (name: string, help: string, pick: (s: ReturnType<ReadCache['stats']>) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(pick(cache.stats()));
      },
    });
  const counter = (name: string, help: string, pick: (s: ReturnType<ReadCache['stats']>) => number) =>
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(pick(cache.stats()));
      },
    });
  gauge('oyster_read_cache_bytes', 'Bytes the read cache holds: records and index blocks kept to be read again, with their bookkeeping', (s) => s.usage);
  gauge('oyster_read_cache_capacity_bytes', 'The most the read cache holds (read_cache_size)', (s) => s.capacity);
  counter('oyster_read_cache_hits_total', 'Reads of records and index blocks answered from the read cache', (s) => s.hits);
  counter('oyster_read_cache_misses_total', 'Reads of records and index blocks the read cache could not answer', (s) => s.misses);
}
