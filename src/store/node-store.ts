// NodeStore: this node's storage — one Disk per local disk and one for the
// alien directory — behind the storage contract of src/model/node-api.ts.
// It routes each key to the local replicas of its vdisk and to the alien
// copies, and answers with the newest record among them. A write to a local
// replica whose disk fails goes to the alien directory for this node
// instead, as in bob.
import { groupByVdisk, vdiskOf } from '../keys/distribution';
import { Logger } from '../logging/logger';
import { VersionClock } from '../model/clock';
import { errors, isOysterError, OysterError } from '../model/errors';
import { MaybePromise } from '../model/maybe-promise';
import { IncomingValue, isOpened, OpenedValue, writeInLots } from '../model/value';
import { DeleteOptions, GetSource, NodeApi } from '../model/node-api';
import { Topology } from '../model/topology';
import { compareRecords, KeyState, StoredRecord, Version } from '../model/version';
import { Disk } from './disk';
import { IndexBlockCache, PutStream } from './engine';
import { RecordCache } from './record-cache';
import { NodeState } from './identity';
import { AlienPlace, fulfilled, LocalReplica, newestAnswer, Place, rejected } from './place';

export interface NodeStoreParts {
  topology: Topology;
  /** The local disks, in cluster.yaml order. */
  disks: Disk[];
  alien: Disk;
  /** How many disks start at once (init_par_degree). */
  startParallelism: number;
  /** Sees every version written here, so that this node's next stamp is later. */
  clock: VersionClock;
  /** The node's record of its disks' identities, loaded at start. */
  state: NodeState;
  /** What the node keeps of what it read, for every partition (read_cache_size). */
  readCache: ReadCache;
  log: Logger;
}

/** The node's read cache: records read (Vdisk) and index blocks (the engines). */
export interface ReadCache {
  records: RecordCache;
  indexBlocks: IndexBlockCache;
}

export class NodeStore implements NodeApi {
  readonly topology: Topology;
  readonly disks: Disk[];
  readonly alien: Disk;
  readonly readCache: ReadCache;
  private readonly byName = new Map<string, Disk>();
  private readonly clock: VersionClock;
  private readonly state: NodeState;
  private readonly log: Logger;
  private readonly startParallelism: number;
  private readonly lastWarning = new Map<string, number>();
  private readonly replicas = new Map<number, LocalReplica[]>();

  constructor(parts: NodeStoreParts) {
    this.topology = parts.topology;
    this.disks = parts.disks;
    this.alien = parts.alien;
    this.clock = parts.clock;
    this.state = parts.state;
    this.readCache = parts.readCache;
    this.log = parts.log;
    this.startParallelism = Math.max(1, parts.startParallelism);
    for (const d of this.disks) this.byName.set(d.name, d);
  }

  get name(): string {
    return this.topology.self.name;
  }

  /**
   * Starts every disk; a disk that cannot start stays NotReady (and is
   * retried) without stopping the node. Rejects only when the node's state
   * file cannot be read.
   */
  async start(): Promise<void> {
    await this.state.load();
    const start = (d: Disk) => d.start().catch((err: Error) => this.log.error({ disk: d.name, alien: d.alien, err: err.message }, `disk ${d.name} did not start`));
    let next = 0;
    const worker = async () => {
      while (next < this.disks.length) await start(this.disks[next++]);
    };
    await Promise.all(Array.from({ length: Math.min(this.startParallelism, this.disks.length) }, worker));
    // After the disks: the alien directory checks the identity its disk wrote.
    await start(this.alien);
  }

  async close(): Promise<void> {
    await Promise.all([...this.disks, this.alien].map((d) => d.close()));
  }

  /** The disks named `name`: the local disk and, if the alien directory lives on it, the alien one. */
  disksNamed(name: string): Disk[] {
    return [...this.disks, this.alien].filter((d) => d.name === name);
  }

