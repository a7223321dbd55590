// Disk: the vdisks stored on one physical disk (or in the alien directory)
// and the disk's state machine NotReady -> Initialized -> Ready.
// Only a Ready disk serves. A disk whose path disappears or
// that returns device errors goes NotReady and, unlike bob, is retried with
// back-off until it comes back — unless an operator stopped it.
import fs from 'node:fs';
import path from 'node:path';
import { Space } from '../config/reader';
import { Logger } from '../logging/logger';
import { MaybePromise } from '../model/maybe-promise';
import { Version } from '../model/version';
import { isDiskFailure, isNoSpace, SpaceWatch } from './free-space';
import { errors, OysterError } from '../model/errors';
import { checkIdentity, IDENTITY_FILE, initialiseDisk, NodeState, Refusal } from './identity';
import { Vdisk } from './vdisk';
import { VdiskTable } from './vdisk-table';
import { Backoff } from './backoff';

// The bound of an alien vdisk that never finished opening: it could hold anything.
const UNKNOWN: Version = { timestamp: Number.MAX_SAFE_INTEGER, tick: 0, node: 0 };

export type DiskState = 'NotReady' | 'Initialized' | 'Ready';

export interface DiskOptions {
  name: string;
  /** The disk's mount point: if it disappears, the disk is gone. */
  diskPath: string;
  /** Directory holding this disk's vdisk (or alien owner) directories. */
  root: string;
  alien: boolean;
  /** Normal disks: the vdisks with a replica on this disk. */
  vdisks: number[];
  /** The alien directory: whether "<owner>/<vdisk>" is a directory to serve. */
  acceptsAlien?: (owner: string, vdisk: number) => boolean;
  /** Create `root` when missing (--init-folders); otherwise a missing root keeps the disk NotReady. */
  createRoot: boolean;
  makeVdisk: (dir: string, vdisk: number) => Vdisk;
  monitorIntervalMs: number;
  retryInitialMs: number;
  retryMaxMs: number;
  log: Logger;
  onStateChange?: (state: DiskState) => void;
  /**
   * The disk's identity, checked at every start (./identity.ts): the node
   * and disk name it must carry, and the node's record of its disks. The
   * alien directory names the disk it lives on and never initialises it.
   * Without it (an alien directory not on a disk) nothing is checked.
   */
  identity?: { node: string; disk: string; state: NodeState };
  /** The disk was refused (reason), or is no longer (null). */
  onRefusal?: (refusal: Refusal | null) => void;
  /** Free space below which the disk takes no writes (node.yaml min_free_space); checked every monitorIntervalMs. */
  minFreeSpace: Space;
  onWritableChange?: (writable: boolean) => void;
}

export class Disk {
  private _state: DiskState = 'NotReady';
  /** Whether the disk has been Ready once: its state changes since then are logged at warn. */
  private served = false;
  /** The vdisks the disk serves (none while it is out of service). */
  readonly vdisks = new VdiskTable();
  // Vdisk.newestPossible of the replicas that were serving when the disk
  // went out of service: reads may rely on it while the disk is down.
  private bounds = new Map<number, Version>();
  // Of the alien directory: the alien vdisks that held records when it went
  // out of service, with their bounds (nothing is written there while it is
  // down); null until it has served once since the node started.
  private heldWhenDown: Array<{ owner: string; id: number; bound: Version }> | null = null;
  private creating = new Map<string, Promise<Vdisk>>();
  private serial: Promise<unknown> = Promise.resolve();
  private operatorStopped = false;
  private closed = false;
  private readonly retry: Backoff;
  private monitorTimer: NodeJS.Timeout | null = null;
  private readonly space: SpaceWatch;
  private _refusal: Refusal | null = null;

  constructor(readonly options: DiskOptions) {
    // A failed attempt schedules the next one.
    this.retry = new Backoff(options.retryInitialMs, options.retryMaxMs, () => void this.start().catch(() => undefined));
    this.space = new SpaceWatch({ name: options.name, alien: options.alien, root: options.root }, options.minFreeSpace, options.log, options.onWritableChange);
  }

  get name(): string {
    return this.options.name;
  }
  get state(): DiskState {
    return this._state;
  }
  get isReady(): boolean {
    return this._state === 'Ready';
  }
  get alien(): boolean {
    return this.options.alien;
  }

  /** Why the disk's identity keeps it out of service; null when it does not. */
  get refusal(): Refusal | null {
    return this._refusal;
  }

