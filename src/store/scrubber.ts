// Scrubber: every `scrub_interval`, checks the records of the closed blobs of
// one disk that reads return against their checksums (native/engine/scrub.h),
// as ZFS scrubs and Ceph deep-scrubs do: damage is found while a healthy
// replica still holds a copy, also in records no read looks at (a tombstone
// is answered from the index). Its disk I/O shares the disk's budget with
// compaction (`compaction.rate`). A damaged record is counted, logged once
// and handed to `repair`, which writes a healthy replica's copy here again
// at its version (the later of two equal versions wins: reads return the
// copy from then on); a repair that could not ask every replica is retried.
//
// Where a pass stands is kept in the disk's root (oyster-scrub.json,
// docs/FORMAT.md §0.2): a restarted node resumes its pass instead of
// starting over, and the next pass comes `scrub_interval` after the last
// one ended, across restarts.
import path from 'node:path';
import { Logger } from '../logging/logger';
import { formatVersion } from '../model/version';
import { Disk } from './disk';
import { EngineErrorCode, isEngineError, ScrubDamage } from './engine';
import { mib } from './free-space';
import { readJson, writeAtomically } from './json-file';
import { Partition } from './partition';
import { PASSED_RECORD_COST, TokenBucket } from './token-bucket';
import { Vdisk } from './vdisk';

export const SCRUB_STATE_FILE = 'oyster-scrub.json';
// Bytes one step reads: small enough that stopping waits for little.
const STEP_BYTES = 1 << 20;
// A repair that could not ask every replica is tried again this often (or
// every scrub_interval, if shorter), up to this many records at a time
// (beyond, the next pass finds them again).
const RETRY_MS = 30_000;
const MAX_PENDING = 10_000;
// The first pass of a disk never scrubbed waits this long after the start
// (or scrub_interval, if shorter): a node starting is busy enough.
const FIRST_PASS_DELAY_MS = 10 * 60_000;
// setTimeout's longest delay; a later pass is looked at again then.
const MAX_TIMER_MS = 86_400_000;

/** What became of a damaged record. */
export interface RepairResult {
  /**
   * repaired: a healthy copy (at least as new) was written here; unrepairable:
   * every replica answered and none holds the version (it is lost);
   * failed: a replica that might hold it could not be asked (tried again).
   */
  outcome: 'repaired' | 'unrepairable' | 'failed';
  /** Where the healthy copy came from, or why the repair failed. */
  detail: string;
}

/** Repairs a damaged record of `vdisk` (a replica or alien copies) on `disk`. */
export type Repair = (disk: Disk, vdisk: Vdisk, damage: ScrubDamage) => Promise<RepairResult>;

export interface ScrubObserver {
  /** Bytes read by the scrub under way. */
  read(bytes: number): void;
  damaged(records: number): void;
  repaired(outcome: RepairResult['outcome']): void;
  /** A pass over the disk ended (ms since the epoch): as it ends, and the last one the disk recorded when its state is read. */
  passed(finished: number): void;
}

export interface ScrubberOptions {
  disk: Disk;
  /** ms between the end of a pass and the start of the next; 0: no scrub. */
  interval: number;
  /** The disk's I/O budget, shared with its compactor. */
  tokens: TokenBucket;
  repair: Repair;
  log: Logger;
  observer?: ScrubObserver;
}

/** What GET /vdisks/{id}/compact reports of the disk's scrub. */
export interface ScrubState {
  running: boolean;
  /** The blob being checked now. */
  current?: { vdisk: number; partition: string; blob: number; visited: number; entries: number; bytesRead: number };
  /** The pass under way (resumed across restarts): when it started. */
  passStarted?: number;
  lastPass?: { started: number; finished: number };
  /** Of the passes since the node started. */
  damaged: number;
  repaired: number;
  unrepairable: number;
  /** Repairs waiting to be tried again. */
  pending: number;
}

/** oyster-scrub.json: the last pass and the one under way. */
interface StoredState {
  format: 1;
  last_pass: { started: number; finished: number } | null;
  /** The pass under way: when it started, and the last blob it finished ("<vdisk dir>\0<partition>\0<blob id>"). */
  pass: { started: number; done_through: BlobKey | null } | null;
}

