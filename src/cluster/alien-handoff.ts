// AlienHandoff: delivers the alien copies this node holds to their owners
// once the owners are reachable (beyond bob). Per alien partition: seal it
// (new alien writes go to a fresh partition, reads still see it), send the
// newest record of every key — values and tombstones, with their original
// versions — to the owner as force_node requests, and remove the partition
// only when every record arrived. A failure leaves the partition in place and
// retries the owner later with back-off. Delivery is idempotent and cannot
// undo anything: the owner keeps whichever record is newer in the order of
// versions, so a copy older than what the owner holds changes nothing.
import { Backend } from '../backend/backend';
import { Group } from '../backend/group';
import { Holder } from '../backend/holder';
import { Logger } from '../logging/logger';
import { LinkManager } from './link-manager';
import { NodeApi } from '../model/node-api';
import { Topology } from '../model/topology';

export interface HandoffParts {
  topology: Topology;
  backend: Backend;
  /** The owner's storage: this node's LocalNode for alien/<self>, a PeerClient otherwise. */
  nodeApi: (owner: string) => NodeApi | undefined;
  links: LinkManager;
  log: Logger;
  intervalMs: number;
  /** Records delivered at once. */
  concurrency: number;
  onDelivered?: (owner: string, records: number) => void;
}

export class AlienHandoff {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  private readonly retryAt = new Map<string, { at: number; delayMs: number }>();

  constructor(private readonly parts: HandoffParts) {}

  start(): void {
    this.schedule(this.parts.intervalMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  /** Runs a round soon (an owner just became reachable). */
  trigger(owner?: string): void {
    if (owner) this.retryAt.delete(owner);
    this.schedule(0);
  }

  /** Alien records held on this node, by owner. */
  async pending(): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    const alien = this.parts.backend.alien;
    if (!alien.isReady) return out;
    for (const { owner, group } of alien.alienGroups()) {
      out.set(owner, (out.get(owner) ?? 0) + (await group.recordsCount()));
    }
    return out;
  }

  /** One delivery round over every alien partition whose owner is reachable. */
  runOnce(): Promise<void> {
    this.running ??= this.round().finally(() => (this.running = null));
    return this.running;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      void this.runOnce().finally(() => this.schedule(this.parts.intervalMs));
    }, delayMs);
    this.timer.unref();
  }

  private async round(): Promise<void> {
    const { backend, links, topology } = this.parts;
    if (!backend.alien.isReady) return;
    for (const { owner, group } of backend.alien.alienGroups()) {
      if (this.stopped) return;
      const target = this.parts.nodeApi(owner);
      if (!target || !links.isAvailable(owner) || (this.retryAt.get(owner)?.at ?? 0) > Date.now()) continue;
      // Copies of this node's own replicas go home only when those disks serve again.
      if (owner === topology.self.name && !backend.localGroups(group.vdisk).every((l) => l.disk.isReady)) continue;
      // Partitions an operator detached (POST /alien/detach) and left in place are delivered too.
      await backend.alien.use(() => group.attachAll()).catch((err: Error) =>
        this.parts.log.warn({ owner, vdisk: group.vdisk, err: err.message }, 'detached alien partitions could not be attached again'),
      );
      if (group.partitions().length === 0) continue;
      try {
        await this.deliverGroup(owner, group, target);
        this.retryAt.delete(owner);
      } catch (err) {
        const prev = this.retryAt.get(owner)?.delayMs ?? this.parts.intervalMs / 2;
        const delayMs = Math.min(60_000, prev * 2);
        this.retryAt.set(owner, { at: Date.now() + delayMs, delayMs });
        this.parts.log.warn({ owner, vdisk: group.vdisk, err: (err as Error).message, retryInMs: delayMs }, 'alien hand-off failed; will retry');
      }
    }
  }

  private async deliverGroup(owner: string, group: Group, target: NodeApi): Promise<void> {
    // Oldest partition first, so that what is left is always the newer data.
    for (const holder of group.partitions().reverse()) {
      if (this.stopped) return;
      await group.seal(holder);
      const delivered = await this.deliverHolder(holder, target);
      await group.dropSealed(holder);
      this.parts.log.info({ owner, vdisk: group.vdisk, partition: holder.dirName, records: delivered }, 'alien partition handed over to its owner');
      this.parts.onDelivered?.(owner, delivered);
    }
  }

  private async deliverHolder(holder: Holder, target: NodeApi): Promise<number> {
    const entries = await holder.engine.snapshot();
    let next = 0;
    const worker = async () => {
      while (next < entries.length) {
        const e = entries[next++];
        if (e.kind === 'deleted') {
          await target.delete(e.key, e.version, { isAlien: false, forceAlienNodes: [] });
          continue;
        }
        const r = await holder.engine.get(e.key);
        if (r?.kind === 'found') await target.put(e.key, r.value, r.version, []);
        else if (r?.kind === 'deleted') await target.delete(e.key, r.version, { isAlien: false, forceAlienNodes: [] });
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.parts.concurrency, entries.length) }, worker));
    return entries.length;
  }
}