  /** Whether the disk takes writes: it had min_free_space free when last looked at (every monitorIntervalMs, after an ENOSPC). */
  get writable(): boolean {
    return this.space.writable;
  }

  /** Brings the disk to Ready: checks the disk, opens every vdisk. Rejects if the disk cannot be used. */
  start(byOperator = false): Promise<void> {
    return this.exclusive(async () => {
      if (byOperator) this.operatorStopped = false;
      if (this.closed || this._state === 'Ready') return;
      this.retry.cancel();
      try {
        await this.checkDisk();
        this.setState('Initialized');
        for (const [owner, v] of await this.discoverVdisks()) this.vdisks.add(v, owner);
        for (const v of this.vdisks.all()) await v.run();
        this.retry.reset();
        await this.space.check();
        this.setState('Ready');
        this.heldWhenDown = null;
        this.startMonitor();
      } catch (err) {
        await this.stopVdisks();
        this.setState('NotReady');
        if (!this.operatorStopped) this.scheduleRetry();
        throw err;
      }
    });
  }

  /** Closes every vdisk and goes NotReady; an operator stop is not retried automatically. */
  stop(byOperator = false): Promise<void> {
    return this.exclusive(async () => {
      if (byOperator) this.operatorStopped = true;
      this.retry.cancel();
      await this.goNotReady(byOperator ? 'stopped by operator' : 'stopped');
    });
  }

  /** For shutdown: stops timers and closes every vdisk; the disk is not used afterwards. */
  async close(): Promise<void> {
    this.closed = true;
    this.retry.cancel();
    await this.exclusive(() => this.goNotReady('node shutting down'));
  }

  /**
   * Runs an operation on this disk. Rejects with DCIsNotAvailable unless
   * Ready; a device-level failure takes the disk NotReady. An operation that
   * answers at once (a read from memory) is answered at once.
   */
  use<T>(fn: () => Promise<T>): Promise<T>;
  use<T>(fn: () => MaybePromise<T>): MaybePromise<T>;
  use<T>(fn: () => MaybePromise<T>): MaybePromise<T> {
    if (this._state !== 'Ready') return Promise.reject(errors.diskNotReady(this.name));
    let running: MaybePromise<T>;
    try {
      running = fn();
    } catch (err) {
      return this.failed(err);
    }
    return running instanceof Promise ? running.then(undefined, this.failed) : running;
  }

  /** The rejection of an operation that failed with `err` (use()); a device-level failure takes the disk NotReady. */
  private readonly failed = (err: unknown): Promise<never> => {
    if (isDiskFailure(err)) {
      this.fail(err as Error);
      return Promise.reject(new OysterError('PossibleDiskDisconnection', `Possibly disk was disconnected: ${this.name}: ${(err as Error).message}`));
    }
    if (err instanceof OysterError) return Promise.reject(err);
    if (isNoSpace(err)) {
      // The watermark was passed between two looks: look now.
      void this.space.check();
      return Promise.reject(errors.noSpace(`${this.name}: ${(err as Error).message}`));
    }
    return Promise.reject(errors.storage(`${this.name}: ${(err as Error).message}`));
  };

  /**
   * Runs a write on this disk: as use(), and refused at once with NoSpace,
   * touching nothing, while the disk is below min_free_space.
   */
  write<T>(fn: () => Promise<T>): Promise<T> {
    if (this._state === 'Ready' && !this.space.writable) return Promise.reject(errors.noSpace(this.space.fullness));
    return this.use(fn);
  }

  /** Marks the disk failed (I/O error, path gone): NotReady now, retried later. */
  fail(err: Error): void {
    if (this._state === 'NotReady' || this.closed) return;
    this.options.log.error({ disk: this.name, err: err.message }, 'disk failed; taking it out of service');
    void this.exclusive(async () => {
      if (this._state === 'NotReady') return;
      await this.goNotReady(`failed: ${err.message}`);
      if (!this.operatorStopped) this.scheduleRetry();
    });
  }

  /**
   * An upper bound of the versions the vdisk on this disk holds
   * (Vdisk.newestPossible), also while the disk is out of service; null when
   * it is not known (the disk has not served since the node started).
   */
  newestPossible(id: number): Version | null {
    const v = this.vdisks.replica(id);
    if (v?.isOpen) return v.newestPossible;
    return this.bounds.get(id) ?? null;
  }

