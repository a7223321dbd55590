// PartitionList: the partitions of one vdisk directory that are attached,
// newest first, with their engines read as one set — and everything that
// changes which are attached: opening what is found, creating the partition
// a write needs, an operator's attach, detach and drop, the hand-off's seal.
// Vdisk runs data operations over it and admits administration
// (Vdisk.admin) only while it runs.
import fs from 'node:fs';
import path from 'node:path';
import { Logger, silentLogger } from '../logging/logger';
import { errors, OysterError } from '../model/errors';
import { MAX_NODE_ID, Version } from '../model/version';
import { EngineOptions, EngineSet } from './engine';
import { newestFirst, parsePartitionName, Partition, partitionDirName, partitionDirs, partitionStart } from './partition';

export interface PartitionListOptions {
  /** The vdisk directory holding the partition directories. */
  dir: string;
  /** The vdisk's id. */
  id: number;
  /** Hash part of the names of partitions this node creates. */
  hash: string;
  /** bob's blob_file_name_prefix; a partition's blobs are "<prefix>_<partition suffix>.<n>.blob". */
  blobPrefix: string;
  periodSeconds: number;
  /** Normal partitions start on period boundaries; alien ones at the first record's timestamp. */
  roundStarts: boolean;
  engine: EngineOptions;
  /** Attempts and delay for opening a partition (pearl.fail_retry_count / fail_retry_timeout). */
  openAttempts: number;
  openRetryDelayMs: number;
  /** Idle time after which the active blob of an outdated partition is closed. */
  idleCloseMs: number;
  log?: Logger;
  /** Called with the number of damaged records recovery found in a partition opened. */
  corrupt?: (records: number) => void;
}

export interface PartitionInfo {
  name: string;
  start: number;
  recordsCount: number;
  /** Bytes of blob and index files. */
  diskBytes: number;
  /** What compaction would give back, as last counted (compactor.ts). */
  reclaimableBytes: number;
  reclaimableRecords: number;
}

export interface ClosedFiles {
  partition: string;
  files: Array<{ name: string; size: number }>;
}

export class PartitionList {
  private attached: Partition[] = [];
  private set = new EngineSet([]);
  private creating = new Map<string, Promise<Partition>>();
  // Directories being removed (drop, dropSealed): their names are not reused meanwhile.
  private removing = new Set<string>();

  constructor(
    private readonly o: PartitionListOptions,
    /** Sees an upper bound of the versions of every partition opened. */
    private readonly opened: (newest: Version) => void,
  ) {}

  /** The attached partitions, newest first; ties of equal start in directory name order. */
  get all(): readonly Partition[] {
    return this.attached;
  }

  /** Their engines in the same order, read as one. */
  get engines(): EngineSet {
    return this.set;
  }

  /** Attaches every partition directory found (none may be attached). On failure none is. */
  async openAll(): Promise<void> {
    const opened: Partition[] = [];
    try {
      for (const name of await partitionDirs(this.o.dir)) opened.push(await this.open(name));
    } catch (err) {
      await closeEach(opened);
      throw err;
    }
    this.replace(opened);
  }

  /** Detaches every partition; returns the errors of those that did not close cleanly. */
  closeAll(): Promise<Error[]> {
    return this.release(this.attached);
  }

  /** The open partition a write of `timestamp` goes to, if there is one. */
  writableFor(timestamp: number): Partition | undefined {
    return this.attached.find((p) => !p.sealed && p.contains(timestamp));
  }

  /** The partition a write of `timestamp` goes to, opened (or created) if needed. */
  async partitionFor(timestamp: number): Promise<Partition> {
    const existing = this.writableFor(timestamp);
    if (existing) return existing;
    const start = this.o.roundStarts ? partitionStart(timestamp, this.o.periodSeconds) : timestamp;
    // A sealed partition may still hold the usual name: number the new one.
    let name = partitionDirName(start, this.o.hash);
    // So may one whose directory is being removed: its files must not be the new partition's.
    const taken = (n: string) => this.attached.some((p) => p.dirName === n) || this.removing.has(n);
    for (let n = 2; taken(name); n++) name = partitionDirName(start, `${this.o.hash}-${n}`);
    // Concurrent writes into a new partition open it once.
    return this.creating.get(name) ?? this.attachOne(name);
  }

