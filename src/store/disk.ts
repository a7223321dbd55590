// Disk: the vdisks stored on one physical disk (or in the alien directory)
// and the disk's state machine NotReady -> Initialized -> Ready.
// Only a Ready disk serves. A disk whose path disappears or
// that returns device errors goes NotReady and, unlike bob, is retried with
// back-off until it comes back — unless an operator stopped it.
import fs from 'node:fs';
import path from 'node:path';
import { Space } from '../config/reader';
import { Logger } from '../logging/logger';
import { Version } from '../model/version';
import { EngineErrorCode, isEngineError } from './engine';
import { errors, OysterError } from '../model/errors';
import { DiskIdentity, IDENTITY_FILE, newIdentity, NodeState, readIdentity, writeIdentity } from './identity';
import { Vdisk } from './vdisk';

const NONE: ReadonlyArray<never> = [];

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

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

export const REFUSAL_REASONS = ['no_identity', 'foreign_identity', 'unreadable_identity'] as const;

/** Why a disk is kept out of service until an operator acts (or mounts it). */
export interface Refusal {
  /** no_identity: initialised by this node but found without its identity (not mounted, replaced); foreign_identity: another node's or disk's; unreadable_identity. */
  reason: (typeof REFUSAL_REASONS)[number];
  message: string;
}

export class Disk {
  private _state: DiskState = 'NotReady';
  private vdisks = new Map<string, Vdisk>();
  // The same, of a normal disk, by id: looked up on every request.
  private replicas = new Map<number, Vdisk>();
  // alienVdisksOf's index, rebuilt after a change.
  private byId: Map<number, Array<{ owner: string; vdisk: Vdisk }>> | null = null;
  // Vdisk.newestPossible of the vdisks that were serving when the disk went
  // out of service: reads may rely on it while the disk is down.
  private bounds = new Map<string, Version>();
  private creating = new Map<string, Promise<Vdisk>>();
  private serial: Promise<unknown> = Promise.resolve();
  private operatorStopped = false;
  private closed = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private retryAttempt = 0;
  private monitorTimer: NodeJS.Timeout | null = null;
  private _lastError: string | null = null;
  private _writable = true;
  private _refusal: Refusal | null = null;
  // Why writes are refused, for the error of each refused write.
  private fullness = '';

  constructor(readonly options: DiskOptions) {}

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
  get lastError(): string | null {
    return this._lastError;
  }

  /** Why the disk's identity keeps it out of service; null when it does not. */
  get refusal(): Refusal | null {
    return this._refusal;
  }

  /**
   * Whether the disk takes writes: it had at least min_free_space free when
   * last looked at (at start, every monitorIntervalMs, and after a write
   * that found it full). Reads go on either way.
   */
  get writable(): boolean {
    return this._writable;
  }

  /** Brings the disk to Ready: checks the disk, opens every vdisk. Rejects if the disk cannot be used. */
  start(byOperator = false): Promise<void> {
    return this.exclusive(async () => {
      if (byOperator) this.operatorStopped = false;
      if (this.closed || this._state === 'Ready') return;
      this.cancelRetry();
      try {
        await this.checkDisk();
        this.setState('Initialized');
        for (const [key, g] of await this.discoverVdisks()) this.add(key, g);
        for (const g of this.vdisks.values()) await g.run();
        this.retryAttempt = 0;
        this._lastError = null;
        await this.checkSpace();
        this.setState('Ready');
        this.startMonitor();
      } catch (err) {
        this._lastError = (err as Error).message;
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
      this.cancelRetry();
      await this.goNotReady(byOperator ? 'stopped by operator' : 'stopped');
    });
  }

  /** For shutdown: stops timers and closes every vdisk; the disk is not used afterwards. */
  async close(): Promise<void> {
    this.closed = true;
    this.cancelRetry();
    await this.exclusive(() => this.goNotReady('node shutting down'));
  }

  /**
   * Runs an operation on this disk. Rejects with DCIsNotAvailable unless
   * Ready; a device-level failure takes the disk NotReady.
   */
  use<T>(fn: () => Promise<T>): Promise<T> {
    if (this._state !== 'Ready') return Promise.reject(errors.diskNotReady(this.name));
    // Not an async function: on every request's path, one promise less.
    let running: Promise<T>;
    try {
      running = fn();
    } catch (err) {
      return this.failed(err);
    }
    return running.then(undefined, this.failed);
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
      void this.checkSpace();
      return Promise.reject(errors.noSpace(`${this.name}: ${(err as Error).message}`));
    }
    return Promise.reject(errors.storage(`${this.name}: ${(err as Error).message}`));
  };

