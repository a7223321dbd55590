// Backend: this node's storage — one controller per local disk and one for
// the alien directory — and the routing of local operations to them
// (reference §3.2). A write to a local replica whose disk fails goes to the
// alien directory for this node instead, as in bob.
import { GetResult, LookupResult } from '../engine/engine';
import { Topology } from '../cluster/topology';
import { Logger } from '../logging/logger';
import { DiskController } from './disk-controller';
import { errors, isOysterError, OysterError } from './errors';
import { Group } from './group';
import { settleAll } from './settle';

export type GetSource = 'all' | 'normal' | 'alien';

export interface BackendParts {
  topology: Topology;
  /** Controllers of the local disks, by disk name, in cluster.yaml order. */
  disks: DiskController[];
  alien: DiskController;
  /** How many disk controllers start at once (init_par_degree). */
  startParallelism: number;
  log: Logger;
}

export class Backend {
  readonly topology: Topology;
  readonly disks: DiskController[];
  readonly alien: DiskController;
  private readonly byName = new Map<string, DiskController>();
  private readonly log: Logger;
  private readonly startParallelism: number;
  private readonly lastWarning = new Map<string, number>();
  private readonly replicas = new Map<number, LocalReplica[]>();

  constructor(parts: BackendParts) {
    this.topology = parts.topology;
    this.disks = parts.disks;
    this.alien = parts.alien;
    this.log = parts.log;
    this.startParallelism = Math.max(1, parts.startParallelism);
    for (const d of this.disks) this.byName.set(d.name, d);
  }

  get selfName(): string {
    return this.topology.self.name;
  }

