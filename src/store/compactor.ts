// Compactor: gives back the space of overwritten and deleted values on one
// disk while it serves. Writes keep each vdisk's count of garbage up to
// date (a count from the index files starts it when partitions open, and
// again when an operator asks); every `interval` the compactor compacts the
// closed blobs whose reclaimable share reaches
// `garbage_ratio` (with compaction disabled, only when an operator asks),
// those with the most to reclaim first, one blob at a time,
// its disk I/O paced by `rate` (native/engine/compaction.h does the work:
// reads and writes go on, a crash at any point loses nothing). A blob is
// compacted only while the disk has room for what it keeps: compaction
// never makes a full disk fuller. Its Scrubber checks the disk's records
// under the same I/O budget.
import { CompactionConfig } from '../config/node-config';
import { Logger } from '../logging/logger';
import { errors } from '../model/errors';
import { BlobStats, CompactionStats, EngineErrorCode, EngineSet, isEngineError, TombstonePolicy } from './engine';
import { Disk } from './disk';
import { freeSpace, mib } from './free-space';
import { Partition } from './partition';
import { Repair, ScrubObserver, Scrubber, ScrubState } from './scrubber';
import { PASSED_RECORD_COST, TokenBucket } from './token-bucket';
import { Vdisk } from './vdisk';

// Bytes one step of a compaction reads and writes: small enough that
// stopping waits for little, large enough that a step's cost is the I/O.
const STEP_BYTES = 1 << 20;
// An index entry's bytes at most (key, version, offset, size, flags), and
// what its bloom filter and fences add.
const INDEX_BYTES_PER_RECORD = 96;
// A blob whose compaction failed (an I/O error, a blob cut short) is tried
// again after this long.
const RETRY_FAILED_MS = 3600_000;

/** One compaction's outcome, for metrics. */
export interface CompactedBlob {
  vdisk: number;
  partition: string;
  stats: CompactionStats;
  ms: number;
}

export interface CompactorObserver {
  compacted(blob: CompactedBlob): void;
  /** A blob was left as it is: no room on the disk ('no_space'), or the compaction failed ('error'). */
  skipped(reason: 'no_space' | 'error'): void;
  /** Bytes read and written by the compaction under way. */
  io(bytes: number): void;
  /** Reclaimable bytes of a vdisk as last counted. */
  reclaimable(vdisk: number, bytes: number, records: number): void;
}

export interface CompactorOptions {
  disk: Disk;
  config: CompactionConfig;
  log: Logger;
  /** Whether alien copies of the vdisk's records may be held on this node: its tombstones then stay. */
  aliensOf: (vdisk: number) => boolean;
  observer?: CompactorObserver;
  /** How the scrub repairs a damaged record (from another replica). */
  repair: Repair;
  scrubObserver?: ScrubObserver;
}

/** What POST and GET /vdisks/{id}/compact report. */
export interface CompactionState {
  disk: string;
  running: boolean;
  /** The blob being compacted now. */
  current?: { vdisk: number; partition: string; blob: number; visited: number; entries: number; bytesRead: number; bytesWritten: number };
  blobsCompacted: number;
  bytesReclaimed: number;
  /** End of the last pass over the disk (ms since the epoch), and what it left for lack of room or by error. */
  lastPass?: { finished: number; compacted: number; skipped: number };
  scrub: ScrubState;
}

interface Candidate {
  vdisk: Vdisk;
  partition: Partition;
  blob: BlobStats;
  reclaimable: number;
}

export class Compactor {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopping = false;
  private readonly tokens: TokenBucket;
  private readonly state: Omit<CompactionState, 'scrub'>;
  readonly scrubber: Scrubber;
  // Vdisks an operator asked to compact now, whatever their garbage ratio.
  private readonly asked = new Set<number>();
  // When the compaction of a blob ("<partition dir>/<blob id>") last failed.
  private readonly failedAt = new Map<string, number>();
  // The partition sets whose garbage was counted from their index files.
  private readonly counted = new WeakSet<EngineSet>();

  constructor(private readonly o: CompactorOptions) {
    // Bursts of a tenth of a second: a compaction shorter than a second is paced too.
    this.tokens = new TokenBucket(o.config.rate, Math.max(2 * STEP_BYTES, o.config.rate / 10));
    this.state = { disk: o.disk.name, running: false, blobsCompacted: 0, bytesReclaimed: 0 };
    this.scrubber = new Scrubber({ disk: o.disk, interval: o.config.scrubInterval, tokens: this.tokens, repair: o.repair, log: o.log, observer: o.scrubObserver });
  }

