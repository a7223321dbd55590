// Vdisk: the partitions of one vdisk in one directory (bob's group) — a
// vdisk replica on a local disk, or the alien copies held for one owner
// node. Reads find the newest record across all partitions (the engine's
// EngineSet applies the order of versions); writes go to the partition of
// their bob timestamp. The only place that tries a read without waiting.
import fs from 'node:fs';
import { silentLogger } from '../logging/logger';
import { VersionClock } from '../model/clock';
import { errors, isOysterError } from '../model/errors';
import { MaybePromise } from '../model/maybe-promise';
import { compareRecords, compareVersions, KeyState, StoredRecord, Version } from '../model/version';
import { isOpened, OpenedValue, WHOLE_UP_TO } from '../model/value';
import { isEngineError, EngineErrorCode, PutStream } from './engine';
import { isConnectionError } from './free-space';
import { SnapshotEntry } from './engine-snapshot';
import { PartitionList, PartitionListOptions } from './partition-list';
import { InFlight } from './in-flight';
import { RecordCache } from './record-cache';
import { VdiskShelf } from './vdisk-shelf';

/** What a vdisk reports about its engines (metrics hang on it). */
type DataOperation = 'put' | 'get' | 'exist' | 'delete';

export interface StorageObserver {
  engine(operation: DataOperation, outcome: 'ok' | 'not_found' | 'error', bytes: number): void;
  corrupt(records: number): void;
}

export interface VdiskOptions extends PartitionListOptions {
  observer?: StorageObserver;
  /** Sees the newest version of every partition opened: after a restart this node stamps later than anything stored. */
  clock?: VersionClock;
  /** Where the records read are kept to be read again (the node's, shared by its vdisks). */
  records?: RecordCache;
}

type State = 'stopped' | 'running' | 'remounting';

export class Vdisk {
  readonly partitions: PartitionList;
  private state: State = 'stopped';
  private _newestPossible: Version = { timestamp: 0, tick: 0, node: 0 };
  private readonly inflight = new InFlight();
  private readonly shelf: VdiskShelf;

  constructor(readonly options: VdiskOptions) {
    this.shelf = new VdiskShelf(options.records);
    this.partitions = new PartitionList({ ...options, corrupt: (n) => options.observer?.corrupt(n) }, (newest) => {
      this.raise(newest);
      options.clock?.observe({ ...newest, node: 0 });
    });
  }

  get id(): number {
    return this.options.id;
  }

  get dir(): string {
    return this.options.dir;
  }

  /** Opened every partition it found (running or remounting): newestPossible covers all its records. */
  get isOpen(): boolean {
    return this.state !== 'stopped';
  }

  /**
   * An upper bound of the versions of the records in this vdisk: what its
   * partitions held when they opened and every write acknowledged since.
   * While the vdisk cannot be read, a record newer than this found elsewhere
   * (an alien copy written meanwhile) is known to be the newest.
   */
  get newestPossible(): Version {
    return this._newestPossible;
  }

  /** Whether any partition is attached (a vdisk whose partitions were all handed over holds none). */
  get hasPartitions(): boolean {
    return this.partitions.all.length > 0;
  }

  /** Opens every partition directory found in the vdisk directory (creating the directory). */
  async run(): Promise<void> {
    await fs.promises.mkdir(this.options.dir, { recursive: true });
    await this.partitions.openAll();
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
    this.shelf.drop();
    await this.inflight.drain();
    return this.partitions.closeAll();
  }

  /** Closes and reopens every partition, picking up directories copied in. 503 meanwhile. */
  async remount(): Promise<void> {
    if (this.state !== 'running') throw errors.unavailable(`vdisk ${this.id} is not running`);
    this.state = 'remounting';
    this.shelf.drop();
    try {
      await this.inflight.drain();
      await this.partitions.closeAll();
      await this.partitions.openAll();
    } finally {
      this.state = 'running';
    }
  }

  /**
   * Runs an administrative operation on the partitions (attach, detach,
   * drop, seal, listings) while the vdisk runs: refused with 503 while it
   * remounts or is stopped, and a remount or stop waits for it.
   */
  async admin<T>(fn: (partitions: PartitionList) => Promise<T>): Promise<T> {
    this.enter();
    try {
      return await fn(this.partitions);
    } catch (err) {
      throw this.failure(null, err);
    } finally {
      this.leave();
    }
  }

  // ------------------------------------------------------------------ data

  // The data operations run in one async frame each (enter/failure/leave
  // rather than a closure passed to admin()): they are the hot path of every request.

