// Grinder: coordinates the data operations a client sends to this node
// (REST /data, gRPC without force_node) over the replicas of the key's vdisk.
//
// Every write is stamped here with a version from the node's clock, so that
// it is ordered after every write this node has acknowledged or seen.
//
// quorum: a PUT goes to every replica at once and succeeds once `quorum`
// replicas acknowledged; replicas that failed get alien copies on other
// nodes (or here). As in bob, the PUT also succeeds below quorum when every
// failed replica's copy was stored as an alien. A DELETE writes tombstones
// the same way. A large value arriving in pieces goes to the replicas that
// are up as it comes where all of them can take it so (putInParts): no node
// holds it whole, so the alien copies of the replicas that were down or
// failed it are read back from one that took it, and written on this node.
//
// A GET asks one replica (this node when it is one) for the record and the
// others for its version only, skips peers known to be down, and answers
// once enough replicas answered that every acknowledged write is among them
// (R + W > N), without waiting for the slowest; the value is fetched from
// another replica only when that one holds a newer version. A replica misses
// a write only when it failed, and then an alien copy exists, so when a
// replica cannot answer (or none knows the key) the alien copies on the
// other nodes are consulted too. Replicas that answered with an older record
// get the newest one back (read repair). When no replica of a vdisk could
// answer, GET and Exist fail: absence is never reported for a key nobody
// could be asked about.
import { errors, isOysterError, OysterError } from '../model/errors';
import { groupByVdisk, keySpread, vdiskOf } from '../keys/distribution';
import { Logger } from '../logging/logger';
import { VersionClock } from '../model/clock';
import { compareRecords, compareVersions, KeyState, StoredRecord, StoredTombstone, StoredValue, Version } from '../model/version';
import { IncomingValue, isIncoming, isOpened, OpenedValue } from '../model/value';
import { DataApi } from '../model/data-api';
import { mapAnswer, MaybePromise } from '../model/maybe-promise';
import { NodeStore } from '../store/node-store';
import { Gathering } from './gathering';
import { ExistAnswer, NodeApi } from '../model/node-api';
import { ReadRepair, RepairSource } from './read-repair';
import { SupportNodes } from './support-nodes';
import { Topology } from '../model/topology';
import { ValueRoom } from '../model/pushed-value';
import { teeValue } from './value-tee';
import { copyWithin } from '../model/read-value';

export type ClusterPolicy = 'quorum' | 'simple';

export interface GrinderParts {
  topology: Topology;
  local: NodeStore;
  peers: Map<string, NodeApi>;
  support: SupportNodes;
  quorum: number;
  policy: ClusterPolicy;
  clock: VersionClock;
  /** Whether a node is reachable (the link manager's view; always true for this node). */
  isAvailable: (node: string) => boolean;
  /** Writes the newest record back to replicas a read found stale. */
  repair?: ReadRepair;
  log: Logger;
  /** Called when no replica of a vdisk could answer a read (metrics hang on it). */
  onUnanswered?: (operation: 'get' | 'exist', vdisk: number) => void;
  /** What a value streamed to several nodes is held within where one of them must read it whole (a replica out of service). */
  budget: ValueRoom;
}

export class Grinder implements DataApi {
  private readonly topology: Topology;
  private readonly log: Logger;
  private readonly clock: VersionClock;
  private readonly lastUnansweredLog = new Map<number, number>();

  constructor(private readonly parts: GrinderParts) {
    this.topology = parts.topology;
    this.log = parts.log;
    this.clock = parts.clock;
  }

  private node(name: string): NodeApi {
    if (name === this.topology.self.name) return this.parts.local;
    const peer = this.parts.peers.get(name);
    if (!peer) throw errors.internal(`no client for node ${name}`);
    return peer;
  }

  private vdiskOf(key: Buffer): number {
    return vdiskOf(key, this.topology.vdiskCount);
  }

  private otherNodes(): string[] {
    const self = this.topology.self.name;
    return this.topology.nodes.map((n) => n.name).filter((n) => n !== self);
  }

  /** The version of a write coordinated now: at bob's `timestamp` when the client chose one. */
  private stamp(timestamp: number | undefined): Version {
    return timestamp === undefined ? this.clock.now() : this.clock.at(timestamp);
  }

