// Group: the partitions of one vdisk in one directory — a vdisk replica on a
// local disk, or the alien copies held for one owner node. Reads resolve the
// newest version across all partitions (the engine's EngineSet applies the
// order of versions); writes go to the partition of their bob timestamp.
import fs from 'node:fs';
import path from 'node:path';
import { EngineOptions, EngineSet, isEngineError, EngineErrorCode, SnapshotEntry } from '../engine/engine';
import { compareRecords, compareVersions, KeyState, MAX_NODE_ID, StoredRecord, Version } from '../model/version';
import { Logger, silentLogger } from '../logging/logger';
import { VersionClock } from '../model/clock';
import { errors, isOysterError, OysterError } from './errors';
import { Holder } from './holder';
import { parsePartitionName, partitionDirName, partitionStart } from './partition';

/** What a group reports about its engines (metrics hang on it). */
type DataOperation = 'put' | 'get' | 'exist' | 'delete';

export interface StorageObserver {
  engine(operation: DataOperation, outcome: 'ok' | 'not_found' | 'error', bytes: number): void;
  corrupt(records: number): void;
}

export interface GroupOptions {
  /** The vdisk directory holding the partition directories. */
  dir: string;
  vdisk: number;
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
  observer?: StorageObserver;
  /** Sees the newest version of every partition opened: after a restart this node stamps later than anything stored. */
  clock?: VersionClock;
  log?: Logger;
}

export interface PartitionInfo {
  name: string;
  start: number;
  recordsCount: number;
}

type State = 'stopped' | 'running' | 'remounting';

export class Group {
  // Newest partition first; ties of equal start keep directory name order.
  private _holders: Holder[] = [];
  // Their engines in the same order, as every read passes them to the addon.
  private engines = new EngineSet([]);
  private state: State = 'stopped';
  private _newestPossible: Version = { timestamp: 0, tick: 0, node: 0 };
  private inflight = 0;
  private drained: (() => void) | null = null;
  private creating = new Map<string, Promise<Holder>>();

  constructor(readonly options: GroupOptions) {}

  private get holders(): Holder[] {
    return this._holders;
  }

  private set holders(holders: Holder[]) {
    this._holders = holders;
    this.engines = new EngineSet(holders.map((h) => h.engine));
  }

  get vdisk(): number {
    return this.options.vdisk;
  }

  get dir(): string {
    return this.options.dir;
  }

  /** Opened every partition it found (running or remounting): newestPossible covers all its records. */
  get isOpen(): boolean {
    return this.state !== 'stopped';
  }

  /**
   * An upper bound of the versions of the records in this group: what its
   * partitions held when they opened and every write acknowledged since.
   * While the group cannot be read, a record newer than this found elsewhere
   * (an alien copy written meanwhile) is known to be the newest.
   */
  get newestPossible(): Version {
    return this._newestPossible;
  }

  private raise(v: Version): void {
    if (compareVersions(v, this._newestPossible) > 0) this._newestPossible = v;
  }

  /** Whether any partition is attached (a group whose partitions were all handed over holds none). */
  get hasPartitions(): boolean {
    return this._holders.length > 0;
  }

  /** Opens every partition directory found in the vdisk directory (creating the directory). */
  async run(): Promise<void> {
    await fs.promises.mkdir(this.options.dir, { recursive: true });
    this.holders = await this.openAll();
    this.state = 'running';
  }

  /**
   * Closes every partition; pending operations finish first. Returns the
   * errors of partitions that could not be closed cleanly (their files may be
   * gone with a failed disk; the next open recovers them).
   */
  async stop(): Promise<Error[]> {
    if (this.state === 'stopped') return [];
    this.state = 'stopped';
    await this.drain();
    const holders = this.holders;
    this.holders = [];
    return this.closeAll(holders);
  }

  /** Closes and reopens every partition, picking up directories copied in. 503 meanwhile. */
  async remount(): Promise<void> {
    if (this.state !== 'running') throw errors.unavailable(`vdisk ${this.vdisk} is not running`);
    this.state = 'remounting';
    try {
      await this.drain();
      const old = this.holders;
      this.holders = [];
      await this.closeAll(old);
      this.holders = await this.openAll();
    } finally {
      this.state = 'running';
    }
  }

  // ------------------------------------------------------------------ data

  // The data operations run in one async frame each (enter/failure/leave
  // rather than nested guard closures): they are the hot path of every request.