  /** Starts every controller; a disk that cannot start stays NotReady (and is retried) without stopping the node. */
  async start(): Promise<void> {
    const all = [...this.disks, this.alien];
    let next = 0;
    const worker = async () => {
      while (next < all.length) {
        const c = all[next++];
        await c.start().catch((err: Error) => this.log.error({ disk: c.name, err: err.message }, `disk ${c.name} did not start`));
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.startParallelism, all.length) }, worker));
  }

  async close(): Promise<void> {
    await Promise.all([...this.disks, this.alien].map((c) => c.close()));
  }

  disk(name: string): DiskController | undefined {
    return this.byName.get(name);
  }

  /** Controllers named `name`: the local disk and, if the alien directory lives on it, the alien controller. */
  controllersNamed(name: string): DiskController[] {
    return [...this.disks, this.alien].filter((c) => c.name === name);
  }

  /** The local replicas of a vdisk with their controllers (the topology is fixed: built once per vdisk). */
  localGroups(vdisk: number): readonly LocalReplica[] {
    let local = this.replicas.get(vdisk);
    if (local === undefined) {
      local = this.topology.localReplicas(vdisk).map((r) => new LocalReplica(this.byName.get(r.disk)!, vdisk));
      this.replicas.set(vdisk, local);
    }
    return local;
  }

  /** Whether alien copies of the vdisk's records may be here (an alien partition of it is open). */
  holdsAliens(vdisk: number): boolean {
    return this.alien.isReady && this.alien.servesVdisk(vdisk);
  }

  // ------------------------------------------------------------------ puts

  /** Writes every local replica of the vdisk; a replica that fails is written to alien/<self> instead. */
  async put(vdisk: number, key: Buffer, timestamp: number, value: Buffer): Promise<void> {
    const local = this.localGroups(vdisk);
    if (local.length === 0) throw errors.internal(`node ${this.selfName} holds no replica of vdisk ${vdisk}`);
    const results = await settleAll(local.map((l) => l.disk.use(() => l.group().put(key, timestamp, value))));
    let fallback: Promise<void> | null = null;
    for (const [i, r] of results.entries()) {
      if (r.status === 'fulfilled') continue;
      this.warnRateLimited(local[i].disk.name, { vdisk, err: (r.reason as Error).message }, 'local replica write failed; writing an alien copy');
      fallback ??= this.putAlien(this.selfName, vdisk, key, timestamp, value).catch((alienErr: Error) => {
        throw new OysterError(
          'RequestFailedCompletely',
          `Request failed on both stages local and alien: local error: ${(r.reason as Error).message}\nalien error: ${alienErr.message}`,
        );
      });
    }
    if (fallback) await fallback;
  }

  /** Stores a record held for another node in alien/<owner>/<vdisk>. */
  async putAlien(owner: string, vdisk: number, key: Buffer, timestamp: number, value: Buffer): Promise<void> {
    await this.alien.use(async () => (await this.alien.alienGroup(owner, vdisk, true))!.put(key, timestamp, value));
  }

  // ------------------------------------------------------------------ reads

  /**
   * The newest record of key on this node: local replicas for "normal",
   * alien copies of any owner for "alien", both for "all". Rejects only when
   * nothing was found and some place could not be read.
   */
  async get(vdisk: number, key: Buffer, source: GetSource = 'all'): Promise<GetResult> {
    const places = this.places(vdisk, source);
    if (places.length === 1) return places[0]((g) => g.get(key));
    const settled = await Promise.allSettled(places.map((p) => p((g) => g.get(key))));
    let best: GetResult = null;
    let firstError: unknown = null;
    let corruptTs = -1;
    for (const s of settled) {
      if (s.status === 'rejected') {
        firstError ??= s.reason;
        if (isOysterError(s.reason, 'Corruption')) corruptTs = Math.max(corruptTs, s.reason.timestamp ?? 0);
        continue;
      }
      if (s.value && (best === null || s.value.timestamp > best.timestamp)) best = s.value;
    }
    // A damaged newest copy must not let an older version through.
    if (corruptTs >= 0 && (best === null || best.timestamp < corruptTs)) throw firstError;
    if (best === null && firstError !== null) throw firstError;
    return best;
  }

  /**
   * get(vdisk, key, 'normal') answered at once where that is easy: one local
   * replica, on a ready disk, answering from memory and the page cache.
   * undefined otherwise (get() then takes the long way).
   */
  getNow(vdisk: number, key: Buffer): GetResult | undefined {
    const local = this.localGroups(vdisk);
    if (local.length !== 1 || !local[0].disk.isReady) return undefined;
    return local[0].disk.group(vdisk)?.getNow(key);
  }

  async exists(vdisk: number, keys: Buffer[], source: GetSource = 'all'): Promise<LookupResult[]> {
    // bob's Exist never fails: a node without a replica has nothing to report for NORMAL.
    const places = source === 'normal' && this.localGroups(vdisk).length === 0 ? [] : this.places(vdisk, source);
    const settled = await Promise.allSettled(places.map((p) => p((g) => g.exists(keys))));
    const out: LookupResult[] = keys.map(() => null);
    for (const s of settled) {
      if (s.status === 'rejected') continue; // bob: errors count as "not found"
      s.value.forEach((r, i) => {
        if (r && (out[i] === null || r.timestamp > out[i]!.timestamp)) out[i] = r;
      });
    }
    return out;
  }

  // ---------------------------------------------------------------- deletes

  /** Tombstones on every local replica; a replica that fails gets an alien tombstone for this node. */
  async delete(vdisk: number, key: Buffer, timestamp: number): Promise<void> {
    const local = this.localGroups(vdisk);
    if (local.length === 0) throw errors.internal(`node ${this.selfName} holds no replica of vdisk ${vdisk}`);
    const results = await Promise.allSettled(local.map((l) => l.disk.use(() => l.group().delete(key, timestamp))));
    if (results.some((r) => r.status === 'rejected')) await this.deleteAlien(this.selfName, vdisk, key, timestamp, true);
    // Alien copies held for this node must not outlive the delete either.
    else await this.deleteAlien(this.selfName, vdisk, key, timestamp, false).catch(() => undefined);
  }

  /**
   * Tombstone in alien/<owner>/<vdisk>: always when `force` (the owner missed
   * the delete), otherwise only where an alien copy of the key exists.
   */
  async deleteAlien(owner: string, vdisk: number, key: Buffer, timestamp: number, force: boolean): Promise<void> {
    await this.alien.use(async () => {
      const g = await this.alien.alienGroup(owner, vdisk, force);
      if (!g) return;
      if (!force) {
        const [r] = await g.exists([key]);
        if (r?.kind !== 'found' || r.timestamp > timestamp) return;
      }
      await g.delete(key, timestamp);
    });
  }

  // ---------------------------------------------------------------- helpers

  // While a disk is down every write would log the same line: once per 5 s
  // per disk is enough (as in bob).
  private warnRateLimited(disk: string, fields: object, msg: string): void {
    const now = Date.now();
    if (now - (this.lastWarning.get(disk) ?? 0) < 5000) return;
    this.lastWarning.set(disk, now);
    this.log.warn({ disk, ...fields }, msg);
  }

  /** Functions running an operation on each place a vdisk's records may be. */
  private places(vdisk: number, source: GetSource): Array<<T>(op: (g: Group) => Promise<T>) => Promise<T>> {
    const out: Array<<T>(op: (g: Group) => Promise<T>) => Promise<T>> = [];
    if (source !== 'alien') {
      const local = this.localGroups(vdisk);
      if (source === 'normal' && local.length === 0) throw errors.internal(`node ${this.selfName} holds no replica of vdisk ${vdisk}`);
      for (const l of local) out.push((op) => l.disk.use(() => op(l.group())));
    }
    if (source !== 'normal' && this.alien.isReady) {
      for (const { group } of this.alien.alienGroups()) {
        if (group.vdisk === vdisk) out.push((op) => this.alien.use(() => op(group)));
      }
    }
    return out;
  }
}

/** One local replica of a vdisk: its disk controller and, while the disk runs, its group. */
export class LocalReplica {
  constructor(
    readonly disk: DiskController,
    readonly vdisk: number,
  ) {}

  group(): Group {
    const g = this.disk.group(this.vdisk);
    if (!g) throw errors.diskNotReady(this.disk.name);
    return g;
  }
}