  // ------------------------------------------------------------------- PUT

  async put(key: Buffer, incoming: Buffer | IncomingValue, timestamp?: number): Promise<Version> {
    const vdisk = this.vdiskOf(key);
    const targets = this.topology.targetNodes(vdisk);
    const self = this.topology.self.name;
    // A value that arrives in pieces is written as it comes into the
    // replicas on this node and sent on in parts to those on Oyster peers
    // that are up; the replicas down get alien copies here afterwards. It is
    // held whole only where a replica that is up takes whole values (a bob
    // node) or none is up (alien copies elsewhere need the value in hand).
    if (isIncoming(incoming)) {
      const up = targets.filter((n) => this.parts.isAvailable(n));
      if (up.length > 0 && (await this.allTakeParts(up, key))) {
        if (targets.length === 1 && targets[0] === self) {
          const version = this.stamp(timestamp);
          await this.parts.local.putIncoming(key, version, incoming);
          return version;
        }
        const down = targets.filter((n) => !up.includes(n));
        return this.putInParts(key, vdisk, up, down, incoming, this.stamp(timestamp));
      }
    }
    const value = isIncoming(incoming) ? await incoming.whole() : incoming;
    const version = this.stamp(timestamp);
    const quorum = this.parts.quorum;
    const failed: string[] = [];
    // Replicas that refused the write for want of space get no alien copies:
    // a full disk could not take them back, so they would only pile up.
    let full: Error | null = null;
    let acked = 0;
    // Replica writes still running when the quorum was reached.
    let running: Promise<unknown> | null = null;
    const onFailure = (node: string, err: Error) => {
      if (isOysterError(err, 'NoSpace')) full ??= err;
      else failed.push(node);
      this.log.debug({ node, vdisk, err: err.message }, 'replica write failed');
    };
    if (targets.length === 1) {
      // One node holds every replica: nothing can answer early.
      try {
        await this.node(targets[0]).put(key, version, value, []);
        acked = this.topology.replicasOn(vdisk, targets[0]).length;
      } catch (err) {
        onFailure(targets[0], err as Error);
      }
    } else {
      const writes = targets.map((n) => ({ node: n, done: this.node(n).put(key, version, value, []) }));
      let pending = writes.length;
      await new Promise<void>((resolve) => {
        const settled = () => {
          if (--pending === 0 || acked >= quorum) resolve();
        };
        for (const w of writes) {
          w.done.then(
            () => {
              acked += this.topology.replicasOn(vdisk, w.node).length;
              settled();
            },
            (err: Error) => {
              onFailure(w.node, err);
              settled();
            },
          );
        }
      });
      if (pending > 0) running = Promise.allSettled(writes.map((w) => w.done));
    }
    if (this.parts.policy === 'simple') {
      if (acked >= quorum) return version;
      throw errors.failed(`put reached ${acked} of ${quorum} replicas`);
    }
    if (acked >= quorum) {
      if (running === null && failed.length === 0) return version;
      // The other replicas finish in the background; those that fail get alien copies.
      void (running ?? Promise.resolve()).then(async () => {
        if (failed.length === 0) return;
        await this.putAliens(vdisk, key, value, version, [...failed]).catch((err: Error) =>
          this.log.error({ vdisk, owners: failed, err: err.message }, 'alien copies of a write could not be stored'),
        );
      });
      return version;
    }
    if (full) throw full;
    await this.putAliens(vdisk, key, value, version, failed);
    return version;
  }

  /** Whether every node of `targets` takes a value of `key` in parts now. */
  private async allTakeParts(targets: string[], key: Buffer): Promise<boolean> {
    const answers = await Promise.all(targets.map((n) => this.node(n).takesParts(key)));
    return answers.every((yes) => yes);
  }