  async put(key: Buffer, version: Version, value: Buffer): Promise<void> {
    this.enter();
    try {
      const h = this.openHolderOf(version.timestamp) ?? (await this.holderFor(version.timestamp));
      await h.write((e) => e.put(key, version, value));
      this.raise(version);
      this.options.observer?.engine('put', 'ok', value.length);
    } catch (err) {
      throw this.failure('put', err);
    } finally {
      this.leave();
    }
  }

  /** The newest record of key across all partitions (tombstones included). */
  async get(key: Buffer): Promise<StoredRecord | null> {
    // Most reads are answered from the page cache at once; the others wait on the engine threads.
    const now = this.readNow(key);
    if (now !== undefined) return now;
    this.enter();
    try {
      const r = await this.engines.getNewest(key);
      this.options.observer?.engine('get', r === null ? 'not_found' : 'ok', r?.kind === 'found' ? r.value.length : 0);
      return r;
    } catch (err) {
      throw this.failure('get', err);
    } finally {
      this.leave();
    }
  }

  /**
   * get() answered at once when memory and the page cache hold the answer;
   * undefined otherwise, and for any failure: get() then waits for the
   * engine threads, which report it.
   */
  private readNow(key: Buffer): StoredRecord | null | undefined {
    if (this.state !== 'running') return undefined;
    if (this.engines.size === 0) return null;
    let r: StoredRecord | null | undefined;
    try {
      r = this.engines.readNewestNow(key);
    } catch {
      return undefined;
    }
    if (r !== undefined) this.options.observer?.engine('get', r === null ? 'not_found' : 'ok', r?.kind === 'found' ? r.value.length : 0);
    return r;
  }

  async exists(keys: Buffer[]): Promise<Array<KeyState | null>> {
    this.enter();
    try {
      if (this.engines.size === 0) return keys.map(() => null);
      // One key (a coordinator asking for a version) is mostly answered from
      // memory at once; the others, and that one when it would wait, on the engine threads.
      const now = keys.length === 1 ? this.lookupNow(keys[0]) : undefined;
      const r = now !== undefined ? [now] : await this.engines.lookupNewest(keys);
      this.options.observer?.engine('exist', 'ok', 0);
      return r;
    } catch (err) {
      throw this.failure('exist', err);
    } finally {
      this.leave();
    }
  }

  private lookupNow(key: Buffer): KeyState | null | undefined {
    try {
      return this.engines.lookupNewestNow(key);
    } catch {
      return undefined; // the engine threads report it
    }
  }

  /**
   * Writes a tombstone into the partition of its timestamp and into every
   * older partition whose newest record of the key is an older value, so
   * that the delete survives detaching or deleting the newer partition
   * (bob's forced delete).
   */
  async delete(key: Buffer, version: Version): Promise<void> {
    this.enter();
    try {
      await this.deleteIn(key, version);
      this.raise(version);
      this.options.observer?.engine('delete', 'ok', 0);
    } catch (err) {
      throw this.failure('delete', err);
    } finally {
      this.leave();
    }
  }

  private async deleteIn(key: Buffer, version: Version): Promise<void> {
    const h = await this.holderFor(version.timestamp);
    await h.write((e) => e.delete(key, version));
    // Sealed partitions are about to be removed: the tombstone in `h` covers them.
    const older = this.holders.filter((o) => o.start < h.start && !o.sealed);
    if (older.length === 0) return;
    const tombstone: KeyState = { kind: 'deleted', version };
    const found = await Promise.all(older.map((o) => o.engine.exists([key])));
    await Promise.all(
      older.map((o, i) => {
        const r = found[i][0];
        if (r?.kind !== 'found' || compareRecords(r, tombstone) > 0) return undefined;
        return o.write((e) => e.delete(key, version));
      }),
    );
  }

  /**
   * Digests of the newest record of every key, per bucket of 2^bits
   * (docs/FORMAT.md, "Replica digests"): what anti-entropy compares between
   * replicas. Reads the indexes only.
   */
  async digest(bits: number): Promise<{ digests: Buffer; keys: number }> {
    return this.guard(() => this.engines.digest(bits));
  }

  /** The newest record (without value) of every key of the given buckets, sorted by key. */
  async entries(bits: number, buckets: number[]): Promise<SnapshotEntry[]> {
    return this.guard(() => this.engines.entries(bits, buckets));
  }