/** A blob's place in the order of a pass: vdisk directory, partition directory, blob id. */
type BlobKey = [string, string, number];

const before = (a: BlobKey, b: BlobKey): boolean =>
  a[0] !== b[0] ? a[0] < b[0] : a[1] !== b[1] ? a[1] < b[1] : a[2] < b[2];

interface Pending {
  vdisk: Vdisk;
  damage: ScrubDamage;
}

export class Scrubber {
  private timer: NodeJS.Timeout | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private started = false;
  private stopping = false;
  private stored: StoredState = { format: 1, last_pass: null, pass: null };
  // What status adds to these it derives: the pass from `stored`, pending from `pending`.
  private readonly state: Omit<ScrubState, 'passStarted' | 'lastPass' | 'pending'> = { running: false, damaged: 0, repaired: 0, unrepairable: 0 };
  private readonly pending = new Map<string, Pending>();

  constructor(private readonly o: ScrubberOptions) {}

  private get file(): string {
    return path.join(this.o.disk.options.root, SCRUB_STATE_FILE);
  }

  /** Reads where the disk's scrub stands, and schedules the next pass. */
  async start(): Promise<void> {
    if (this.o.interval <= 0 || this.started) return;
    this.started = true;
    this.stopping = false;
    await this.reload();
  }

  /**
   * The disk came (back) into service: where its scrub stands is read again
   * from it — the disk may have been out of service when the node started,
   * or be another one now — and the next pass is scheduled from that.
   * (Before start(), start() reads it.)
   */
  async diskReady(): Promise<void> {
    if (!this.started || this.stopping) return;
    await this.running;
    await this.reload();
  }

  /** Stops after the step under way; the pass resumes where it was at the next start. */  /** Stops after the step under way; the pass resumes where it was at the next start. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.started = false;
    if (this.timer) clearTimeout(this.timer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.timer = this.retryTimer = null;
    await this.running;
  }

  get status(): ScrubState {
    return {
      ...this.state,
      current: this.state.current && { ...this.state.current },
      passStarted: this.stored.pass?.started,
      lastPass: this.stored.last_pass ?? undefined,
      pending: this.pending.size,
    };
  }

  /** A pass now, unless one runs; resolves when it (or the one running) ends. */
  runOnce(): Promise<void> {
    this.running ??= this.pass()
      .catch((err: Error) => this.o.log.warn({ disk: this.o.disk.name, err: err.message }, 'scrub pass failed; resumed later'))
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }

  // Forgets the state in hand, reads the disk's, schedules the next pass from it.
  private async reload(): Promise<void> {
    this.stored = { format: 1, last_pass: null, pass: null };
    await this.load();
    if (!this.stopping) this.schedule();
  }

  private async load(): Promise<void> {
    try {
      const v = (await readJson(this.file)) as Partial<StoredState> | null | undefined;
      if (v === undefined) return;
      if (v?.format !== 1) throw new Error(v === null ? 'not JSON' : `format ${String(v.format)}`);
      this.stored = { format: 1, last_pass: v.last_pass ?? null, pass: v.pass ?? null };
      if (this.stored.last_pass) this.o.observer?.passed(this.stored.last_pass.finished);
    } catch (err) {
      // A damaged state file costs one pass, nothing else.
      this.o.log.warn({ disk: this.o.disk.name, file: this.file, err: (err as Error).message }, 'scrub state unreadable; a new pass starts');
    }
  }

  private async save(): Promise<void> {
    await this.o.disk
      .write(() => writeAtomically(this.file, `${JSON.stringify(this.stored)}\n`))
      .catch((err: Error) => this.o.log.debug({ disk: this.o.disk.name, err: err.message }, 'scrub state not saved'));
  }