  /**
   * A value written into the replicas on the nodes `up` as it arrives, in
   * parts to the peers (teeValue: its memory the client's windows). It
   * succeeds as a put does: once `quorum` replicas hold it, or below that
   * once every replica that failed it, or is on a node `down`, has an alien
   * copy. No node holds the value whole, so the alien copies are written
   * here afterwards, read again from a replica that took it
   * (putAliensFrom); in the background when the quorum was reached.
   */
  private async putInParts(key: Buffer, vdisk: number, up: string[], down: string[], incoming: IncomingValue, version: Version): Promise<Version> {
    const tee = teeValue(incoming, up.length, this.parts.budget);
    const writes = up.map((n, i) => {
      const value = tee.values[i];
      // A node that failed lets go of the value at once: the others go on without it.
      return this.node(n)
        .putIncoming(key, version, value)
        .catch((err: unknown) => {
          value.cancel();
          throw err;
        })
        .finally(() => value.release());
    });
    const settled = await Promise.allSettled(writes);
    let acked = 0;
    let full: Error | null = null;
    const holders: string[] = [];
    const failed = [...down];
    settled.forEach((r, i) => {
      if (r.status === 'fulfilled') {
        acked += this.topology.replicasOn(vdisk, up[i]).length;
        holders.push(up[i]);
        return;
      }
      this.log.debug({ node: up[i], vdisk, err: (r.reason as Error).message }, 'replica write in parts failed');
      // Replicas that refused it for want of space get no alien copies, as in put().
      if (isOysterError(r.reason, 'NoSpace')) full ??= r.reason as Error;
      else failed.push(up[i]);
    });
    // The client's own failure is its answer (it went away, or its body found no room).
    const source = tee.failure();
    if (source !== null) throw source;
    if (this.parts.policy === 'simple') {
      if (acked >= this.parts.quorum) return version;
      throw errors.failed(`put reached ${acked} of ${this.parts.quorum} replicas`);
    }
    if (acked >= this.parts.quorum) {
      if (failed.length > 0) {
        void this.putAliensFrom(holders, key, version, failed).catch((err: Error) =>
          this.log.error({ vdisk, owners: failed, err: err.message }, 'alien copies of a write could not be stored'),
        );
      }
      return version;
    }
    if (full) throw full;
    if (holders.length === 0) throw errors.failed(`put reached 0 of ${this.parts.quorum} replicas`);
    await this.putAliensFrom(holders, key, version, failed);
    return version;
  }

  /**
   * Alien copies here for `owners` of the value at `version`, read again a
   * part at a time from one of `holders` (this node first), nodes whose
   * replicas took it. Nothing to do once a holder has a newer record of the
   * key: the write that made it has its own copies.
   */
  private async putAliensFrom(holders: string[], key: Buffer, version: Version, owners: string[]): Promise<void> {
    const self = this.topology.self.name;
    let lastErr: unknown = null;
    for (const holder of [...holders].sort((a, b) => Number(b === self) - Number(a === self))) {
      try {
        const record = await this.node(holder).get(key, 'normal', true);
        const order = record === null ? -1 : compareVersions(record.version, version);
        if (record === null || order !== 0 || record.kind !== 'found') {
          if (isOpened(record)) record.reader.close();
          if (order > 0) return;
          throw errors.failed(`${holder} no longer holds the value written`);
        }
        if (!isOpened(record)) return await this.parts.local.put(key, version, record.value, owners);
        try {
          return await copyWithin(this.parts.budget, record, (value) => this.parts.local.putAliensIncoming(key, version, value, owners));
        } finally {
          record.reader.close();
        }
      } catch (err) {
        lastErr = err;
      }
    }
    throw failedEverywhere(`no alien copy could be written for ${owners.join(', ')}`, lastErr);
  }

  /** Stores alien copies for `owners` on support nodes, falling back to this node. */
  private async putAliens(vdisk: number, key: Buffer, value: Buffer, version: Version, owners: string[]): Promise<void> {
    const { left } = await this.onSupportNodes('alien copy', vdisk, key, owners, (holder, owner) =>
      this.node(holder).put(key, version, value, [owner]),
    );
    for (const owner of left) {
      try {
        await this.parts.local.put(key, version, value, [owner]);
      } catch (err) {
        throw failedEverywhere(`no replica and no alien copy could be written for ${owner}`, err);
      }
    }
  }