  async start(): Promise<void> {
    await this.scrubber.start();
    if (this.timer) return;
    this.stopping = false;
    // Disabled, it still counts the garbage of partitions opened from disk
    // (once per set; writes keep the counts after): the metrics of
    // reclaimable bytes and live keys rest on those counts.
    this.timer = setInterval(() => void this.trigger(), this.o.config.interval);
    this.timer.unref();
    // The first count soon after the disk opens, so that metrics show garbage from the start.
    setTimeout(() => void (this.timer && this.trigger()), Math.min(5000, this.o.config.interval)).unref();
  }

  /** Stops after the step under way; the blob being compacted stays as it was. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await Promise.all([this.running, this.scrubber.stop()]);
  }

  get disk(): Disk {
    return this.o.disk;
  }

  get status(): CompactionState {
    return { ...this.state, current: this.state.current && { ...this.state.current }, scrub: this.scrubber.status };
  }

  /**
   * Compacts every closed blob of the vdisk with anything to reclaim, now
   * (after the pass under way, if any). Resolves when that pass ends.
   */
  async compactNow(vdisk: number): Promise<CompactionState> {
    if (!this.o.disk.vdisks.all().some((v) => v.id === vdisk && v.isOpen)) {
      throw errors.notFound(`vdisk ${vdisk} is not served by disk ${this.o.disk.name}`);
    }
    this.asked.add(vdisk);
    await this.trigger();
    return this.status;
  }

  /** Starts a pass unless one runs; resolves when the pass (this one or the running one, then this) ends. */
  trigger(): Promise<void> {
    if (this.running) return this.running.then(() => (this.running ? this.running : this.trigger()));
    this.running = this.pass()
      .catch((err: Error) => this.o.log.warn({ disk: this.o.disk.name, err: err.message }, 'compaction pass failed'))
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }

  private async pass(): Promise<void> {
    if (!this.o.disk.isReady) return;
    this.state.running = true;
    let compacted = 0;
    let skipped = 0;
    try {
      for (const vdisk of this.o.disk.vdisks.all()) {
        if (this.stopping) break;
        if (!vdisk.isOpen || !vdisk.hasPartitions) continue;
        const asked = this.asked.delete(vdisk.id);
        const policy = this.policy(vdisk);
        // Writes keep the counts up to date; a count from the index files
        // starts them when partitions open, and when an operator asks.
        const set = vdisk.partitions.engines;
        if (asked || !this.counted.has(set)) {
          await set.countGarbage(policy);
          this.counted.add(set);
        }
        if (!asked && !this.o.config.enabled) continue;
        for (const c of await this.candidates(vdisk, asked ? 0 : this.o.config.garbageRatio)) {
          if (this.stopping) break;
          const id = `${c.partition.dir}/${c.blob.id}`;
          // A blob whose compaction failed waits an hour (unless asked for),
          // rather than fail and warn at every interval.
          if (!asked && (this.failedAt.get(id) ?? 0) > Date.now() - RETRY_FAILED_MS) continue;
          const outcome = await this.compact(c, policy);
          if (outcome === 'error') this.failedAt.set(id, Date.now());
          else this.failedAt.delete(id);
          if (outcome === 'compacted') compacted++;
          else if (outcome !== 'gone') skipped++;
        }
      }
    } finally {
      this.state.running = false;
      this.state.current = undefined;
      this.state.lastPass = { finished: Date.now(), compacted, skipped };
    }
  }

  private policy(vdisk: Vdisk): TombstonePolicy {
    // Alien copies are handed over with their tombstones: an owner that
    // never saw the delete would keep the value otherwise.
    const drop = !this.o.disk.alien && !this.o.aliensOf(vdisk.id);
    return { graceSeconds: Math.floor(this.o.config.tombstoneGrace / 1000), drop };
  }