  /** The next pass: a pass under way resumes after `resumeMs`. */
  private schedule(resumeMs = 1000): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.stopping) return;
    const now = Date.now();
    const last = this.stored.last_pass?.finished;
    const due = this.stored.pass ? now + resumeMs : last !== undefined ? last + this.o.interval : now + Math.min(this.o.interval, FIRST_PASS_DELAY_MS);
    const delay = Math.max(1000, Math.min(due - now, MAX_TIMER_MS));
    this.timer = setTimeout(() => {
      this.timer = null;
      if (Date.now() < due) return this.schedule(resumeMs);
      // A pass left unfinished (the disk went out of service) is taken up again a minute later.
      void this.runOnce().finally(() => this.schedule(60_000));
    }, delay);
    this.timer.unref();
  }

  private async pass(): Promise<void> {
    const { disk, log } = this.o;
    if (!disk.isReady) return;
    const resumed = this.stored.pass !== null;
    this.stored.pass ??= { started: Date.now(), done_through: null };
    const from = this.stored.pass.done_through;
    this.state.running = true;
    const totals = { blobs: 0, bytes: 0, damaged: 0 };
    log.info({ disk: disk.name, resumed }, resumed ? `scrub of disk ${disk.name} resumed` : `scrub of disk ${disk.name} started`);
    try {
      for (const vdisk of [...disk.vdisks.all()].sort((a, b) => (a.dir < b.dir ? -1 : a.dir > b.dir ? 1 : 0))) {
        if (!vdisk.isOpen || !vdisk.hasPartitions) continue;
        for (const partition of [...vdisk.partitions.all].sort((a, b) => (a.dirName < b.dirName ? -1 : a.dirName > b.dirName ? 1 : 0))) {
          const stats = await partition.engine.stats().catch(() => null);
          const blobs = (stats?.blobStats ?? []).filter((b) => b.closed).map((b) => b.id).sort((a, b) => a - b);
          for (const blob of blobs) {
            if (this.stopping || !disk.isReady) return;
            const key: BlobKey = [vdisk.dir, partition.dirName, blob];
            if (from !== null && !before(from, key)) continue;
            const r = await this.scrubBlob(vdisk, partition, blob);
            totals.blobs++;
            totals.bytes += r.bytes;
            totals.damaged += r.damaged;
            this.stored.pass.done_through = key;
            await this.save();
          }
        }
      }
      const finished = Date.now();
      this.stored = { format: 1, last_pass: { started: this.stored.pass.started, finished }, pass: null };
      await this.save();
      this.o.observer?.passed(finished);
      log.info({ disk: disk.name, blobs: totals.blobs, bytes: totals.bytes, damaged: totals.damaged, seconds: (finished - this.stored.last_pass!.started) / 1000 },
        `scrub of disk ${disk.name} finished: ${totals.blobs} blobs, ${mib(totals.bytes)} checked, ${totals.damaged} damaged records`);
    } finally {
      this.state.running = false;
      this.state.current = undefined;
    }
  }

  /** Checks one blob to its end; returns what it read and found. */
  private async scrubBlob(vdisk: Vdisk, partition: Partition, blob: number): Promise<{ bytes: number; damaged: number }> {
    const { disk, log } = this.o;
    const where = { disk: disk.name, vdisk: vdisk.id, partition: partition.dirName, blob };
    let scrub;
    try {
      scrub = await vdisk.partitions.engines.beginScrub(partition.engine, blob);
    } catch (err) {
      // Gone meanwhile: its partition dropped, the blob compacted away, the disk closed.
      if (isEngineError(err, EngineErrorCode.notFound) || isEngineError(err, EngineErrorCode.closed)) return { bytes: 0, damaged: 0 };
      // A damaged index that could not be rebuilt: reads of the blob fail the same way.
      log.error({ ...where, err: (err as Error).message }, `scrub of blob ${blob} could not start`);
      return { bytes: 0, damaged: 0 };
    }
    let read = 0;
    let superseded = 0;
    let damaged = 0;
    try {
      for (;;) {
        if (this.stopping) break;
        const r = await scrub.step(STEP_BYTES);
        this.o.observer?.read(r.stats.bytesRead - read);
        // Paid after the step, for what it did (a superseded record passed as a compaction's dropped one).
        await this.o.tokens.take(r.stats.bytesRead - read + (r.stats.superseded - superseded) * PASSED_RECORD_COST);
        read = r.stats.bytesRead;
        superseded = r.stats.superseded;
        this.state.current = { vdisk: vdisk.id, partition: partition.dirName, blob, visited: r.stats.visited, entries: r.stats.entries, bytesRead: read };
        for (const d of r.damaged) {
          damaged++;
          await this.damaged(vdisk, partition, blob, d);
        }
        if (r.done) {
          if (r.stats.indexRepaired) log.warn(where, `scrub found the index of blob ${blob} damaged and rebuilt it from the blob`);
          break;
        }
      }
    } catch (err) {
      if (!isEngineError(err, EngineErrorCode.closed)) log.warn({ ...where, err: (err as Error).message }, `scrub of blob ${blob} stopped`);
    } finally {
      this.state.current = undefined;
      await scrub.close().catch(() => undefined);
    }
    return { bytes: read, damaged };
  }

  private async damaged(vdisk: Vdisk, partition: Partition, blob: number, damage: ScrubDamage): Promise<void> {
    // Found again while its repair waits to be retried: known already.
    if (this.pending.has(pendingId(vdisk, damage))) return;
    this.state.damaged++;
    this.o.observer?.damaged(1);
    const fields = {
      disk: this.o.disk.name,
      vdisk: vdisk.id,
      partition: partition.dirName,
      blob,
      offset: damage.offset,
      key: damage.key.toString('hex'),
      version: formatVersion(damage.version),
      tombstone: damage.tombstone,
      damage: damage.message,
    };
    const r = await this.repair(vdisk, damage);
    if (r.outcome === 'repaired') this.o.log.warn({ ...fields, source: r.detail }, `scrub: a record failed its checksum; repaired from ${r.detail}`);
    else if (r.outcome === 'unrepairable') this.o.log.error({ ...fields, reason: r.detail }, 'scrub: a record failed its checksum and no replica holds it: its value is lost');
    else {
      this.o.log.warn({ ...fields, reason: r.detail }, 'scrub: a record failed its checksum; repair failed, tried again');
      this.retryLater(vdisk, damage);
    }
  }

  private async repair(vdisk: Vdisk, damage: ScrubDamage): Promise<RepairResult> {
    const r = await this.o.repair(this.o.disk, vdisk, damage).catch((err: Error): RepairResult => ({ outcome: 'failed', detail: err.message }));
    this.o.observer?.repaired(r.outcome);
    if (r.outcome === 'repaired') this.state.repaired++;
    if (r.outcome === 'unrepairable') this.state.unrepairable++;
    return r;
  }

  private retryLater(vdisk: Vdisk, damage: ScrubDamage): void {
    if (this.pending.size >= MAX_PENDING) return;
    this.pending.set(pendingId(vdisk, damage), { vdisk, damage });
    if (this.retryTimer || this.stopping) return;
    this.retryTimer = setTimeout(() => void this.retry(), Math.min(RETRY_MS, this.o.interval));
    this.retryTimer.unref();
  }

  private async retry(): Promise<void> {
    this.retryTimer = null;
    for (const [id, p] of [...this.pending]) {
      if (this.stopping) return;
      // A vdisk closed meanwhile (its disk failed, the node stops) is found again by the next pass.
      if (!p.vdisk.isOpen) {
        this.pending.delete(id);
        continue;
      }
      const r = await this.repair(p.vdisk, p.damage);
      if (r.outcome === 'failed') continue;
      this.pending.delete(id);
      const fields = { disk: this.o.disk.name, vdisk: p.vdisk.id, key: p.damage.key.toString('hex'), version: formatVersion(p.damage.version) };
      if (r.outcome === 'repaired') this.o.log.info({ ...fields, source: r.detail }, `scrub: damaged record repaired from ${r.detail}`);
      else this.o.log.error({ ...fields, reason: r.detail }, 'scrub: no replica holds the damaged record: its value is lost');
    }
    if (this.pending.size > 0 && !this.stopping) {
      this.retryTimer = setTimeout(() => void this.retry(), Math.min(RETRY_MS, this.o.interval));
      this.retryTimer.unref();
    }
  }
}

const pendingId = (vdisk: Vdisk, damage: ScrubDamage): string => `${vdisk.dir}\0${damage.key.toString('hex')}`;