  /**
   * The closed files of the attached partitions: every blob that has its
   * index file, and that index file — immutable, so another replica can copy
   * them whole (a refill). Active blobs and blobs whose index is still being
   * built are left out; their records travel key by key.
   */
  async closedFiles(): Promise<Array<{ partition: string; files: Array<{ name: string; size: number }> }>> {
    return this.guard(async () => {
      const out: Array<{ partition: string; files: Array<{ name: string; size: number }> }> = [];
      for (const h of this.holders) {
        const files: Array<{ name: string; size: number }> = [];
        for (const name of await this.closedFileNames(h)) files.push({ name, size: (await fs.promises.stat(path.join(h.dir, name))).size });
        if (files.length > 0) out.push({ partition: h.dirName, files });
      }
      return out;
    });
  }

  /** Whether closedFiles() lists `name` in the attached partition `partition`: only its directory is read. */
  async isClosedFile(partition: string, name: string): Promise<boolean> {
    return this.guard(async () => {
      const h = this.holders.find((x) => x.dirName === partition);
      return h !== undefined && (await this.closedFileNames(h)).includes(name);
    });
  }

  /** The blobs of a partition that have their index file, and those index files. */
  private async closedFileNames(h: Holder): Promise<string[]> {
    const prefix = this.blobFilePrefix(h.dirName);
    const names = new Set(await fs.promises.readdir(h.dir));
    const out: string[] = [];
    for (const name of names) {
      const m = /^(.+)\.(\d{1,19})\.blob$/.exec(name);
      if (m && m[1] === prefix && names.has(`${m[1]}.${m[2]}.index`)) out.push(name, `${m[1]}.${m[2]}.index`);
    }
    return out;
  }

  /** The names of the blob and index files of partition `dirName` start with this (and a dot). */
  blobFilePrefix(dirName: string): string {
    return `${this.options.blobPrefix}_${parsePartitionName(dirName)?.suffix ?? ''}`;
  }

  // ------------------------------------------------------------ partitions

  partitions(): Holder[] {
    return [...this.holders];
  }

  /**
   * The attached partitions with their record counts. Refused (503) while the
   * group remounts, when it holds no partitions for a moment and would report
   * an empty vdisk; a remount waits for it to finish.
   */
  async partitionInfo(): Promise<PartitionInfo[]> {
    return this.guard(() =>
      Promise.all(this.holders.map(async (h) => ({ name: h.dirName, start: h.start, recordsCount: await h.engine.recordsCount() }))),
    );
  }

  async recordsCount(): Promise<number> {
    const counts = await Promise.all(this.holders.map((h) => h.engine.recordsCount()));
    return counts.reduce((a, b) => a + b, 0);
  }

  /** Attaches the detached partition directories that start at `start`. */
  async attach(start: number): Promise<string[]> {
    return this.guard(async () => {
      if (this.holders.some((h) => h.start === start)) {
        throw errors.conflict(`partition with timestamp ${start} is already attached to vdisk ${this.vdisk}`);
      }
      const names = (await this.partitionDirs()).filter((n) => parsePartitionName(n)?.start === start);
      if (names.length === 0) throw errors.notFound(`partition with timestamp ${start} not found on vdisk ${this.vdisk}`);
      const opened = await Promise.all(names.map((n) => this.openHolder(n, start)));
      this.holders = sortHolders([...this.holders, ...opened]);
      return names;
    });
  }

  /** Detaches (closes) the partitions that start at `start`; the current one cannot be detached. */
  async detach(start: number, nowSeconds: number): Promise<Holder[]> {
    return this.guard(async () => {
      const matching = this.holders.filter((h) => h.start === start);
      if (matching.length === 0) throw errors.notFound(`partition with timestamp ${start} not found on vdisk ${this.vdisk}`);
      if (matching.some((h) => h.isCurrent(nowSeconds))) {
        throw errors.conflict(`partition with timestamp ${start} on vdisk ${this.vdisk} is active and cannot be detached`);
      }
      this.holders = this.holders.filter((h) => h.start !== start);
      throwFirst(await this.closeAll(matching));
      return matching;
    });
  }

  /**
   * Closes every partition but keeps the group running: files can be copied
   * away (bob-tools' alien recovery); a later write reopens its partition.
   */
  async detachAll(): Promise<void> {
    await this.guard(async () => {
      const all = this.holders;
      this.holders = [];
      throwFirst(await this.closeAll(all));
    });
  }