  /** The attached partitions with their record counts. */
  info(): Promise<PartitionInfo[]> {
    return Promise.all(
      this.attached.map(async (p) => {
        const st = await p.engine.stats();
        return {
          name: p.dirName,
          start: p.start,
          recordsCount: st.records,
          diskBytes: st.diskBytes,
          reclaimableBytes: st.garbageBytes + st.deadTombstoneBytes,
          reclaimableRecords: st.garbageRecords + st.deadTombstones,
        };
      }),
    );
  }

  async recordsCount(): Promise<number> {
    return (await this.info()).reduce((n, p) => n + p.recordsCount, 0);
  }

  /**
   * The closed files of the attached partitions (Partition.closedFileNames)
   * with their sizes: what a refill copies whole. Active blobs and blobs
   * whose index is still being built are left out; their records travel key by key.
   */
  async closedFiles(): Promise<ClosedFiles[]> {
    const out: ClosedFiles[] = [];
    for (const p of this.attached) {
      const files: ClosedFiles['files'] = [];
      for (const name of await p.closedFileNames(this.blobFilePrefix(p.dirName))) {
        files.push({ name, size: (await fs.promises.stat(path.join(p.dir, name))).size });
      }
      if (files.length > 0) out.push({ partition: p.dirName, files });
    }
    return out;
  }

  /** Whether closedFiles() lists `name` in the attached partition `partition`: only its directory is read. */
  async isClosedFile(partition: string, name: string): Promise<boolean> {
    const p = this.attached.find((x) => x.dirName === partition);
    return p !== undefined && (await p.closedFileNames(this.blobFilePrefix(p.dirName))).includes(name);
  }

  /** The names of the blob and index files of partition `dirName` start with this (and a dot). */
  blobFilePrefix(dirName: string): string {
    return `${this.o.blobPrefix}_${parsePartitionName(dirName)?.suffix ?? ''}`;
  }

  /** Attaches the detached partition directories that start at `start`; returns their names. */
  async attach(start: number): Promise<string[]> {
    if (this.attached.some((p) => p.start === start)) {
      throw errors.conflict(`partition with timestamp ${start} is already attached to vdisk ${this.o.id}`);
    }
    const names = (await partitionDirs(this.o.dir)).filter((n) => parsePartitionName(n)?.start === start && !this.removing.has(n));
    if (names.length === 0) throw this.notFound(start);
    // Attached meanwhile, or being created by a write.
    if (this.attached.some((p) => p.start === start) || names.some((n) => this.creating.has(n))) {
      throw errors.conflict(`partition with timestamp ${start} is already attached to vdisk ${this.o.id}`);
    }
    return this.attachNames(names);
  }

  /**
   * Attaches every partition directory on disk that is not attached (after
   * detachAll: the alien hand-off takes back what an operator left in
   * place). Returns the names attached.
   */
  async attachAll(): Promise<string[]> {
    const names = await partitionDirs(this.o.dir);
    // Decided after the listing: a partition created meanwhile is not opened twice.
    return this.attachNames(names.filter((n) => !this.attached.some((p) => p.dirName === n) && !this.creating.has(n) && !this.removing.has(n)));
  }

  /** Detaches (closes) the partitions that start at `start`; the current one cannot be detached. */
  async detach(start: number, nowSeconds: number): Promise<Partition[]> {
    const matching = this.attached.filter((p) => p.start === start);
    if (matching.length === 0) throw this.notFound(start);
    if (matching.some((p) => p.isCurrent(nowSeconds))) {
      throw errors.conflict(`partition with timestamp ${start} on vdisk ${this.o.id} is active and cannot be detached`);
    }
    throwFirst(await this.release(matching));
    return matching;
  }

  /**
   * Closes every partition but keeps the vdisk running: files can be copied
   * away (bob-tools' alien recovery); a later write reopens its partition.
   */
  async detachAll(): Promise<void> {
    throwFirst(await this.release(this.attached));
  }

  /**
   * Detaches the partitions starting at `start` and removes their
   * directories, detached ones included; returns the removed names.
   */
  async drop(start: number, nowSeconds: number): Promise<string[]> {
    const attached = this.attached.filter((p) => p.start === start);
    if (attached.some((p) => p.isCurrent(nowSeconds))) {
      throw errors.conflict(`partition with timestamp ${start} on vdisk ${this.o.id} is active and cannot be deleted`);
    }
    const names = (await partitionDirs(this.o.dir)).filter((n) => parsePartitionName(n)?.start === start);
    if (names.length === 0) throw this.notFound(start);
    await this.remove(names, attached);
    return names;
  }

  /**
   * Seals a partition for hand-over: later writes of its period go to a new
   * partition; reads still see it. Resolves once its writes in flight are done.
   */
  seal(partition: Partition): Promise<void> {
    return partition.seal();
  }