  async put(key: Buffer, version: Version, value: Buffer): Promise<void> {
    this.enter();
    this.shelf.forget(key);
    try {
      const p = this.partitions.writableFor(version.timestamp) ?? (await this.partitions.partitionFor(version.timestamp));
      await p.write((e) => e.put(key, version, value));
      this.raise(version);
      this.options.observer?.engine('put', 'ok', value.length);
    } catch (err) {
      throw this.failure('put', err);
    } finally {
      this.shelf.forget(key);
      this.leave();
    }
  }

  /**
   * Starts a put whose value of `size` bytes comes in pieces (PutStream):
   * written as it comes into the partition of the version's timestamp,
   * readable once finished. Not an operation in flight for stop and remount:
   * closing the partition aborts the stream, whose next call then fails.
   */
  async beginStream(key: Buffer, version: Version, size: number): Promise<PutStream> {
    this.enter();
    this.shelf.forget(key);
    let ended!: () => void;
    const end = new Promise<void>((resolve) => (ended = resolve));
    let stream: PutStream;
    try {
      const p = this.partitions.writableFor(version.timestamp) ?? (await this.partitions.partitionFor(version.timestamp));
      // The partition counts the stream as a write until it ends: it is sealed only after.
      stream = await new Promise<PutStream>((resolve, reject) => {
        void p.write((e) =>
          e.beginStream(key, version, size).then(
            (s) => (resolve(s), end),
            (err: unknown) => reject(err),
          ),
        );
      });
    } catch (err) {
      this.shelf.forget(key);
      ended();
      throw this.failure('put', err);
    } finally {
      this.leave();
    }
    const over = () => {
      this.shelf.forget(key);
      ended();
    };
    return {
      append: (pieces) => stream.append(pieces).catch((err: unknown) => Promise.reject(this.failure('put', err))),
      finish: () =>
        stream.finish().then(
          () => {
            this.raise(version);
            this.options.observer?.engine('put', 'ok', size);
            over();
          },
          (err: unknown) => {
            over();
            throw this.failure('put', err);
          },
        ),
      abort: () => stream.abort().finally(over),
    };
  }

  /**
   * The newest record of key across all partitions (tombstones included), or
   * null when none holds one: at once when the records kept or the page
   * cache hold it, else once the engine threads have read it. With `open`,
   * a value over 64 KiB is not read but opened (OpenedValue), to be read in
   * parts.
   */
  get(key: Buffer): MaybePromise<StoredRecord | null>;
  get(key: Buffer, open: boolean): MaybePromise<StoredRecord | OpenedValue | null>;
  get(key: Buffer, open = false): MaybePromise<StoredRecord | OpenedValue | null> {
    if (this.state === 'running') {
      const set = this.partitions.engines;
      const shelf = this.shelf.for(set);
      const kept = shelf?.get(key);
      if (kept !== undefined) return kept;
      let now: StoredRecord | OpenedValue | null | undefined;
      try {
        now = set.readNewestNow(key, open);
      } catch {
        // The engine threads report what made the read fail.
      }
      if (now !== undefined) {
        if (isOpened(now)) return this.opened(now);
        shelf?.keep(key, now);
        return this.counted('get', now);
      }
    }
    return this.getWaiting(key, open);
  }

  private async getWaiting(key: Buffer, open: boolean): Promise<StoredRecord | OpenedValue | null> {
    this.enter();
    try {
      const writes = this.shelf.writes;
      const set = this.partitions.engines;
      const r = open ? await set.openNewest(key, WHOLE_UP_TO) : await set.getNewest(key);
      if (isOpened(r)) return this.opened(r);
      if (this.shelf.writes === writes && this.partitions.engines === set) this.shelf.for(set)?.keep(key, r);
      return this.counted('get', r);
    } catch (err) {
      throw this.failure('get', err);
    } finally {
      this.leave();
    }
  }

  /**
   * The newest record of each key, without values: at once for one key (a
   * coordinator asking for a version) the records kept or the index in
   * memory answer, else once the engine threads have looked.
   */
  exists(keys: Buffer[]): MaybePromise<Array<KeyState | null>> {
    if (keys.length === 1 && this.state === 'running') {
      const set = this.partitions.engines;
      const kept = this.shelf.for(set)?.get(keys[0]);
      let now: KeyState | null | undefined = kept === undefined ? undefined : kept === null ? null : { kind: kept.kind, version: kept.version };
      try {
        if (now === undefined) now = set.lookupNewestNow(keys[0]);
      } catch {
        // The engine threads report what made the lookup fail.
      }
      if (now !== undefined) {
        this.options.observer?.engine('exist', 'ok', 0);
        return [now];
      }
    }
    return this.existsWaiting(keys);
  }

