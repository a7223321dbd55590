// Gauges read from the storage when Prometheus scrapes: blobs, records,
// live keys, index and bloom filter memory, bytes used, quarantined blobs and disk
// space per disk, and the alien records held per owner (waiting for
// hand-off). One walk over the engines serves all of them. A disk that is
// not serving has no series: its figures are unknown, not zero.
import fs from 'node:fs';
import path from 'node:path';
import { Gauge, Registry } from 'prom-client';
import { NodeStore } from '../store/node-store';

interface DiskFigures {
  disk: string;
  alien: boolean;
  blobs: number;
  records: number;
  liveKeys: number;
  partitions: number;
  indexMemory: number;
  filterMemory: number;
  usedBytes: number;
  corruptedBlobs: number;
}

interface Figures {
  disks: DiskFigures[];
  aliens: Map<string, number>;
  space: Map<string, { size: number; avail: number }>;
}

/** The engine's quarantine inside a partition directory (docs/FORMAT.md). */
const QUARANTINE = 'corrupted';

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
      help: `${help}, by disk; alien="true" for the alien directory`,
      labelNames: ['disk', 'alien'],
      registers: [registry],
      async collect() {
        this.reset();
        for (const d of (await figures()).disks) this.set({ disk: d.disk, alien: String(d.alien) }, pick(d));
      },
    });
  perDisk('oyster_blobs', 'Blob files open', (d) => d.blobs);
  perDisk('oyster_records', 'Records stored (versions and tombstones included)', (d) => d.records);
  // Exact once the disk's compactor counted the garbage of its vdisks after they opened (docs/OPERATIONS.md).
  perDisk('oyster_live_keys', 'Keys whose newest record is a value (for the alien directory, summed over owners)', (d) => d.liveKeys);
  perDisk('oyster_partitions', 'Partitions open', (d) => d.partitions);
  perDisk('oyster_index_memory_bytes', 'RAM held by in-memory indexes and index fences', (d) => d.indexMemory);
  perDisk('oyster_bloom_filter_memory_bytes', 'RAM held by bloom filters of closed blobs', (d) => d.filterMemory);
  perDisk('oyster_disk_used_bytes', 'Bytes of blob and index files', (d) => d.usedBytes);
  perDisk('oyster_corrupted_blobs', 'Blob files the engine quarantined in corrupted/ directories (unreadable headers), in open partitions', (d) => d.corruptedBlobs);
  const space = (name: string, help: string, pick: (s: { size: number; avail: number }) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['disk'],
      registers: [registry],
      async collect() {
        this.reset();
        for (const [disk, s] of (await figures()).space) this.set({ disk }, pick(s));
      },
    });
  space('oyster_disk_size_bytes', 'Size of the filesystem holding each disk', (s) => s.size);
  space('oyster_disk_avail_bytes', 'Space of the filesystem holding each disk that the node may still use (statfs f_bavail)', (s) => s.avail);
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
  const disks: DiskFigures[] = [];
  const aliens = new Map<string, number>();
  for (const c of [...store.disks, store.alien]) {
    if (!c.isReady) continue;
    const d: DiskFigures = { disk: c.name, alien: c.alien, blobs: 0, records: 0, liveKeys: 0, partitions: 0, indexMemory: 0, filterMemory: 0, usedBytes: 0, corruptedBlobs: 0 };
    disks.push(d);
    const vdisks = c.alien ? c.vdisks.aliens() : c.vdisks.all().map((vdisk) => ({ owner: '', vdisk }));
    for (const { owner, vdisk } of vdisks) {
      for (const p of vdisk.partitions.all) {
        const st = await p.engine.stats().catch(() => null);
        if (!st) continue;
        d.blobs += st.blobs;
        d.records += st.records;
        // Each partition's share of its vdisk's live keys: the sum is the vdisk's.
        d.liveKeys += st.liveKeys;
        d.partitions++;
        d.indexMemory += st.indexMemory;
        d.filterMemory += st.filterMemory;
        d.usedBytes += st.diskBytes;
        d.corruptedBlobs += await quarantined(p.dir);
        if (c.alien) aliens.set(owner, (aliens.get(owner) ?? 0) + st.records);
      }
    }
  }
  const space = new Map<string, { size: number; avail: number }>();
  for (const c of store.disks) {
    const s = await fs.promises.statfs(c.options.diskPath).catch(() => null);
    if (s) space.set(c.name, { size: s.blocks * s.bsize, avail: s.bavail * s.bsize });
  }
  return { disks, aliens, space };
}

/** Blob files in a partition's quarantine (none: no directory). */
async function quarantined(partitionDir: string): Promise<number> {
  const names = await fs.promises.readdir(path.join(partitionDir, QUARANTINE)).catch(() => []);
  return names.filter((n) => /\.blob(\.\d+)?$/.test(n)).length;
}