  /** Removes a sealed partition whose records were delivered elsewhere. */
  async dropSealed(partition: Partition): Promise<void> {
    if (!partition.sealed || !this.attached.includes(partition)) return;
    await this.remove([partition.dirName], [partition]);
  }

  /** Closes the active blobs of partitions whose period is over and that were not written recently. */
  async closeOutdatedActiveBlobs(nowMs: number, idleMs = this.o.idleCloseMs): Promise<number> {
    let closed = 0;
    for (const p of this.attached) {
      if (p.end > Math.floor(nowMs / 1000) || nowMs - p.lastWrite < idleMs) continue;
      if ((await p.engine.stats()).activeBlobId === null) continue;
      await p.engine.closeActiveBlob();
      closed++;
    }
    return closed;
  }

  // --------------------------------------------------------------- helpers

  private replace(partitions: Partition[]): void {
    this.attached = newestFirst(partitions);
    this.set = new EngineSet(this.attached.map((p) => p.engine));
  }

  private notFound(start: number): OysterError {
    return errors.notFound(`partition with timestamp ${start} not found on vdisk ${this.o.id}`);
  }

  private async attachNames(names: string[]): Promise<string[]> {
    await Promise.all(names.map((n) => this.attachOne(n)));
    return names;
  }

  /**
   * Opens partition directory `name` and attaches it. Until it is attached
   * the opening stands in `creating`, so that no other path (a write's new
   * partition, attachAll) opens the same directory a second time: two
   * engines on one directory would lose writes when one is dropped.
   */
  private attachOne(name: string): Promise<Partition> {
    const opening = (async () => {
      const p = await this.open(name);
      this.replace([...this.attached, p]);
      return p;
    })().finally(() => this.creating.delete(name));
    this.creating.set(name, opening);
    return opening;
  }

  /**
   * Detaches and closes `partitions` and removes the directories `names`.
   * The names stay taken until the directories are gone: a write of their
   * period meanwhile gets a partition of its own, whose files the removal
   * cannot take with it.
   */
  private async remove(names: string[], partitions: readonly Partition[]): Promise<void> {
    for (const n of names) this.removing.add(n);
    try {
      throwFirst(await this.release(partitions));
      for (const n of names) await fs.promises.rm(path.join(this.o.dir, n), { recursive: true, force: true });
    } finally {
      for (const n of names) this.removing.delete(n);
    }
  }

  /** Detaches and closes `partitions`; returns the errors of those that did not close cleanly. */
  private release(partitions: readonly Partition[]): Promise<Error[]> {
    const gone = [...partitions];
    this.replace(this.attached.filter((p) => !gone.includes(p)));
    return closeEach(gone);
  }

  private async open(name: string): Promise<Partition> {
    const o = this.o;
    const p = await Partition.open(o.dir, name, o.periodSeconds, { ...o.engine, blobFilePrefix: this.blobFilePrefix(name) }, o.openAttempts, o.openRetryDelayMs);
    this.reportRecovery(p);
    // No record of the partition is newer than its newest second with its
    // largest tick (ticks grow within a second).
    const st = await p.engine.stats();
    this.opened({ timestamp: st.maxTimestamp, tick: st.maxTick, node: MAX_NODE_ID });
    return p;
  }

  // What recovery found and repaired when a partition opened is worth an
  // operator's attention: torn tails after a crash, damaged records, rebuilt indexes.
  private reportRecovery(p: Partition): void {
    const r = p.engine.recovery;
    if (r.corruptRecords > 0) this.o.corrupt?.(r.corruptRecords);
    if (r.events.length === 0) return;
    const damaged = r.corruptRecords > 0 || r.skippedBytes > 0 || r.blobsQuarantined > 0;
    const fields = { vdisk: this.o.id, partition: p.dir, events: r.events };
    const log = this.o.log ?? silentLogger;
    if (damaged) log.error(fields, 'partition opened with damaged data');
    else log.warn(fields, 'partition repaired on open');
  }
}

async function closeEach(partitions: Partition[]): Promise<Error[]> {
  const results = await Promise.allSettled(partitions.map((p) => p.close()));
  return results
    .filter((r): r is PromiseRejectedResult => r.status === 'rejected')
    .map((r) => (r.reason instanceof Error ? r.reason : new Error(String(r.reason))));
}

function throwFirst(errs: Error[]): void {
  if (errs.length > 0) throw errs[0] instanceof OysterError ? errs[0] : errors.failed(errs[0].message);
}