  /**
   * Runs `store` for each owner on a support node chosen for it (one at a
   * time); returns the owners no support node took and the nodes that did.
   */
  private async onSupportNodes(
    what: string,
    vdisk: number,
    key: Buffer,
    owners: string[],
    store: (holder: string, owner: string) => Promise<void>,
  ): Promise<{ left: string[]; used: Set<string> }> {
    const holders = this.parts.support.choose(vdisk, owners.length, key);
    const left: string[] = [];
    const used = new Set<string>();
    for (const [i, owner] of owners.entries()) {
      const holder = holders[i];
      if (holder === undefined) {
        left.push(owner);
        continue;
      }
      try {
        await store(holder, owner);
        used.add(holder);
        this.log.debug({ owner, holder, vdisk }, `${what} stored`);
      } catch (err) {
        this.log.debug({ owner, holder, vdisk, err: (err as Error).message }, `${what} on support node failed`);
        left.push(owner);
      }
    }
    return { left, used };
  }

  // ------------------------------------------------------------------- GET

  get(key: Buffer): MaybePromise<StoredValue | null>;
  get(key: Buffer, open: boolean): MaybePromise<StoredValue | OpenedValue | null>;
  get(key: Buffer, open = false): MaybePromise<StoredValue | OpenedValue | null> {
    const vdisk = this.vdiskOf(key);
    const targets = this.topology.targetNodes(vdisk);
    const localAliens = this.parts.policy === 'quorum' && this.parts.local.holdsAliens(vdisk);
    // This node the vdisk's only replica, and no alien copies here: what it
    // holds is the answer, unless it holds nothing (alien copies elsewhere
    // are asked below, with this answer in hand).
    if (targets.length === 1 && targets[0] === this.topology.self.name && !localAliens) {
      const own = this.parts.local.get(key, 'normal', open);
      if (!(own instanceof Promise)) return own !== null ? this.answer(own) : this.gather(key, vdisk, targets, localAliens, Promise.resolve(own), open);
      // A failed read is asked again below, with the other places (an
      // answer that reaches gather is null or a failure: nothing opened).
      const again = () => this.gather(key, vdisk, targets, localAliens, own as Promise<StoredRecord | null>, open);
      return own.then((r) => (r !== null ? this.answer(r) : again()), again);
    }
    return this.gather(key, vdisk, targets, localAliens, null, open);
  }

  /** The newest record in hand is the answer: the clock follows it. */
  private answer<R extends StoredRecord | OpenedValue>(record: R): Exclude<R, StoredTombstone> | null {
    this.clock.observe(record.version);
    return record.kind === 'found' ? (record as Exclude<R, StoredTombstone>) : null;
  }

  /**
   * get() over the replicas and alien copies; `own` is this node's answer
   * when it was asked already. With `open`, the replica asked for the
   * record (this node's or an Oyster peer's) may leave a large value
   * opened: it is the answer if it is the newest (the caller closes it),
   * closed here if not.
   */
  private async gather(
    key: Buffer,
    vdisk: number,
    targets: string[],
    localAliens: boolean,
    own: Promise<StoredRecord | null> | null,
    open: boolean,
  ): Promise<StoredValue | OpenedValue | null> {
    const self = this.topology.self.name;
    // Versions first: one replica — this node when it is one — is asked for
    // the record, the others for its version; peers known to be down are
    // not asked at all.
    const up = targets.filter((n) => this.parts.isAvailable(n));
    const primary = up.includes(self) ? self : up[keySpread(key) % Math.max(1, up.length)];
    const replicas = new Gathering<ReplicaAnswer>(
      up.map((n) => ({
        node: n,
        weight: this.topology.replicasOn(vdisk, n).length,
        done: n !== primary ? mapAnswer(this.node(n).exist([key], 'normal'), (a) => a[0]) : ((n === self && own) || this.node(n).get(key, 'normal', open)),
      })),
    );
    const aliensHere: Promise<StoredRecord | OpenedValue | null> | null = localAliens ? Promise.resolve(this.parts.local.get(key, 'alien', open)).catch(() => null) : null;
    // Records fetched besides the replicas' answers: alien copies found on
    // other nodes, once asked, and bob peers' records.
    const elsewhere = new Set<StoredRecord | OpenedValue>();
    // Where the records besides the replicas' answers came from, alien
    // copies here included: read repair reads a large value from there again.
    const sources = new Map<StoredRecord | OpenedValue, RepairSource>();
    let record: StoredRecord | OpenedValue | null = null;
    const closeUnless = (r: ReplicaAnswer) => {
      if (isOpened(r) && r !== record) r.reader.close();
    };
    try {
      await replicas.until(this.readQuorum(vdisk, up));
      if (replicas.answeredWeight === 0) throw this.unanswered('get', vdisk, replicas.failures(), targets.length - up.length);
      record = await this.newest(key, primary, up.length < targets.length, replicas, aliensHere, elsewhere, sources, open);
    } finally {
      // Opened values that are not the answer are closed, and once every
      // replica answered read repair looks at every answer, the slow ones too.
      void aliensHere?.then(closeUnless);
      for (const r of elsewhere) closeUnless(r);
      const settled = () => {
        for (const a of replicas.answers()) closeUnless(a.value);
        if (record !== null) this.repairStale(key, record, replicas, sources.get(record));
      };
      if (replicas.complete) settled();
      else void replicas.all().then(settled);
    }
    if (record !== null) this.clock.observe(record.version);
    return record?.kind === 'found' ? record : null;
  }