  /** The local replicas of a vdisk (the topology is fixed: built once per vdisk). */
  localReplicas(vdisk: number): readonly LocalReplica[] {
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
  servingReplica(vdisk: number): LocalReplica {
    const local = this.localReplicas(vdisk);
    if (local.length === 0) throw errors.noReplica(this.name, vdisk);
    const ready = local.find((l) => l.disk.isReady && l.disk.vdisks.replica(vdisk));
    if (!ready) throw errors.diskNotReady(local.map((l) => l.disk.name).join(', '));
    return ready;
  }

  /** Whether alien copies of the vdisk's records may be here (an alien partition of it is open). */
  holdsAliens(vdisk: number): boolean {
    return this.alien.isReady && this.alien.vdisks.holdsAliensOf(vdisk);
  }

  // ------------------------------------------------------------ the contract

  put(key: Buffer, version: Version, value: Buffer, remoteNodes: string[]): Promise<void> {
    this.clock.observe(version);
    if (remoteNodes.length === 0) return this.putReplicas(this.vdiskOf(key), key, version, value);
    return this.putAliens(key, version, value, remoteNodes);
  }

  /** This node takes any value in parts. */
  takesParts(): boolean {
    return true;
  }

  /**
   * Written as it comes (Vdisk.beginStream) into every local replica in
   * service, and into an alien copy for this node where one is out of
   * service, as put() would fall back to. A replica refusing it for want of
   * space refuses the write before any of it is written. A place that fails
   * mid-value fails the write (the bytes that passed are not kept to be
   * written elsewhere): every stream is aborted, nothing becomes readable,
   * and the caller gets the error.
   */
  async putIncoming(key: Buffer, version: Version, value: IncomingValue): Promise<void> {
    this.clock.observe(version);
    const vdisk = this.vdiskOf(key);
    const local = this.localReplicas(vdisk);
    if (local.length === 0) {
      value.cancel();
      throw errors.noReplica(this.name, vdisk);
    }
    const serving = local.filter((r) => r.disk.isReady);
    const places: StreamPlace[] = serving.map((r) => ({ disk: r.disk, begin: () => r.vdisk().beginStream(key, version, value.size) }));
    if (serving.length < local.length) places.push(this.alienPlace(this.name, vdisk, key, version, value.size));
    await streamInto(places, value);
  }

  /**
   * put() with `remoteNodes` of a value that arrives in parts: one alien copy
   * here for each owner, written as the value comes. Rejects as put() does;
   * a failure leaves none of the copies readable.
   */
  async putAliensIncoming(key: Buffer, version: Version, value: IncomingValue, owners: string[]): Promise<void> {
    this.clock.observe(version);
    const vdisk = this.vdiskOf(key);
    try {
      this.knownOwners(owners);
    } catch (err) {
      value.cancel();
      throw err;
    }
    await streamInto(
      [...new Set(owners)].map((owner) => this.alienPlace(owner, vdisk, key, version, value.size)),
      value,
    );
  }

  /** Where a value streamed into alien/<owner>/<vdisk> goes. */
  private alienPlace(owner: string, vdisk: number, key: Buffer, version: Version, size: number): StreamPlace {
    return { disk: this.alien, begin: async () => (await this.alien.alienVdisk(owner, vdisk, true))!.beginStream(key, version, size) };
  }

  get(key: Buffer, source: GetSource): MaybePromise<StoredRecord | null>;
  get(key: Buffer, source: GetSource, open: boolean): MaybePromise<StoredRecord | OpenedValue | null>;
  get(key: Buffer, source: GetSource, open = false): MaybePromise<StoredRecord | OpenedValue | null> {
    let places: readonly Place[];
    try {
      places = this.places(this.vdiskOf(key), source);
    } catch (err) {
      return Promise.reject(err);
    }
    if (places.length === 1) return places[0].run((g) => g.get(key, open));
    return Promise.allSettled(places.map((p) => p.run((g) => g.get(key, open)))).then((settled) => {
      const best = newestAnswer(settled, places, (r: StoredRecord | OpenedValue | null) => r);
      // The values opened elsewhere are not read.
      for (const s of settled) if (s.status === 'fulfilled' && s.value !== best && isOpened(s.value)) s.value.reader.close();
      return best;
    });
  }

  exist(keys: Buffer[], source: GetSource): MaybePromise<Array<KeyState | null>> {
    // One key (a coordinator asking for a version): no grouping by vdisk, and
    // answered at once when memory holds its state.
    if (keys.length === 1) return this.existIn(this.vdiskOf(keys[0]), keys, source);
    return this.existMany(keys, source);
  }

  private async existMany(keys: Buffer[], source: GetSource): Promise<Array<KeyState | null>> {
    const out: Array<KeyState | null> = keys.map(() => null);
    for (const [vdisk, idx] of groupByVdisk(keys, this.topology.vdiskCount)) {
      const states = await this.existIn(vdisk, idx.map((i) => keys[i]), source);
      states.forEach((s, j) => (out[idx[j]] = s));
    }
    return out;
  }

  async delete(key: Buffer, version: Version, options: DeleteOptions): Promise<void> {
    this.clock.observe(version);
    const vdisk = this.vdiskOf(key);
    if (!options.isAlien) return this.deleteReplicas(vdisk, key, version);
    const failures: Error[] = [];
    for (const owner of this.topology.targetNodes(vdisk)) {
      try {
        await this.deleteAlien(owner, vdisk, key, version, options.forceAlienNodes.includes(owner));
      } catch (err) {
        failures.push(err as Error);
      }
    }
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1) throw errors.failed(`Multiple errors detected: ${failures.map((e) => e.message).join('; ')}`);
  }