  /**
   * Runs a write on this disk: as use(), and refused at once with NoSpace,
   * touching nothing, while the disk is below min_free_space.
   */
  write<T>(fn: () => Promise<T>): Promise<T> {
    if (this._state === 'Ready' && !this._writable) return Promise.reject(errors.noSpace(this.fullness));
    return this.use(fn);
  }

  /** Marks the disk failed (I/O error, path gone): NotReady now, retried later. */
  fail(err: Error): void {
    if (this._state === 'NotReady' || this.closed) return;
    this._lastError = err.message;
    this.options.log.error({ disk: this.name, err: err.message }, 'disk failed; taking it out of service');
    void this.exclusive(async () => {
      if (this._state === 'NotReady') return;
      await this.goNotReady(`failed: ${err.message}`);
      if (!this.operatorStopped) this.scheduleRetry();
    });
  }

  vdisk(id: number): Vdisk | undefined {
    return this.replicas.get(id);
  }

  /**
   * An upper bound of the versions the vdisk on this disk holds
   * (Vdisk.newestPossible), also while the disk is out of service; null when
   * it is not known (the disk has not served since the node started).
   */
  newestPossible(vdisk: number): Version | null {
    const g = this.replicas.get(vdisk);
    if (g?.isOpen) return g.newestPossible;
    return this.bounds.get(`${vdisk}`) ?? null;
  }

  /** The alien vdisk of (owner, vdisk), created on first use when `create`. */
  async alienVdisk(owner: string, vdisk: number, create: boolean): Promise<Vdisk | undefined> {
    const key = `${owner}/${vdisk}`;
    const g = this.vdisks.get(key);
    if (g || !create) return g;
    let pending = this.creating.get(key);
    if (!pending) {
      pending = (async () => {
        const v = this.options.makeVdisk(path.join(this.options.root, owner, String(vdisk)), vdisk);
        await v.run();
        this.add(key, v);
        return v;
      })().finally(() => this.creating.delete(key));
      this.creating.set(key, pending);
    }
    return pending;
  }

  /** Alien vdisks with their owner names. */
  alienVdisks(): Array<{ owner: string; vdisk: Vdisk }> {
    return [...this.vdisks.entries()].map(([k, vdisk]) => ({ owner: k.slice(0, k.lastIndexOf('/')), vdisk }));
  }

  /** The alien vdisks of vdisk `id`, of every owner (looked up on every read: kept by id). */
  alienVdisksOf(id: number): ReadonlyArray<{ owner: string; vdisk: Vdisk }> {
    if (this.byId === null) {
      this.byId = new Map();
      for (const a of this.alienVdisks()) {
        const list = this.byId.get(a.vdisk.id);
        if (list) list.push(a);
        else this.byId.set(a.vdisk.id, [a]);
      }
    }
    return this.byId.get(id) ?? NONE;
  }

  /** Whether an alien vdisk of `id` (of any owner) holds partitions. */
  servesVdisk(id: number): boolean {
    for (const a of this.alienVdisksOf(id)) if (a.vdisk.hasPartitions) return true;
    return false;
  }

  /** The alien vdisk of (owner, vdisk) if it is open and holds partitions. */
  heldFor(owner: string, vdisk: number): Vdisk | undefined {
    const g = this.vdisks.get(`${owner}/${vdisk}`);
    return g?.hasPartitions ? g : undefined;
  }

  allVdisks(): Vdisk[] {
    return [...this.vdisks.values()];
  }

  // --------------------------------------------------------------- helpers

  private add(key: string, v: Vdisk): void {
    this.vdisks.set(key, v);
    if (!this.alien) this.replicas.set(v.id, v);
    this.byId = null;
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.serial.then(fn, fn);
    this.serial = run.catch(() => undefined);
    return run;
  }