  /**
   * Attaches every partition directory on disk that is not attached (after
   * detachAll: the alien hand-off takes back what an operator left in
   * place). Returns the names attached.
   */
  async attachAll(): Promise<string[]> {
    return this.guard(async () => {
      const attached = new Set(this.holders.map((h) => h.dirName));
      const names = (await this.partitionDirs()).filter((n) => !attached.has(n) && !this.creating.has(n));
      if (names.length === 0) return [];
      const opened = await Promise.all(names.map((n) => this.openHolder(n, parsePartitionName(n)!.start)));
      this.holders = sortHolders([...this.holders, ...opened]);
      return names;
    });
  }

  /**
   * Detaches the partitions starting at `start` and removes their
   * directories, detached ones included; returns the removed names.
   */
  async drop(start: number, nowSeconds: number): Promise<string[]> {
    return this.guard(async () => {
      const attached = this.holders.filter((h) => h.start === start);
      if (attached.some((h) => h.isCurrent(nowSeconds))) {
        throw errors.conflict(`partition with timestamp ${start} on vdisk ${this.vdisk} is active and cannot be deleted`);
      }
      const names = (await this.partitionDirs()).filter((n) => parsePartitionName(n)?.start === start);
      if (names.length === 0) throw errors.notFound(`partition with timestamp ${start} not found on vdisk ${this.vdisk}`);
      this.holders = this.holders.filter((h) => h.start !== start);
      throwFirst(await this.closeAll(attached));
      for (const n of names) await fs.promises.rm(path.join(this.options.dir, n), { recursive: true, force: true });
      return names;
    });
  }

  /**
   * Seals a partition for hand-over: later writes of its period go to a new
   * partition; reads still see it. Resolves once its writes in flight are done.
   */
  async seal(holder: Holder): Promise<void> {
    await this.guard(() => holder.seal());
  }

  /** Removes a sealed partition whose records were delivered elsewhere. */
  async dropSealed(holder: Holder): Promise<void> {
    await this.guard(async () => {
      if (!holder.sealed || !this.holders.includes(holder)) return;
      this.holders = this.holders.filter((h) => h !== holder);
      throwFirst(await this.closeAll([holder]));
      await fs.promises.rm(holder.dir, { recursive: true, force: true });
    });
  }

  /** Closes the active blobs of partitions whose period is over and that were not written recently. */
  async closeOutdatedActiveBlobs(nowMs: number, idleMs = this.options.idleCloseMs): Promise<number> {
    if (this.state !== 'running') return 0;
    const now = Math.floor(nowMs / 1000);
    let closed = 0;
    for (const h of this.holders) {
      if (h.end > now || nowMs - h.lastWrite < idleMs) continue;
      const st = await h.engine.stats();
      if (st.activeBlobId === null) continue;
      await h.engine.closeActiveBlob();
      closed++;
    }
    return closed;
  }

  // --------------------------------------------------------------- helpers

  private get log(): Logger {
    return this.options.log ?? silentLogger;
  }

  /** Counts an operation in flight (stop and remount wait for it); refuses it unless the group is running. */
  private enter(): void {
    if (this.state !== 'running') {
      throw errors.unavailable(`vdisk ${this.vdisk} at ${this.options.dir} is ${this.state === 'remounting' ? 'remounting' : 'not running'}`);
    }
    this.inflight++;
  }

  private leave(): void {
    if (--this.inflight === 0 && this.drained) this.drained();
  }

  /**
   * The error an operation fails with: engine closing and corruption become
   * node errors; I/O errors go up unchanged (the disk controller classifies
   * them). A data operation's failure is reported, a damaged record logged.
   */
  private failure(operation: DataOperation | null, err: unknown): unknown {
    const corrupt = isEngineError(err, EngineErrorCode.corruption) || isOysterError(err, 'Corruption');
    if (operation !== null) {
      this.options.observer?.engine(operation, 'error', 0);
      if (corrupt) {
        this.options.observer?.corrupt(1);
        this.log.error({ vdisk: this.vdisk, dir: this.options.dir, err: (err as Error).message }, 'damaged record: read refused');
      }
    }
    if (isEngineError(err, EngineErrorCode.closed)) return errors.unavailable(`vdisk ${this.vdisk} is closing`);
    if (isEngineError(err, EngineErrorCode.corruption)) return errors.corruption(err.message, err.version);
    return err;
  }

  /** Runs a partition operation as enter/failure/leave do for the data operations. */
  private async guard<T>(fn: () => Promise<T>): Promise<T> {
    this.enter();
    try {
      return await fn();
    } catch (err) {
      throw this.failure(null, err);
    } finally {
      this.leave();
    }
  }