  // ------------------------------------------------------------------ writes

  /**
   * put() into the local replicas of `vdisk`; a replica that fails is written
   * to alien/<self> instead — unless it is full: then the write is refused
   * (NoSpace), as alien copies would pile up that the full disk could not take back.
   */
  private async putReplicas(vdisk: number, key: Buffer, version: Version, value: Buffer): Promise<void> {
    const local = this.localReplicas(vdisk);
    if (local.length === 0) throw errors.noReplica(this.name, vdisk);
    // One replica (the usual case): awaited directly, without allSettled's machinery.
    const results =
      local.length === 1
        ? [await local[0].write((v) => v.put(key, version, value)).then(fulfilled, rejected)]
        : await Promise.allSettled(local.map((l) => l.write((v) => v.put(key, version, value))));
    let fallback: Promise<void> | null = null;
    let full: unknown = null;
    for (const [i, r] of results.entries()) {
      if (r.status === 'fulfilled') continue;
      if (isOysterError(r.reason, 'NoSpace')) {
        full ??= r.reason;
        continue;
      }
      this.warnRateLimited(local[i].disk.name, { vdisk, err: (r.reason as Error).message }, 'local replica write failed; writing an alien copy');
      fallback ??= this.putAlien(this.name, vdisk, key, version, value).catch((alienErr: Error) => {
        // No room for the alien copy: say so (507, RESOURCE_EXHAUSTED), not "unavailable".
        throw new OysterError(
          isOysterError(alienErr, 'NoSpace') ? 'NoSpace' : 'RequestFailedCompletely',
          `Request failed on both stages local and alien: local error: ${(r.reason as Error).message}\nalien error: ${alienErr.message}`,
        );
      });
    }
    if (fallback) await fallback;
    if (full) throw full;
  }

  private async putAliens(key: Buffer, version: Version, value: Buffer, remoteNodes: string[]): Promise<void> {
    const vdisk = this.vdiskOf(key);
    this.knownOwners(remoteNodes);
    // Each owner once: a name repeated in the request needs no second copy.
    for (const owner of new Set(remoteNodes)) await this.putAlien(owner, vdisk, key, version, value);
  }

  /** Throws InvalidArgument for an owner not in the cluster: its copies could never be delivered. */
  private knownOwners(owners: string[]): void {
    for (const owner of owners) {
      if (!this.topology.node(owner)) throw new OysterError('InvalidArgument', `remote node ${JSON.stringify(owner)} is not in the cluster`);
    }
  }

  /** Stores a record held for another node in alien/<owner>/<vdisk>. */
  private async putAlien(owner: string, vdisk: number, key: Buffer, version: Version, value: Buffer): Promise<void> {
    await this.alien.write(async () => (await this.alien.alienVdisk(owner, vdisk, true))!.put(key, version, value));
  }

  /** Tombstones on every local replica; a replica that fails gets an alien tombstone for this node. */
  private async deleteReplicas(vdisk: number, key: Buffer, version: Version): Promise<void> {
    const local = this.localReplicas(vdisk);
    if (local.length === 0) throw errors.noReplica(this.name, vdisk);
    const results = await Promise.allSettled(local.map((l) => l.run((v) => v.delete(key, version))));
    if (results.some((r) => r.status === 'rejected')) await this.deleteAlien(this.name, vdisk, key, version, true);
    // Alien copies held for this node must not outlive the delete either.
    else await this.deleteAlien(this.name, vdisk, key, version, false).catch(() => undefined);
  }