  private setState(s: DiskState): void {
    if (this._state === s) return;
    this._state = s;
    this.options.log.info({ disk: this.name, alien: this.alien, state: s }, `disk ${this.name} is ${s}`);
    this.options.onStateChange?.(s);
  }

  private async goNotReady(reason: string): Promise<void> {
    this.stopMonitor();
    if (this._state === 'NotReady' && this.vdisks.size === 0) return;
    this.setState('NotReady');
    const errs = await this.stopVdisks();
    for (const e of errs) this.options.log.warn({ disk: this.name, err: e.message }, 'partition not closed cleanly');
    this.options.log.info({ disk: this.name, reason }, `disk ${this.name} out of service`);
  }

  private async stopVdisks(): Promise<Error[]> {
    const entries = [...this.vdisks.entries()];
    this.vdisks.clear();
    this.replicas.clear();
    this.byId = null;
    // A vdisk that never finished opening knows only part of its records.
    const serving = entries.filter(([, g]) => g.isOpen);
    const errs = await Promise.all(entries.map(([, g]) => g.stop()));
    // After stop: the writes in flight are done and counted.
    for (const [key, g] of serving) this.bounds.set(key, g.newestPossible);
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
   * Checks the disk's identity; true when it is this node's disk, false for
   * a disk never initialised (no identity, not in the node's record: the
   * caller initialises it or not). Throws a refusal otherwise.
   */
  private async checkIdentity(identity: NonNullable<DiskOptions['identity']>, hasRoot: boolean): Promise<boolean> {
    const { node, disk, state } = identity;
    const where = this.options.diskPath;
    let found: DiskIdentity | null;
    try {
      found = await readIdentity(where);
    } catch (err) {
      throw this.refuse('unreadable_identity', `disk ${disk} at ${where}: ${(err as Error).message}`);
    }
    const known = state.idOf(disk);
    if (found) {
      if (found.node !== node || found.disk !== disk) {
        throw this.refuse('foreign_identity', `disk ${disk} at ${where} holds disk ${found.disk} of node ${found.node} (${IDENTITY_FILE}); nothing is written there`);
      }
      if (known !== undefined && known !== found.id) {
        throw this.refuse('foreign_identity', `disk ${disk} at ${where} has id ${found.id}, but this node initialised disk ${disk} with id ${known}: another disk of that name; nothing is written there`);
      }
      if (!this.alien) await state.record(disk, found.id);
      this.unrefuse();
      return true;
    }
    if (known !== undefined || this.alien) {
      throw this.refuse(
        'no_identity',
        `disk ${disk} at ${where} has no ${IDENTITY_FILE}, but this node initialised it (id ${known ?? 'unknown'}): not mounted, or replaced? ` +
          `Nothing is written there. Mount it, or accept an empty replacement with POST /disks/${disk}/accept`,
      );
    }
    // A disk prepared before identities existed (bob's, or an earlier Oyster's): its data makes it this node's.
    if (hasRoot) {
      await this.initialise(identity);
      this.options.log.info({ disk, path: where }, `disk ${disk}: data without an identity; ${IDENTITY_FILE} written`);
      return true;
    }
    return false;
  }

  private async initialise({ node, disk, state }: NonNullable<DiskOptions['identity']>): Promise<void> {
    const id = newIdentity(node, disk);
    await writeIdentity(this.options.diskPath, id);
    await state.record(disk, id.id);
    this.unrefuse();
  }

  private refuse(reason: Refusal['reason'], message: string): Error {
    if (this._refusal?.message !== message) {
      this._refusal = { reason, message };
      this.options.onRefusal?.(this._refusal);
    }
    return errors.diskNotReady(`${this.name}: refused: ${message}`);
  }

  private unrefuse(): void {
    if (this._refusal === null) return;
    this._refusal = null;
    this.options.onRefusal?.(null);
  }

  /**
   * Accepts an empty disk found in place of one this node initialised (a
   * replaced disk): gives it a new identity, records it, and starts it; its
   * vdisks are then refilled by anti-entropy. Rejects with Conflict unless
   * the disk was refused and holds no data.
   */
  accept(): Promise<void> {
    return this.exclusive(async () => {
      const identity = this.options.identity;
      if (!identity || this.alien) throw errors.conflict(`disk ${this.name} has no identity to accept`);
      if (this._refusal === null) throw errors.conflict(`disk ${this.name} is not refused: nothing to accept`);
      const entries = await fs.promises.readdir(this.options.root).catch(() => [] as string[]);
      if (entries.length > 0) {
        throw errors.conflict(`disk ${this.name} at ${this.options.diskPath} holds data in ${this.options.root}: only an empty disk can be accepted as a replacement`);
      }
      await this.initialise(identity);
      this.options.log.warn({ disk: this.name, path: this.options.diskPath }, `disk ${this.name} accepted as a replacement; anti-entropy refills it from the other replicas`);
    }).then(() => this.start(true));
  }

  /** Vdisks keyed "<vdisk>" (normal) or "<owner>/<vdisk>" (alien). */
  private async discoverVdisks(): Promise<Array<[string, Vdisk]>> {
    if (!this.options.alien) {
      return this.options.vdisks.map((v) => [`${v}`, this.options.makeVdisk(path.join(this.options.root, String(v)), v)]);
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
        found.push([`${owner.name}/${vdisk}`, this.options.makeVdisk(path.join(ownerDir, v.name), vdisk)]);
      }
    }
    return found;
  }