  private async candidates(vdisk: Vdisk, ratio: number): Promise<Candidate[]> {
    const out: Candidate[] = [];
    let bytes = 0;
    let records = 0;
    for (const partition of vdisk.partitions.all) {
      const stats = await partition.engine.stats().catch(() => null);
      bytes += (stats?.garbageBytes ?? 0) + (stats?.deadTombstoneBytes ?? 0);
      records += (stats?.garbageRecords ?? 0) + (stats?.deadTombstones ?? 0);
      for (const blob of stats?.blobStats ?? []) {
        const reclaimable = blob.garbageBytes + blob.deadTombstoneBytes;
        if (blob.closed && reclaimable > 0 && reclaimable >= ratio * blob.size) out.push({ vdisk, partition, blob, reclaimable });
      }
    }
    this.o.observer?.reclaimable(vdisk.id, bytes, records);
    return out.sort((a, b) => b.reclaimable - a.reclaimable);
  }

  private async compact(c: Candidate, policy: TombstonePolicy): Promise<'compacted' | 'no_space' | 'error' | 'gone'> {
    const { disk, log } = this.o;
    const where = { disk: disk.name, vdisk: c.vdisk.id, partition: c.partition.dirName, blob: c.blob.id };
    // What the new blob and its index take at most; min_free_space stays
    // free beside them for the writes that go on.
    const needed = c.blob.size - c.reclaimable + c.blob.records * INDEX_BYTES_PER_RECORD;
    const space = await freeSpace(c.partition.dir, disk.options.minFreeSpace);
    if (space !== null && space.free - needed < space.min) {
      log.warn({ ...where, needed, free: space.free, min_free_space: space.min },
        `compaction of blob ${c.blob.id} refused: it needs ${mib(needed)} and the disk has ${mib(space.free)} free (${mib(space.min)} kept free)`);
      this.o.observer?.skipped('no_space');
      return 'no_space';
    }
    const started = Date.now();
    let compaction;
    try {
      compaction = await c.vdisk.partitions.engines.beginCompaction(c.partition.engine, c.blob.id, policy);
    } catch (err) {
      // Gone meanwhile (its partition was dropped, the disk closed), or compacted by a request.
      if (isEngineError(err, EngineErrorCode.notFound) || isEngineError(err, EngineErrorCode.busy) || isEngineError(err, EngineErrorCode.closed)) return 'gone';
      log.warn({ ...where, err: (err as Error).message }, `compaction of blob ${c.blob.id} could not start`);
      this.o.observer?.skipped('error');
      return 'error';
    }
    try {
      let last = { bytes: 0, dropped: 0 };
      for (;;) {
        if (this.stopping) return 'gone';
        const { done, stats } = await compaction.step(STEP_BYTES);
        const bytes = stats.bytesRead + stats.bytesWritten;
        this.o.observer?.io(bytes - last.bytes);
        // Paid after the step, for what it did: the budget holds however far a step goes.
        await this.tokens.take(bytes - last.bytes + (stats.droppedRecords - last.dropped) * PASSED_RECORD_COST);
        last = { bytes, dropped: stats.droppedRecords };
        this.state.current = { vdisk: c.vdisk.id, partition: c.partition.dirName, blob: c.blob.id, visited: stats.visited, entries: stats.entries, bytesRead: stats.bytesRead, bytesWritten: stats.bytesWritten };
        if (done) break;
      }
      const stats = await compaction.install();
      const ms = Date.now() - started;
      const reclaimed = stats.sourceSize - stats.newSize;
      this.state.blobsCompacted++;
      this.state.bytesReclaimed += reclaimed;
      this.o.observer?.compacted({ vdisk: c.vdisk.id, partition: c.partition.dirName, stats, ms });
      log.info({ ...where, before: stats.sourceSize, after: stats.newSize, kept: stats.keptRecords, dropped: stats.droppedRecords, tombstones_dropped: stats.droppedTombstones, damaged_kept: stats.damagedKept, ms },
        `compacted blob ${c.blob.id}: ${mib(stats.sourceSize)} -> ${mib(stats.newSize)}`);
      if (stats.headersRebuilt > 0) log.warn({ ...where, records: stats.headersRebuilt }, 'compaction wrote damaged record headers anew from the index');
      if (stats.damagedKept > 0) log.warn({ ...where, records: stats.damagedKept }, 'compaction copied records that fail their checksums as they are; scrub repairs them from a replica');
      return 'compacted';
    } catch (err) {
      if (isEngineError(err, EngineErrorCode.closed)) return 'gone';
      log.warn({ ...where, err: (err as Error).message }, `compaction of blob ${c.blob.id} failed; the blob stays as it was (tried again in an hour)`);
      this.o.observer?.skipped('error');
      return 'error';
    } finally {
      this.state.current = undefined;
      await compaction.close().catch(() => undefined);
    }
  }
}