  /** The newest of the answers in hand, the alien copies' and bob peers' records added, with its value. */
  private async newest(
    key: Buffer,
    primary: string,
    missing: boolean,
    replicas: Gathering<ReplicaAnswer>,
    aliensHere: Promise<StoredRecord | OpenedValue | null> | null,
    elsewhere: Set<StoredRecord | OpenedValue>,
    sources: Map<StoredRecord | OpenedValue, RepairSource>,
    open: boolean,
  ): Promise<StoredRecord | OpenedValue | null> {
    // Records in hand first: of equal versions, the one with its value is kept.
    const answers = replicas.answers();
    const here = aliensHere ? await aliensHere : null;
    if (here !== null) sources.set(here, { node: this.topology.self.name, store: 'alien' });
    let newest: ReplicaAnswer = here;
    for (const a of answers) if (a.node === primary) newest = newerAnswer(newest, a.value);
    for (const a of answers) if (a.node !== primary) newest = newerAnswer(newest, a.value);
    // A replica misses a write only when it failed, and then an alien copy exists.
    if (this.parts.policy === 'quorum' && (missing || replicas.failures().length > 0 || newest === null)) {
      for (const { node, record } of await this.aliensElsewhere(key, open)) {
        elsewhere.add(record);
        sources.set(record, { node, store: 'alien' });
        newest = newerAnswer(record, newest);
      }
    }
    // Answers of bob peers carry no version: their records are fetched (and
    // closed with the alien copies unless one is the answer).
    for (const a of answers) {
      if (a.value === null || a.value.version !== null) continue;
      const r = await Promise.resolve(this.node(a.node).get(key, 'normal', open)).catch(() => null);
      if (r !== null) {
        elsewhere.add(r);
        sources.set(r, { node: a.node, store: 'normal' });
      }
      newest = newerAnswer(r, newest);
    }
    return this.withValue(key, newest, answers, open);
  }

  /**
   * Replicas (by weight) a read waits for: enough that every set of them
   * shares a replica with every set a write is acknowledged by (R + W > N,
   * R at least the quorum), or every reachable one when fewer are.
   */
  private readQuorum(vdisk: number, up: string[]): number {
    const all = this.topology.vdisk(vdisk)?.replicas.length ?? 0;
    const reachable = up.reduce((a, n) => a + this.topology.replicasOn(vdisk, n).length, 0);
    return Math.min(Math.max(this.parts.quorum, all - this.parts.quorum + 1), reachable);
  }

  /** The alien copies of key held on the other reachable nodes. */
  private async aliensElsewhere(key: Buffer, open: boolean): Promise<Array<{ node: string; record: StoredRecord | OpenedValue }>> {
    const others = this.otherNodes().filter((n) => this.parts.isAvailable(n));
    const settled = await Promise.allSettled(others.map((n) => this.node(n).get(key, 'alien', open)));
    return settled.flatMap((s, i) => (s.status === 'fulfilled' && s.value !== null ? [{ node: others[i], record: s.value }] : []));
  }

