// Grinder: coordinates the data operations a client sends to this node
// (REST /data, gRPC without force_node) over the replicas of the key's vdisk
// (DESIGN §6, reference §4.4–§4.5).
//
// quorum: a PUT goes to every replica at once and succeeds once `quorum`
// replicas acknowledged; replicas that failed get alien copies on other
// nodes (or here). As in bob, the PUT also succeeds below quorum when every
// failed replica's copy was stored as an alien. A GET returns the newest
// version among the replicas' answers (not the first answer, as bob does),
// consulting alien copies when no replica has the key. A DELETE writes
// tombstones the same way.
import { errors, OysterError } from '../backend/errors';
import { settleAll } from '../backend/settle';
import { vdiskOf } from '../keys/distribution';
import { Logger } from '../logging/logger';
import { DataApi } from './data-api';
import { LocalNode } from './local-node';
import { KeyState, NodeApi, Version } from './node-api';
import { SupportNodes } from './support-nodes';
import { Topology } from './topology';

export type ClusterPolicy = 'quorum' | 'simple';

export interface GrinderParts {
  topology: Topology;
  local: LocalNode;
  peers: Map<string, NodeApi>;
  support: SupportNodes;
  quorum: number;
  policy: ClusterPolicy;
  log: Logger;
}

export class Grinder implements DataApi {
  private readonly topology: Topology;
  private readonly log: Logger;

