// Backend: this node's storage — one controller per local disk and one for
// the alien directory — and the routing of local operations to them.
// A write to a local replica whose disk fails goes to the
// alien directory for this node instead, as in bob.
import { GetSource } from '../model/node-api';
import { Topology } from '../model/topology';
import { Logger } from '../logging/logger';
import { compareRecords, compareVersions, KeyState, newerOf, StoredRecord, Version } from '../model/version';
import { DiskController } from './disk-controller';
import { errors, isOysterError, OysterError } from './errors';
import { Group } from './group';
import { settleAll } from './settle';


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

  /**
   * This node's replica of the vdisk as other nodes see it (anti-entropy
   * compares it): the first local replica whose disk serves.
   */
  replicaGroup(vdisk: number): LocalReplica {
    const local = this.localGroups(vdisk);
    if (local.length === 0) throw errors.noReplica(this.selfName, vdisk);
    const ready = local.find((l) => l.disk.isReady && l.disk.group(vdisk));
    if (!ready) throw errors.diskNotReady(local.map((l) => l.disk.name).join(', '));
    return ready;
  }

  /** Whether alien copies of the vdisk's records may be here (an alien partition of it is open). */
  holdsAliens(vdisk: number): boolean {
    return this.alien.isReady && this.alien.servesVdisk(vdisk);
  }

  // ------------------------------------------------------------------ puts

  /** Writes every local replica of the vdisk; a replica that fails is written to alien/<self> instead. */
  async put(vdisk: number, key: Buffer, version: Version, value: Buffer): Promise<void> {
    const local = this.localGroups(vdisk);
    if (local.length === 0) throw errors.noReplica(this.selfName, vdisk);
    const results = await settleAll(local.map((l) => l.disk.use(() => l.group().put(key, version, value))));
    let fallback: Promise<void> | null = null;
    for (const [i, r] of results.entries()) {
      if (r.status === 'fulfilled') continue;
      this.warnRateLimited(local[i].disk.name, { vdisk, err: (r.reason as Error).message }, 'local replica write failed; writing an alien copy');
      fallback ??= this.putAlien(this.selfName, vdisk, key, version, value).catch((alienErr: Error) => {
        // Full disks everywhere: say so (507, RESOURCE_EXHAUSTED), not "unavailable".
        const full = isOysterError(r.reason, 'NoSpace') && isOysterError(alienErr, 'NoSpace');
        throw new OysterError(
          full ? 'NoSpace' : 'RequestFailedCompletely',
          `Request failed on both stages local and alien: local error: ${(r.reason as Error).message}\nalien error: ${alienErr.message}`,
        );
      });
    }
    if (fallback) await fallback;
  }

  /** Stores a record held for another node in alien/<owner>/<vdisk>. */
  async putAlien(owner: string, vdisk: number, key: Buffer, version: Version, value: Buffer): Promise<void> {
    await this.alien.use(async () => (await this.alien.alienGroup(owner, vdisk, true))!.put(key, version, value));
  }

  // ------------------------------------------------------------------ reads

  /**
   * The newest record of key on this node, in the places `source` names
   * (see places()). Never older than what this node acknowledged: a place
   * that cannot be read fails the read unless what the others answered is
   * known to be at least as new as anything it holds (see newestAnswer).
   */
  async get(vdisk: number, key: Buffer, source: GetSource = 'all'): Promise<StoredRecord | null> {
    const places = this.places(vdisk, source);
    if (places.length === 1) return places[0].run((g) => g.get(key));
    const settled = await Promise.allSettled(places.map((p) => p.run((g) => g.get(key))));
    return newestAnswer(settled, places, (r: StoredRecord | null) => r);
  }

  /** The newest state of each key, as get() finds it (the same places, the same refusals). */
  async exists(vdisk: number, keys: Buffer[], source: GetSource = 'all'): Promise<Array<KeyState | null>> {
    // A node without a replica of the vdisk has nothing to report for NORMAL (bob's Exist does not fail there).
    if (source === 'normal' && this.localGroups(vdisk).length === 0) return keys.map(() => null);
    const places = this.places(vdisk, source);
    if (places.length === 1) return places[0].run((g) => g.exists(keys));
    const settled = await Promise.allSettled(places.map((p) => p.run((g) => g.exists(keys))));
    const out: Array<KeyState | null> = keys.map(() => null);
    keys.forEach((_, i) => {
      out[i] = newestAnswer(settled, places, (states: Array<KeyState | null>) => states[i]);
    });
    return out;
  }

  // ---------------------------------------------------------------- deletes

  /** Tombstones on every local replica; a replica that fails gets an alien tombstone for this node. */
  async delete(vdisk: number, key: Buffer, version: Version): Promise<void> {
    const local = this.localGroups(vdisk);
    if (local.length === 0) throw errors.noReplica(this.selfName, vdisk);
    const results = await Promise.allSettled(local.map((l) => l.disk.use(() => l.group().delete(key, version))));
    if (results.some((r) => r.status === 'rejected')) await this.deleteAlien(this.selfName, vdisk, key, version, true);
    // Alien copies held for this node must not outlive the delete either.
    else await this.deleteAlien(this.selfName, vdisk, key, version, false).catch(() => undefined);
  }

  /**
   * Tombstone in alien/<owner>/<vdisk>: always when `force` (the owner missed
   * the delete), otherwise only where an older alien copy of the key exists.
   */
  async deleteAlien(owner: string, vdisk: number, key: Buffer, version: Version, force: boolean): Promise<void> {
    await this.alien.use(async () => {
      const g = await this.alien.alienGroup(owner, vdisk, force);
      if (!g) return;
      if (!force) {
        const [r] = await g.exists([key]);
        if (r?.kind !== 'found' || compareRecords(r, { kind: 'deleted', version }) > 0) return;
      }
      await g.delete(key, version);
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

  /**
   * The places a vdisk's records may be on this node, each able to run an
   * operation on its group: for "normal" the local replicas and the alien
   * copies held for them (alien/<self>, written while a replica could not
   * take a write); for "alien" the alien copies of every owner; both for "all".
   */
  private places(vdisk: number, source: GetSource): Place[] {
    const out: Place[] = [];
    if (source !== 'alien') {
      const local = this.localGroups(vdisk);
      if (source === 'normal' && local.length === 0) throw errors.noReplica(this.selfName, vdisk);
      for (const l of local) out.push({ replica: true, bound: () => l.disk.newestPossible(vdisk), run: (op) => l.disk.use(() => op(l.group())) });
    }
    // Asked for alien copies alone, an alien directory out of service cannot say what it holds.
    if (source === 'alien' && !this.alien.isReady) out.push({ replica: false, bound: () => null, run: () => Promise.reject(errors.diskNotReady(this.alien.name)) });
    for (const { owner, group } of this.alien.isReady ? this.alien.alienGroups() : []) {
      if (group.vdisk !== vdisk || (source === 'normal' && owner !== this.selfName)) continue;
      out.push({ replica: false, bound: () => null, run: (op) => this.alien.use(() => op(group)) });
    }
    return out;
  }
}

/** A place holding records of a vdisk: a local replica, or an alien directory. */
interface Place {
  replica: boolean;
  /** An upper bound of the versions the place holds, when known (Group.newestPossible). */
  bound(): Version | null;
  run<T>(op: (g: Group) => Promise<T>): Promise<T>;
}

/**
 * The newest record among the places' answers (`pick` selects one key's
 * answer), or the failure of a place that could hold a newer one.
 *
 * A place that failed is passed over only when it cannot hold anything newer
 * than the answer: its bound is older than the answer (the disk went out of
 * service before that write), or it is a local replica while another local
 * replica and every alien place answered — every write acknowledged here is
 * on each local replica that was in service when it came, or in alien/<self>.
 * A record that failed its checksum is passed over only when the answer is
 * newer than it.
 */
function newestAnswer<T, R extends KeyState>(settled: Array<PromiseSettledResult<T>>, places: Place[], pick: (answer: T) => R | null): R | null {
  let best: R | null = null;
  let replicaAnswered = false;
  let alienFailed = false;
  for (const [i, s] of settled.entries()) {
    if (s.status === 'fulfilled') {
      best = newerOf(best, pick(s.value));
      if (places[i].replica) replicaAnswered = true;
    } else if (!places[i].replica) {
      alienFailed = true;
    }
  }
  for (const [i, s] of settled.entries()) {
    if (s.status === 'fulfilled') continue;
    const damaged = isOysterError(s.reason, 'Corruption') ? s.reason.version : undefined;
    if (damaged) {
      if (best !== null && compareRecords(best, { kind: 'deleted', version: damaged }) > 0) continue;
      throw s.reason;
    }
    const bound = places[i].bound();
    if (best !== null && bound !== null && compareVersions(best.version, bound) > 0) continue;
    if (places[i].replica && replicaAnswered && !alienFailed) continue;
    throw s.reason;
  }
  return best;
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
