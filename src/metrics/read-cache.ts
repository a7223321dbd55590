// The read cache as Prometheus sees it, by part: the records kept by the
// vdisks and the index blocks kept by the engines — what each holds and how
// often it answered a read (hits / (hits + misses) is its hit ratio).
import { Counter, Gauge, Registry } from 'prom-client';
import { ReadCache } from '../store/node-store';

type Figures = { capacity: number; usage: number; hits: number; misses: number };

export function registerReadCacheMetrics(registry: Registry, cache: ReadCache): void {
  const parts = (): Array<[string, Figures]> => [
    ['records', cache.records.stats()],
    ['index_blocks', cache.indexBlocks.stats()],
  ];
  const gauge = (name: string, help: string, pick: (f: Figures) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['part'],
      registers: [registry],
      collect() {
        for (const [part, f] of parts()) this.set({ part }, pick(f));
      },
    });
  const counter = (name: string, help: string, pick: (f: Figures) => number) =>
    new Counter({
      name,
      help,
      labelNames: ['part'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [part, f] of parts()) this.inc({ part }, pick(f));
      },
    });
  gauge('oyster_read_cache_bytes', 'Bytes the read cache holds, with their bookkeeping, by part (records, index_blocks)', (f) => f.usage);
  gauge('oyster_read_cache_capacity_bytes', 'The most each part of the read cache holds (read_cache_size: records 3/4, index_blocks 1/4)', (f) => f.capacity);
  counter('oyster_read_cache_hits_total', 'Reads answered from the read cache, by part', (f) => f.hits);
  counter('oyster_read_cache_misses_total', 'Reads the read cache could not answer, by part', (f) => f.misses);
}