  /**
   * The newest record with its value: the answer itself when it carries one,
   * else fetched from a replica that reported that version (or a newer one,
   * if a write came meanwhile).
   */
  private async withValue(
    key: Buffer,
    newest: ReplicaAnswer,
    answers: Array<{ node: string; value: ReplicaAnswer }>,
    open: boolean,
  ): Promise<StoredRecord | OpenedValue | null> {
    if (newest === null || newest.version === null) return null;
    if (newest.kind === 'deleted' || 'value' in newest || isOpened(newest)) return newest as StoredRecord | OpenedValue;
    const want = newest as KeyState;
    let lastError: unknown = null;
    for (const a of answers) {
      if (a.value === null || a.value.version === null || compareRecords(a.value as KeyState, want) !== 0) continue;
      try {
        const r = await this.node(a.node).get(key, 'normal', open);
        if (r !== null && compareRecords(r, want) >= 0) return r;
        if (isOpened(r)) r.reader.close();
      } catch (err) {
        lastError = err;
      }
    }
    throw errors.unavailable(`the replicas that reported the newest version of the key could not deliver it${lastError ? `: ${(lastError as Error).message}` : ''}`);
  }

  /** Read repair: the replicas that answered with an older record get the newest. */
  private repairStale(key: Buffer, record: StoredRecord | OpenedValue, replicas: Gathering<ReplicaAnswer>, source?: RepairSource): void {
    const stale = replicas
      .answers()
      .filter((a) => a.value === null || (a.value.version !== null && compareRecords(a.value as KeyState, record) < 0))
      .map((a) => a.node);
    if (stale.length === 0) return;
    if (!isOpened(record)) return this.parts.repair?.schedule(key, record, stale);
    // A value left opened is read again for its repair, from a replica that
    // reported its version, or from where it was fetched: an alien copy, a
    // bob peer.
    const holder = replicas.answers().find((a) => a.value !== null && a.value.version !== null && compareRecords(a.value as KeyState, record) === 0);
    const from: RepairSource = holder ? { node: holder.node, store: 'normal' } : (source ?? { node: this.topology.self.name, store: 'normal' });
    this.parts.repair?.schedule(key, record, stale, from);
  }

  // ----------------------------------------------------------------- EXIST

  async exist(keys: Buffer[]): Promise<boolean[]> {
    const byVdisk = groupByVdisk(keys, this.topology.vdiskCount);
    // Keys whose answer needs the alien copies on other nodes.
    const toAliens: number[] = [];
    const newest = new Array<ExistAnswer>(keys.length).fill(null);
    await Promise.all(
      [...byVdisk].map(async ([vdisk, idx]) => {
        const subset = idx.map((i) => keys[i]);
        const targets = this.topology.targetNodes(vdisk);
        const up = targets.filter((n) => this.parts.isAvailable(n));
        const replicas = new Gathering<ExistAnswer[]>(
          up.map((n) => ({
            node: n,
            weight: this.topology.replicasOn(vdisk, n).length,
            done: this.node(n).exist(subset, this.parts.policy === 'simple' ? 'all' : 'normal'),
          })),
        );
        const aliensHere =
          this.parts.policy === 'quorum' && this.parts.local.holdsAliens(vdisk) ? Promise.resolve(this.parts.local.exist(subset, 'alien')).catch(() => null) : Promise.resolve(null);
        await replicas.until(this.readQuorum(vdisk, up));
        if (replicas.answeredWeight === 0) throw this.unanswered('exist', vdisk, replicas.failures(), targets.length - up.length);
        const answers = [...replicas.answers().map((a) => a.value), await aliensHere].filter((a): a is ExistAnswer[] => a !== null);
        const missing = up.length < targets.length || replicas.failures().length > 0;
        idx.forEach((keyIndex, j) => {
          for (const a of answers) newest[keyIndex] = newerAnswer(newest[keyIndex], a[j]);
          if (missing || newest[keyIndex]?.kind !== 'found') toAliens.push(keyIndex);
        });
      }),
    );
    if (toAliens.length > 0 && this.parts.policy === 'quorum') {
      const subset = toAliens.map((i) => keys[i]);
      const others = this.otherNodes().filter((n) => this.parts.isAvailable(n));
      const answers = await Promise.allSettled(others.map((n) => this.node(n).exist(subset, 'alien')));
      toAliens.forEach((keyIndex, j) => {
        for (const a of answers) if (a.status === 'fulfilled') newest[keyIndex] = newerAnswer(newest[keyIndex], a.value[j]);
      });
    }
    return newest.map((s) => s?.kind === 'found');
  }