  constructor(private readonly parts: GrinderParts) {
    this.topology = parts.topology;
    this.log = parts.log;
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

  // ------------------------------------------------------------------- PUT

  async put(key: Buffer, value: Buffer, timestamp: number): Promise<void> {
    const vdisk = this.vdiskOf(key);
    const targets = this.topology.targetNodes(vdisk);
    const quorum = this.parts.quorum;
    const failed: string[] = [];
    let acked = 0;
    // Replica writes still running when the quorum was reached.
    let running: Promise<unknown> | null = null;
    const onFailure = (node: string, err: Error) => {
      failed.push(node);
      this.log.debug({ node, vdisk, err: err.message }, 'replica write failed');
    };
    if (targets.length === 1) {
      // One node holds every replica: nothing can answer early.
      try {
        await this.node(targets[0]).put(key, value, timestamp, []);
        acked = this.topology.replicasOn(vdisk, targets[0]).length;
      } catch (err) {
        onFailure(targets[0], err as Error);
      }
    } else {
      const writes = targets.map((n) => ({ node: n, done: this.node(n).put(key, value, timestamp, []) }));
      let pending = writes.length;
      await new Promise<void>((resolve) => {
        for (const w of writes) {
          w.done
            .then(
              () => (acked += this.topology.replicasOn(vdisk, w.node).length),
              (err: Error) => onFailure(w.node, err),
            )
            .finally(() => {
              if (--pending === 0 || acked >= quorum) resolve();
            });
        }
      });
      if (pending > 0) running = Promise.allSettled(writes.map((w) => w.done));
    }
    if (this.parts.policy === 'simple') {
      if (acked >= quorum) return;
      throw errors.failed(`put reached ${acked} of ${quorum} replicas`);
    }
    if (acked >= quorum) {
      if (running === null && failed.length === 0) return;
      // The other replicas finish in the background; those that fail get alien copies.
      void (running ?? Promise.resolve()).then(async () => {
        if (failed.length === 0) return;
        await this.putAliens(vdisk, key, value, timestamp, [...failed]).catch((err: Error) =>
          this.log.error({ vdisk, owners: failed, err: err.message }, 'alien copies of a write could not be stored'),
        );
      });
      return;
    }
    await this.putAliens(vdisk, key, value, timestamp, failed);
  }

  /** Stores alien copies for `owners` on support nodes, falling back to this node. */
  private async putAliens(vdisk: number, key: Buffer, value: Buffer, timestamp: number, owners: string[]): Promise<void> {
    const { left } = await this.onSupportNodes('alien copy', vdisk, key, owners, (holder, owner) =>
      this.node(holder).put(key, value, timestamp, [owner]),
    );
    for (const owner of left) {
      try {
        await this.parts.local.put(key, value, timestamp, [owner]);
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

  async get(key: Buffer): Promise<{ timestamp: number; value: Buffer } | null> {
    const vdisk = this.vdiskOf(key);
    const targets = this.topology.targetNodes(vdisk);
    const self = this.topology.self.name;
    // This node the only replica and no alien copies to consult: a version
    // found here at once is the answer (a key found nowhere takes the long
    // way, which asks the other nodes for alien copies).
    if (targets.length === 1 && targets[0] === self && !(this.parts.policy === 'quorum' && this.parts.local.holdsAliens(vdisk))) {
      const now = this.parts.local.getNow(key);
      if (now) return now.kind === 'found' ? { timestamp: now.timestamp, value: now.value } : null;
    }
    const reads = targets.map((n) => this.node(n).get(key, 'normal'));
    if (this.parts.policy === 'quorum' && this.parts.local.holdsAliens(vdisk)) reads.push(this.parts.local.get(key, 'alien'));
    const settled = await settleAll(reads);
    let newest = newestVersion(settled);
    if (newest === null && this.parts.policy === 'quorum') {
      // No replica knows the key: copies may be held as aliens elsewhere.
      const others = this.topology.nodes.map((n) => n.name).filter((n) => n !== self);
      const alienReads = await Promise.allSettled(others.map((n) => this.node(n).get(key, 'alien')));
      newest = newestVersion(alienReads);
      if (newest === null && settled.slice(0, targets.length).every((s) => s.status === 'rejected')) {
        throw firstReason(settled) ?? errors.failed('no replica answered');
      }
    }
    if (newest === null && settled.every((s) => s.status === 'rejected')) throw firstReason(settled)!;
    return newest?.kind === 'found' ? { timestamp: newest.timestamp, value: newest.value } : null;
  }

  // ----------------------------------------------------------------- EXIST

  async exist(keys: Buffer[]): Promise<boolean[]> {
    const out = new Array<boolean>(keys.length).fill(false);
    const byVdisk = new Map<number, number[]>();
    keys.forEach((k, i) => {
      const v = this.vdiskOf(k);
      const list = byVdisk.get(v);
      if (list) list.push(i);
      else byVdisk.set(v, [i]);
    });
    const self = this.topology.self.name;
    const missing: number[] = [];
    await Promise.all(
      [...byVdisk].map(async ([vdisk, idx]) => {
        const subset = idx.map((i) => keys[i]);
        const asks = this.topology.targetNodes(vdisk).map((n) => this.node(n).exist(subset, this.parts.policy === 'simple' ? 'all' : 'normal'));
        if (this.parts.policy === 'quorum' && this.parts.local.holdsAliens(vdisk)) asks.push(this.parts.local.exist(subset, 'alien'));
        const answers = await Promise.allSettled(asks);
        idx.forEach((keyIndex, j) => {
          const states = answers.flatMap((a) => (a.status === 'fulfilled' ? [a.value[j]] : []));
          if (existsByNewest(states)) out[keyIndex] = true;
          else if (!states.some((s) => s !== null)) missing.push(keyIndex);
        });
      }),
    );
    if (missing.length > 0 && this.parts.policy === 'quorum') {
      const others = this.topology.nodes.map((n) => n.name).filter((n) => n !== self);
      const subset = missing.map((i) => keys[i]);
      const answers = await Promise.allSettled(others.map((n) => this.node(n).exist(subset, 'alien')));
      missing.forEach((keyIndex, j) => {
        const states = answers.flatMap((a) => (a.status === 'fulfilled' ? [a.value[j]] : []));
        if (existsByNewest(states)) out[keyIndex] = true;
      });
    }
    return out;
  }

  // ---------------------------------------------------------------- DELETE

  async delete(key: Buffer, timestamp: number): Promise<void> {
    const vdisk = this.vdiskOf(key);
    const targets = this.topology.targetNodes(vdisk);
    const self = this.topology.self.name;
    const results = await Promise.allSettled(
      targets.map((n) => this.node(n).delete(key, timestamp, { isAlien: false, forceAlienNodes: [] })),
    );
    const failed = targets.filter((_, i) => results[i].status === 'rejected');
    if (this.parts.policy === 'simple') {
      const ok = targets.filter((_, i) => results[i].status === 'fulfilled').reduce((a, n) => a + this.topology.replicasOn(vdisk, n).length, 0);
      if (ok >= this.parts.quorum) return;
      throw errors.failed(`delete reached ${ok} of ${this.parts.quorum} replicas`);
    }
    // Owners that missed the tombstone get a forced alien tombstone elsewhere.
    const { left, used } = await this.onSupportNodes('alien tombstone', vdisk, key, failed, (holder, owner) =>
      this.node(holder).delete(key, timestamp, { isAlien: true, forceAlienNodes: [owner] }),
    );
    // Alien copies held anywhere must not outlive the delete.
    const others = this.topology.nodes.map((n) => n.name).filter((n) => n !== self && !used.has(n));
    await Promise.allSettled(others.map((n) => this.node(n).delete(key, timestamp, { isAlien: true, forceAlienNodes: [] })));
    try {
      await this.parts.local.delete(key, timestamp, { isAlien: true, forceAlienNodes: left });
    } catch (err) {
      if (left.length > 0) throw failedEverywhere(`tombstones could not be written for ${left.join(', ')}`, err);
    }
  }
}

/** The newest version among fulfilled answers; tombstones count. */
function newestVersion(settled: Array<PromiseSettledResult<Version | null>>): Version | null {
  let best: Version | null = null;
  for (const s of settled) {
    if (s.status !== 'fulfilled' || s.value === null) continue;
    // On equal timestamps a value beats a tombstone: REST clients put, delete
    // and put again within one second, and every replica resolves that alike.
    if (best === null || s.value.timestamp > best.timestamp || (s.value.timestamp === best.timestamp && s.value.kind === 'found')) {
      best = s.value;
    }
  }
  return best;
}

/** Whether the newest known state is a value; answers without a timestamp (bob peers) count when nothing newer is known. */
function existsByNewest(states: Array<KeyState | null>): boolean {
  let newest: KeyState | null = null;
  let unversionedFound = false;
  for (const s of states) {
    if (s === null) continue;
    if (s.timestamp === undefined) {
      unversionedFound ||= s.kind === 'found';
      continue;
    }
    if (newest === null || s.timestamp! > newest.timestamp! || (s.timestamp === newest.timestamp && s.kind === 'found')) newest = s;
  }
  return newest ? newest.kind === 'found' : unversionedFound;
}

// Nothing could be stored anywhere: keep the cause's kind, so that a disk
// that is not ready still reads as unavailable (503), not as an internal fault.
function failedEverywhere(what: string, cause: unknown): OysterError {
  const kind = cause instanceof OysterError ? cause.kind : 'Internal';
  return new OysterError(kind, `${what}: ${(cause as Error).message}`);
}

function firstReason(settled: Array<PromiseSettledResult<unknown>>): OysterError | null {
  for (const s of settled) {
    if (s.status === 'rejected') return s.reason instanceof OysterError ? s.reason : errors.failed(String(s.reason?.message ?? s.reason));
  }
  return null;
}