  private drain(): Promise<void> {
    if (this.inflight === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.drained = () => {
        this.drained = null;
        resolve();
      };
    });
  }

  /** The open partition a write of `timestamp` goes to, if there is one. */
  private openHolderOf(timestamp: number): Holder | undefined {
    return this.holders.find((h) => !h.sealed && h.contains(timestamp));
  }

  /** The partition a write of `timestamp` goes to, opened (or created) if needed. */
  private async holderFor(timestamp: number): Promise<Holder> {
    const existing = this.openHolderOf(timestamp);
    if (existing) return existing;
    const start = this.options.roundStarts ? partitionStart(timestamp, this.options.periodSeconds) : timestamp;
    // A sealed partition may still hold the usual name: number the new one.
    let name = partitionDirName(start, this.options.hash);
    for (let n = 2; this.holders.some((h) => h.dirName === name); n++) name = partitionDirName(start, `${this.options.hash}-${n}`);
    // Concurrent writes into a new partition open it once.
    let pending = this.creating.get(name);
    if (!pending) {
      pending = this.openHolder(name, start).finally(() => this.creating.delete(name));
      this.creating.set(name, pending);
      const h = await pending;
      this.holders = sortHolders([...this.holders, h]);
      return h;
    }
    return pending;
  }

  private async openHolder(name: string, start: number): Promise<Holder> {
    const options: EngineOptions = { ...this.options.engine, blobFilePrefix: this.blobFilePrefix(name) };
    let lastError: unknown;
    for (let attempt = 0; attempt < Math.max(1, this.options.openAttempts); attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, this.options.openRetryDelayMs));
      try {
        const holder = await Holder.open(path.join(this.options.dir, name), name, start, this.options.periodSeconds, options);
        this.reportRecovery(holder);
        // No record of the partition is newer than its newest second with
        // its largest tick (ticks grow within a second).
        const st = await holder.engine.stats();
        this.raise({ timestamp: st.maxTimestamp, tick: st.maxTick, node: MAX_NODE_ID });
        this.options.clock?.observe({ timestamp: st.maxTimestamp, tick: st.maxTick, node: 0 });
        return holder;
      } catch (err) {
        lastError = err;
        // A format the engine refuses will not get better by retrying.
        if (isEngineError(err, EngineErrorCode.notSupported) || isEngineError(err, EngineErrorCode.invalidArgument)) break;
      }
    }
    throw lastError;
  }

  // What recovery found and repaired when a partition opened is worth an
  // operator's attention: torn tails after a crash, damaged records, rebuilt indexes.
  private reportRecovery(holder: Holder): void {
    const r = holder.engine.recovery;
    if (r.corruptRecords > 0) this.options.observer?.corrupt(r.corruptRecords);
    if (r.events.length === 0) return;
    const damaged = r.corruptRecords > 0 || r.skippedBytes > 0 || r.blobsQuarantined > 0;
    const fields = { vdisk: this.vdisk, partition: holder.dir, events: r.events };
    if (damaged) this.log.error(fields, 'partition opened with damaged data');
    else this.log.warn(fields, 'partition repaired on open');
  }

  private async partitionDirs(): Promise<string[]> {
    const entries = await fs.promises.readdir(this.options.dir, { withFileTypes: true });
    return entries.filter((e) => e.isDirectory() && parsePartitionName(e.name) !== null).map((e) => e.name);
  }

  private async openAll(): Promise<Holder[]> {
    const names = await this.partitionDirs();
    const opened: Holder[] = [];
    try {
      for (const name of names) opened.push(await this.openHolder(name, parsePartitionName(name)!.start));
    } catch (err) {
      await this.closeAll(opened);
      throw err;
    }
    return sortHolders(opened);
  }

  private async closeAll(holders: Holder[]): Promise<Error[]> {
    const results = await Promise.allSettled(holders.map((h) => h.close()));
    return results
      .filter((r): r is PromiseRejectedResult => r.status === 'rejected')
      .map((r) => (r.reason instanceof Error ? r.reason : new Error(String(r.reason))));
  }
}

function throwFirst(errs: Error[]): void {
  if (errs.length > 0) throw errs[0] instanceof OysterError ? errs[0] : errors.failed(errs[0].message);
}

function sortHolders(holders: Holder[]): Holder[] {
  return holders.sort((a, b) => b.start - a.start || (a.dirName < b.dirName ? -1 : a.dirName > b.dirName ? 1 : 0));
}