  /**
   * While the alien directory is out of service: the owners whose alien
   * copies of vdisk `id` it held when it went down, with an upper bound of
   * their versions; null when that is not known (it has not served since the
   * node started).
   */
  aliensHeldWhenDown(id: number): Array<{ owner: string; bound: Version }> | null {
    return this.heldWhenDown?.filter((h) => h.id === id) ?? null;
  }

  /** The alien vdisk of (owner, id), created on first use when `create`. */
  async alienVdisk(owner: string, id: number, create: boolean): Promise<Vdisk | undefined> {
    const v = this.vdisks.alien(owner, id);
    if (v || !create) return v;
    const key = `${owner}/${id}`;
    let pending = this.creating.get(key);
    if (!pending) {
      pending = (async () => {
        const created = this.options.makeVdisk(path.join(this.options.root, owner, String(id)), id);
        await created.run();
        this.vdisks.add(created, owner);
        return created;
      })().finally(() => this.creating.delete(key));
      this.creating.set(key, pending);
    }
    return pending;
  }

  // --------------------------------------------------------------- helpers

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.serial.then(fn, fn);
    this.serial = run.catch(() => undefined);
    return run;
  }

  private setState(s: DiskState): void {
    if (this._state === s) return;
    this._state = s;
    // The way up at start is routine; a disk that served going out of
    // service, or back, is what an operator watches the journal for.
    const fields = { disk: this.name, alien: this.alien, state: s };
    if (this.served) this.options.log.warn(fields, `disk ${this.name} is ${s}`);
    else this.options.log.info(fields, `disk ${this.name} is ${s}`);
    if (s === 'Ready') this.served = true;
    this.options.onStateChange?.(s);
  }

  private async goNotReady(reason: string): Promise<void> {
    this.stopMonitor();
    if (this._state === 'NotReady' && this.vdisks.size === 0) return;
    const serving = this._state === 'Ready';
    this.setState('NotReady');
    const errs = await this.stopVdisks(serving);
    for (const e of errs) this.options.log.warn({ disk: this.name, err: e.message }, 'partition not closed cleanly');
    this.options.log.info({ disk: this.name, reason }, `disk ${this.name} out of service`);
  }

  /** Closes every vdisk; `serving`: the disk leaves service (what the alien directory held is kept). */
  private async stopVdisks(serving = false): Promise<Error[]> {
    const aliens = this.alien ? this.vdisks.aliens() : [];
    const all = this.vdisks.clear();
    // A vdisk that never finished opening knows only part of its records.
    const open = this.alien ? [] : all.filter((v) => v.isOpen);
    const held = aliens.filter((a) => a.vdisk.hasPartitions || !a.vdisk.isOpen).map((a) => ({ ...a, known: a.vdisk.isOpen }));
    const errs = await Promise.all(all.map((v) => v.stop()));
    // After stop: the writes in flight are done and counted.
    for (const v of open) this.bounds.set(v.id, v.newestPossible);
    if (this.alien && serving) this.heldWhenDown = held.map((a) => ({ owner: a.owner, id: a.vdisk.id, bound: a.known ? a.vdisk.newestPossible : UNKNOWN }));
    return errs.flat();
  }

  private async checkDisk(): Promise<void> {
    const st = await fs.promises.stat(this.options.diskPath).catch(() => null);
    if (!st?.isDirectory()) throw errors.diskNotReady(`${this.name}: disk path ${this.options.diskPath} does not exist`);
    const root = await fs.promises.stat(this.options.root).catch(() => null);
    const identity = this.options.identity;
    const ours = identity ? await this.checkIdentity(identity, root?.isDirectory() === true) : true;
    if (root?.isDirectory()) return;
    if (!this.options.createRoot) {
      throw errors.diskNotReady(`${this.name}: ${this.options.root} does not exist (start with --init-folders to create it)`);
    }
    if (identity && !ours) await this.initialise(identity);
    await fs.promises.mkdir(this.options.root, { recursive: true });
  }

  /**
   * Checks the disk's identity (checkIdentity): true when it is this node's
   * disk, false for a disk never initialised; throws when it is refused.
   */
  private async checkIdentity(identity: NonNullable<DiskOptions['identity']>, hasRoot: boolean): Promise<boolean> {
    const verdict = await checkIdentity({ ...identity, diskPath: this.options.diskPath, alien: this.alien, hasRoot });
    if (typeof verdict === 'object') {
      this.setRefusal(verdict);
      throw errors.diskNotReady(`${this.name}: refused: ${verdict.message}`);
    }
    if (verdict === 'adopted') this.options.log.info({ disk: identity.disk, path: this.options.diskPath }, `disk ${identity.disk}: data without an identity; ${IDENTITY_FILE} written`);
    if (verdict !== 'new') this.setRefusal(null);
    return verdict !== 'new';
  }

  private async initialise({ node, disk, state }: NonNullable<DiskOptions['identity']>): Promise<void> {
    await initialiseDisk(this.options.diskPath, node, disk, state).then(() => this.setRefusal(null));
  }

  /** Records why the disk is refused (null: it is not), telling onRefusal of a change. */
  private setRefusal(r: Refusal | null): void {
    if (r?.message === this._refusal?.message) return;
    this._refusal = r;
    this.options.onRefusal?.(r);
  }

  /**
   * Accepts the disk found in place of one this node initialised (a replaced
   * disk, or one restored from a copy): gives it a new identity, records
   * it, and starts it; anti-entropy then brings its vdisks up to date.
   * Rejects with Conflict unless the disk is refused — and, when it carries
   * another disk's identity, unless it holds no data: another node's disk
   * mounted by mistake is never taken over.
   */
  accept(): Promise<void> {
    return this.exclusive(async () => {
      const identity = this.options.identity;
      if (!identity || this.alien) throw errors.conflict(`disk ${this.name} has no identity to accept`);
      if (this._refusal === null) throw errors.conflict(`disk ${this.name} is not refused: nothing to accept`);
      const entries = await fs.promises.readdir(this.options.root).catch(() => [] as string[]);
      if (this._refusal.reason !== 'no_identity' && entries.length > 0) {
        throw errors.conflict(`disk ${this.name} at ${this.options.diskPath} holds another disk's identity and data in ${this.options.root}: it is not taken over; wipe it first`);
      }
      await this.initialise(identity);
      this.options.log.warn({ disk: this.name, path: this.options.diskPath }, `disk ${this.name} accepted as a replacement; anti-entropy brings it up to date from the other replicas`);
    }).then(() => this.start(true));
  }

  /** The vdisks found on the disk, with their owners for alien ones. */
  private async discoverVdisks(): Promise<Array<[string | undefined, Vdisk]>> {
    if (!this.options.alien) {
      return this.options.vdisks.map((v) => [undefined, this.options.makeVdisk(path.join(this.options.root, String(v)), v)]);
    }
    const found: Array<[string, Vdisk]> = [];
    for (const owner of await fs.promises.readdir(this.options.root, { withFileTypes: true })) {
      if (!owner.isDirectory()) continue;
      const ownerDir = path.join(this.options.root, owner.name);
      for (const v of await fs.promises.readdir(ownerDir, { withFileTypes: true })) {
        const vdisk = /^\d{1,10}$/.test(v.name) ? Number(v.name) : NaN;
        if (!v.isDirectory() || !(this.options.acceptsAlien?.(owner.name, vdisk) ?? false)) {
          this.options.log.warn({ disk: this.name, dir: path.join(ownerDir, v.name) }, 'ignoring alien directory: no such owner node or vdisk');
          continue;
        }
        found.push([owner.name, this.options.makeVdisk(path.join(ownerDir, v.name), vdisk)]);
      }
    }
    return found;
  }

  private scheduleRetry(): void {
    if (this.closed) return;
    const delay = this.retry.schedule();
    if (delay !== null) this.options.log.info({ disk: this.name, delayMs: delay }, `retrying disk ${this.name} later`);
  }

  private startMonitor(): void {
    this.stopMonitor();
    this.monitorTimer = setInterval(() => {
      if (this._state !== 'Ready') return;
      void this.space.check();
      void Promise.all([fs.promises.stat(this.options.diskPath), fs.promises.stat(this.options.root)]).then(
        ([d, r]) => {
          if (!d.isDirectory() || !r.isDirectory()) this.fail(new Error(`${this.options.root} is not a directory`));
        },
        (err: Error) => this.fail(err),
      );
    }, this.options.monitorIntervalMs);
    this.monitorTimer.unref();
  }

  private stopMonitor(): void {
    if (this.monitorTimer) clearInterval(this.monitorTimer);
    this.monitorTimer = null;
  }
}