  /**
   * Tombstone in alien/<owner>/<vdisk>: always when `force` (the owner missed
   * the delete), otherwise only where an older alien copy of the key exists.
   */
  private async deleteAlien(owner: string, vdisk: number, key: Buffer, version: Version, force: boolean): Promise<void> {
    await this.alien.use(async () => {
      const v = await this.alien.alienVdisk(owner, vdisk, force);
      if (!v) return;
      if (!force) {
        const [r] = await v.exists([key]);
        if (r?.kind !== 'found' || compareRecords(r, { kind: 'deleted', version }) > 0) return;
      }
      await v.delete(key, version);
    });
  }

  // ------------------------------------------------------------------- reads

  /** The newest state of each key of one vdisk, as get() finds it (the same places, the same refusals). */
  private existIn(vdisk: number, keys: Buffer[], source: GetSource): MaybePromise<Array<KeyState | null>> {
    // A node without a replica of the vdisk has nothing to report for NORMAL (bob's Exist does not fail there).
    if (source === 'normal' && this.localReplicas(vdisk).length === 0) return keys.map(() => null);
    let places: readonly Place[];
    try {
      places = this.places(vdisk, source);
    } catch (err) {
      return Promise.reject(err);
    }
    if (places.length === 1) return places[0].run((g) => g.exists(keys));
    return Promise.allSettled(places.map((p) => p.run((g) => g.exists(keys)))).then((settled) =>
      keys.map((_, i) => newestAnswer(settled, places, (states: Array<KeyState | null>) => states[i])),
    );
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

  private vdiskOf(key: Buffer): number {
    return vdiskOf(key, this.topology.vdiskCount);
  }

  /**
   * The places a vdisk's records may be on this node, each able to run an
   * operation on its Vdisk: for "normal" the local replicas and the alien
   * copies held for this node (alien/<self>, written while a replica could
   * not take a write); for "alien" the alien copies of every owner; both for "all".
   */
  private places(vdisk: number, source: GetSource): readonly Place[] {
    // Most reads: the local replicas alone (no alien copy held for this node), without a new list.
    if (source === 'normal' && this.alien.isReady && !this.alien.vdisks.aliensOf(vdisk).some((a) => a.owner === this.name)) {
      const local = this.localReplicas(vdisk);
      if (local.length > 0) return local;
    }
    const out: Place[] = [];
    if (source !== 'alien') {
      const local = this.localReplicas(vdisk);
      if (source === 'normal' && local.length === 0) throw errors.noReplica(this.name, vdisk);
      out.push(...local);
    }
    const wanted = (owner: string) => source !== 'normal' || owner === this.name;
    if (this.alien.isReady) {
      for (const { owner, vdisk: v } of this.alien.vdisks.aliensOf(vdisk)) if (wanted(owner)) out.push(new AlienPlace(this.alien, v, null));
      return out;
    }
    // Out of service, the alien directory holds what it held when it went
    // down (nothing is written there meanwhile): those places fail, so an
    // answer stands only when it is newer than what they hold — and when it
    // is not known what they hold, no answer stands.
    const held = this.alien.aliensHeldWhenDown(vdisk);
    if (held === null) out.push(new AlienPlace(this.alien, null, null));
    else for (const h of held) if (wanted(h.owner)) out.push(new AlienPlace(this.alien, null, h.bound));
    return out;
  }
}

/** A place a value is streamed into: the disk its writes run under (Disk.use), and its stream's beginning. */
export interface StreamPlace {
  disk: Disk;
  begin: () => Promise<PutStream>;
}

/**
 * Writes the value into every place as it comes; all or none: a place that
 * cannot begin or fails mid-value aborts every stream and stops the value.
 * `pace`, when given, is awaited before each lot's bytes are written.
 */
export async function streamInto(places: StreamPlace[], value: IncomingValue, pace?: (bytes: number) => Promise<void>): Promise<void> {
  const begun = await Promise.allSettled(places.map((p) => p.disk.write(p.begin)));
  const streams = begun.flatMap((b) => (b.status === 'fulfilled' ? [b.value] : []));
  try {
    for (const b of begun) if (b.status === 'rejected') throw b.reason;
    await writeInLots(value, async (pieces) => {
      if (pace !== undefined) await pace(pieces.reduce((n, p) => n + p.length, 0));
      await Promise.all(streams.map((s, i) => places[i].disk.use(() => s.append(pieces))));
    });
    await Promise.all(streams.map((s, i) => places[i].disk.use(() => s.finish())));
  } catch (err) {
    value.cancel();
    await Promise.all(streams.map((s) => s.abort().catch(() => undefined)));
    throw err;
  }
}