  private scheduleRetry(): void {
    if (this.closed || this.retryTimer) return;
    const delay = Math.min(this.options.retryMaxMs, this.options.retryInitialMs * 2 ** this.retryAttempt);
    this.retryAttempt++;
    this.options.log.info({ disk: this.name, delayMs: delay }, `retrying disk ${this.name} later`);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.start().catch(() => undefined); // a failure schedules the next attempt
    }, delay);
    this.retryTimer.unref();
  }

  private cancelRetry(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
  }

  /** Looks at the free space and changes `writable` when it crossed min_free_space (logged once per change). */
  private async checkSpace(): Promise<void> {
    const st = await fs.promises.statfs(this.options.root).catch(() => null);
    if (!st) return; // the monitor's stat of the root reports a disk that is gone
    const free = st.bavail * st.bsize;
    const m = this.options.minFreeSpace;
    const min = 'bytes' in m ? m.bytes : Math.ceil((st.blocks * st.bsize * m.percent) / 100);
    const writable = free >= min;
    this.fullness = `${this.name}: ${mib(free)} free, below min_free_space (${mib(min)}); writes resume once space is freed`;
    if (writable === this._writable) return;
    this._writable = writable;
    if (writable) this.options.log.info({ disk: this.name, alien: this.alien, freeBytes: free, minFreeBytes: min }, `disk ${this.name} takes writes again`);
    else this.options.log.warn({ disk: this.name, alien: this.alien, freeBytes: free, minFreeBytes: min }, `disk ${this.name} is full: ${mib(free)} free, below min_free_space (${mib(min)}); writes refused, reads go on`);
    this.options.onWritableChange?.(writable);
  }

  private startMonitor(): void {
    this.stopMonitor();
    this.monitorTimer = setInterval(() => {
      if (this._state !== 'Ready') return;
      void this.checkSpace();
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

// Which failures mean "this disk is gone or broken" (the disk goes NotReady
// and is retried later) rather than a problem of one request.
const DEVICE_ERRNO = new Set(['EIO', 'ENOENT', 'ENOTDIR', 'EROFS', 'ENODEV', 'ENXIO', 'ESTALE', 'EACCES', 'EPERM', 'EBADF']);

export function isDiskFailure(err: unknown): boolean {
  if (isEngineError(err, EngineErrorCode.io)) return err.syscallCode !== undefined && DEVICE_ERRNO.has(err.syscallCode);
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' && DEVICE_ERRNO.has(code);
}

const NO_SPACE_ERRNO = new Set(['ENOSPC', 'EDQUOT']);

/** Whether the disk (or the user's quota on it) is full: the request fails, the disk stays in service. */
export function isNoSpace(err: unknown): boolean {
  if (isEngineError(err, EngineErrorCode.io)) return err.syscallCode !== undefined && NO_SPACE_ERRNO.has(err.syscallCode);
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' && NO_SPACE_ERRNO.has(code);
}