  private async existsWaiting(keys: Buffer[]): Promise<Array<KeyState | null>> {
    this.enter();
    try {
      const r = await this.partitions.engines.lookupNewest(keys);
      this.options.observer?.engine('exist', 'ok', 0);
      return r;
    } catch (err) {
      throw this.failure('exist', err);
    } finally {
      this.leave();
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
    this.shelf.forget(key);
    try {
      const p = await this.partitions.partitionFor(version.timestamp);
      await p.write((e) => e.delete(key, version));
      // Sealed partitions are about to be removed: the tombstone in `p` covers them.
      const older = this.partitions.all.filter((o) => o.start < p.start && !o.sealed);
      if (older.length > 0) {
        const tombstone: KeyState = { kind: 'deleted', version };
        const found = await Promise.all(older.map((o) => o.engine.exists([key])));
        await Promise.all(
          older.map((o, i) => {
            const r = found[i][0];
            // Sealed meanwhile (being handed over, then removed): the tombstone in `p` covers it.
            if (o.sealed || !this.partitions.all.includes(o)) return undefined;
            return r?.kind === 'found' && compareRecords(r, tombstone) < 0 ? o.write((e) => e.delete(key, version)) : undefined;
          }),
        );
      }
      this.raise(version);
      this.options.observer?.engine('delete', 'ok', 0);
    } catch (err) {
      throw this.failure('delete', err);
    } finally {
      this.shelf.forget(key);
      this.leave();
    }
  }

  /**
   * Digests of the newest record of every key, per bucket of 2^bits
   * (docs/FORMAT.md, "Replica digests"): what anti-entropy compares between
   * replicas. Reads the indexes only.
   */
  digest(bits: number): Promise<{ digests: Buffer; keys: number }> {
    return this.admin((ps) => ps.engines.digest(bits));
  }

  /** The newest record (without value) of every key of the given buckets, sorted by key. */
  entries(bits: number, buckets: number[]): Promise<SnapshotEntry[]> {
    return this.admin((ps) => ps.engines.entries(bits, buckets));
  }

  // --------------------------------------------------------------- helpers

  /** An opened value, counted, whose reads report damage as this vdisk's reads do. */
  private opened(v: OpenedValue): OpenedValue {
    this.options.observer?.engine('get', 'ok', v.size);
    const { reader } = v;
    return {
      ...v,
      reader: {
        size: reader.size,
        inFile: reader.inFile,
        read: (offset, target) => reader.read(offset, target).catch((err: unknown) => Promise.reject(this.failure('get', err))),
        // A client that left fails a send: no failure of the engine's.
        sendTo: (fd, offset, n, prefix) =>
          reader.sendTo(fd, offset, n, prefix).catch((err: unknown) => Promise.reject(isConnectionError(err) ? err : this.failure('get', err))),
        checkRest: () => reader.checkRest().catch((err: unknown) => Promise.reject(this.failure('get', err))),
        close: () => reader.close(),
      },
    };
  }

  private raise(v: Version): void {
    if (compareVersions(v, this._newestPossible) > 0) this._newestPossible = v;
  }

  private counted(operation: DataOperation, r: StoredRecord | null): StoredRecord | null {
    this.options.observer?.engine(operation, r === null ? 'not_found' : 'ok', r?.kind === 'found' ? r.value.length : 0);
    return r;
  }

  /** Counts an operation in flight (stop and remount wait for it); refuses it unless the vdisk is running. */
  private enter(): void {
    if (this.state !== 'running') {
      throw errors.unavailable(`vdisk ${this.id} at ${this.dir} is ${this.state === 'remounting' ? 'remounting' : 'not running'}`);
    }
    this.inflight.enter();
  }

  private leave(): void {
    this.inflight.leave();
  }

  /**
   * The error an operation fails with: engine closing and corruption become
   * node errors; I/O errors go up unchanged (the disk classifies them). A
   * data operation's failure is reported, a damaged record logged.
   */
  private failure(operation: DataOperation | null, err: unknown): unknown {
    const corrupt = isEngineError(err, EngineErrorCode.corruption) || isOysterError(err, 'Corruption');
    if (operation !== null) {
      this.options.observer?.engine(operation, 'error', 0);
      if (corrupt) {
        this.options.observer?.corrupt(1);
        (this.options.log ?? silentLogger).error({ vdisk: this.id, dir: this.dir, err: (err as Error).message }, 'damaged record: read refused');
      }
    }
    if (isEngineError(err, EngineErrorCode.closed)) return errors.unavailable(`vdisk ${this.id} is closing`);
    if (isEngineError(err, EngineErrorCode.corruption)) return errors.corruption(err.message, err.version);
    return err;
  }
}

