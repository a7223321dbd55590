// Gauges read from the storage when Prometheus scrapes: blobs, records,
// index and bloom filter memory, bytes used and disk space per disk, and the
// alien records held per owner (waiting for hand-off). One walk over the
// engines serves all of them.
import fs from 'node:fs';
import { Gauge, Registry } from 'prom-client';
import { NodeStore } from '../store/node-store';

interface DiskFigures {
  blobs: number;
  records: number;
  partitions: number;
  indexMemory: number;
  filterMemory: number;
  usedBytes: number;
}

interface Figures {
  disks: Map<string, DiskFigures>;
  aliens: Map<string, number>;
  space: Map<string, { total: number; free: number }>;
}

export function registerStorageGauges(registry: Registry, store: NodeStore): void {
  // All gauges of one scrape share one walk: prom-client starts every
  // collect() of a scrape at once, so they find the walk in flight. A later
  // scrape walks again (a cache by time would show figures from before the
  // latest writes or disk state changes).
  let inFlight: Promise<Figures> | null = null;
  const figures = (): Promise<Figures> => {
    inFlight ??= gather(store).finally(() => (inFlight = null));
    return inFlight;
  };
  const perDisk = (name: string, help: string, pick: (d: DiskFigures) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['disk'],
      registers: [registry],
      async collect() {
        this.reset();
        for (const [disk, d] of (await figures()).disks) this.set({ disk }, pick(d));
      },
    });
  perDisk('oyster_blobs', 'Blob files open, by disk (the alien directory under its disk name)', (d) => d.blobs);
  perDisk('oyster_records', 'Records stored (versions and tombstones included), by disk', (d) => d.records);
  perDisk('oyster_partitions', 'Partitions open, by disk', (d) => d.partitions);
  perDisk('oyster_index_memory_bytes', 'RAM held by in-memory indexes and index fences, by disk', (d) => d.indexMemory);
  perDisk('oyster_bloom_filter_memory_bytes', 'RAM held by bloom filters of closed blobs, by disk', (d) => d.filterMemory);
  perDisk('oyster_disk_used_bytes', 'Bytes of blob and index files, by disk', (d) => d.usedBytes);
  new Gauge({
    name: 'oyster_disk_space_bytes',
    help: 'Size and free space (available to the node) of the filesystem holding each disk',
    labelNames: ['disk', 'kind'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const [disk, s] of (await figures()).space) {
        this.set({ disk, kind: 'total' }, s.total);
        this.set({ disk, kind: 'free' }, s.free);
      }
    },
  });
  new Gauge({
    name: 'oyster_aliens_pending_records',
    help: 'Alien records held for another node and not yet handed over, by owner',
    labelNames: ['owner'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const [owner, n] of (await figures()).aliens) this.set({ owner }, n);
    },
  });
}

async function gather(store: NodeStore): Promise<Figures> {
  const disks = new Map<string, DiskFigures>();
  const aliens = new Map<string, number>();
  for (const c of [...store.disks, store.alien]) {
    const d = disks.get(c.name) ?? { blobs: 0, records: 0, partitions: 0, indexMemory: 0, filterMemory: 0, usedBytes: 0 };
    disks.set(c.name, d);
    if (!c.isReady) continue;
    const vdisks = c.alien ? c.vdisks.aliens() : c.vdisks.all().map((vdisk) => ({ owner: '', vdisk }));
    for (const { owner, vdisk } of vdisks) {
      for (const p of vdisk.partitions.all) {
        const st = await p.engine.stats().catch(() => null);
        if (!st) continue;
        d.blobs += st.blobs;
        d.records += st.records;
        d.partitions++;
        d.indexMemory += st.indexMemory;
        d.filterMemory += st.filterMemory;
        d.usedBytes += st.diskBytes;
        if (c.alien) aliens.set(owner, (aliens.get(owner) ?? 0) + st.records);
      }
    }
  }
  const space = new Map<string, { total: number; free: number }>();
  for (const c of store.disks) {
    const s = await fs.promises.statfs(c.options.diskPath).catch(() => null);
    if (s) space.set(c.name, { total: s.blocks * s.bsize, free: s.bavail * s.bsize });
  }
  return { disks, aliens, space };
}