  // ---------------------------------------------------------------- DELETE

  async delete(key: Buffer, timestamp?: number): Promise<Version> {
    const version = this.stamp(timestamp);
    const vdisk = this.vdiskOf(key);
    const targets = this.topology.targetNodes(vdisk);
    const results = await Promise.allSettled(
      targets.map((n) => this.node(n).delete(key, version, { isAlien: false, forceAlienNodes: [] })),
    );
    const failed = targets.filter((_, i) => results[i].status === 'rejected');
    if (this.parts.policy === 'simple') {
      const ok = targets.filter((_, i) => results[i].status === 'fulfilled').reduce((a, n) => a + this.topology.replicasOn(vdisk, n).length, 0);
      if (ok >= this.parts.quorum) return version;
      throw errors.failed(`delete reached ${ok} of ${this.parts.quorum} replicas`);
    }
    // Owners that missed the tombstone get a forced alien tombstone elsewhere.
    const { left, used } = await this.onSupportNodes('alien tombstone', vdisk, key, failed, (holder, owner) =>
      this.node(holder).delete(key, version, { isAlien: true, forceAlienNodes: [owner] }),
    );
    // Alien copies held anywhere must not outlive the delete.
    const others = this.otherNodes().filter((n) => !used.has(n));
    await Promise.allSettled(others.map((n) => this.node(n).delete(key, version, { isAlien: true, forceAlienNodes: [] })));
    try {
      await this.parts.local.delete(key, version, { isAlien: true, forceAlienNodes: left });
    } catch (err) {
      if (left.length > 0) throw failedEverywhere(`tombstones could not be written for ${left.join(', ')}`, err);
    }
    return version;
  }

  /**
   * The error of a read no replica of the vdisk could answer: a damaged
   * record as it is, anything else as unavailability, logged (once per 5 s
   * per vdisk: a vdisk out of service fails every read) and counted.
   */
  private unanswered(operation: 'get' | 'exist', vdisk: number, failures: unknown[], down: number): OysterError {
    const damaged = failures.find((r) => isOysterError(r, 'Corruption'));
    if (damaged) return damaged as OysterError;
    const causes = failures.map((r) => String((r as Error)?.message ?? r));
    if (down > 0) causes.push(`${down} replica node${down === 1 ? '' : 's'} down`);
    this.parts.onUnanswered?.(operation, vdisk);
    const now = Date.now();
    if (now - (this.lastUnansweredLog.get(vdisk) ?? 0) >= 5000) {
      this.lastUnansweredLog.set(vdisk, now);
      this.log.warn({ operation, vdisk, causes }, 'no replica of the vdisk could answer; the read failed');
    }
    return errors.unavailable(`no replica of vdisk ${vdisk} could answer: ${causes.join('; ')}`);
  }
}

/** A replica's answer to a read: its record (the replica asked for it) or its version only. */
type ReplicaAnswer = StoredRecord | OpenedValue | ExistAnswer;

/**
 * The newer of two answers; of equal ones, the first. An answer without a
 * version (a bob peer's "present") counts only while no versioned answer is
 * known.
 */
function newerAnswer<T extends ReplicaAnswer>(a: T, b: T): T {
  if (a === null) return b;
  if (b === null) return a;
  if (a.version === null) return b.version === null ? a : b;
  if (b.version === null) return a;
  return compareRecords(b as KeyState, a as KeyState) > 0 ? b : a;
}

// Nothing could be stored anywhere: keep the cause's kind, so that a disk
// that is not ready still reads as unavailable (503), not as an internal fault.
function failedEverywhere(what: string, cause: unknown): OysterError {
  const kind = cause instanceof OysterError ? cause.kind : 'Internal';
  return new OysterError(kind, `${what}: ${(cause as Error).message}`);
}
