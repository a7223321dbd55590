// AlienHandoff: delivers the alien copies this node holds to their owners
// once the owners are reachable (beyond bob). Per alien partition: seal it
// (new alien writes go to a fresh partition, reads still see it), send the
// newest record of every key — values and tombstones, with their original
// versions — to the owner as force_node requests (a value over 64 KiB in
// parts, read as they are sent, to an owner that takes them), and remove the partition
// only when every record arrived. A failure leaves the partition in place and
// retries the owner later with back-off. Delivery is idempotent and cannot
// undo anything: the owner keeps whichever record is newer in the order of
// versions, so a copy older than what the owner holds changes nothing.
import { Logger } from '../logging/logger';
import { LinkManager } from './link-manager';
import { NodeApi } from '../model/node-api';
import { takeWhole, ValueRoom } from '../model/pushed-value';
import { copyWithin } from '../model/read-value';
import { isOpened, OpenedValue, WHOLE_UP_TO } from '../model/value';
import { Topology } from '../model/topology';
import { NodeStore } from '../store/node-store';
import { EngineSet } from '../store/engine';
import { Partition } from '../store/partition';
import { Vdisk } from '../store/vdisk';

export interface HandoffParts {
  topology: Topology;
  store: NodeStore;
  /** The owner's storage: this node's NodeStore for alien/<self>, a PeerClient otherwise. */
  nodeApi: (owner: string) => NodeApi | undefined;
  links: LinkManager;
  log: Logger;
  intervalMs: number;
  /** Records delivered at once. */
  concurrency: number;
  /** What the values in flight are held within (http_body_memory_limit): a large value's parts, or one held whole for a bob owner. */
  room: ValueRoom;
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
    const alien = this.parts.store.alien;
    if (!alien.isReady) return out;
    for (const { owner, vdisk } of alien.vdisks.aliens()) {
      out.set(owner, (out.get(owner) ?? 0) + (await vdisk.partitions.recordsCount()));
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
    const { store, links, topology } = this.parts;
    if (!store.alien.isReady) return;
    for (const { owner, vdisk } of store.alien.vdisks.aliens()) {
      if (this.stopped) return;
      const target = this.parts.nodeApi(owner);
      if (!target || !links.isAvailable(owner) || (this.retryAt.get(owner)?.at ?? 0) > Date.now()) continue;
      // Copies of this node's own replicas go home only when those disks serve again.
      if (owner === topology.self.name && !store.localReplicas(vdisk.id).every((l) => l.disk.isReady)) continue;
      // Partitions an operator detached (POST /alien/detach) and left in place are delivered too.
      await store.alien.use(() => vdisk.admin((ps) => ps.attachAll())).catch((err: Error) =>
        this.parts.log.warn({ owner, vdisk: vdisk.id, err: err.message }, 'detached alien partitions could not be attached again'),
      );
      if (!vdisk.hasPartitions) continue;
      try {
        await this.deliverVdisk(owner, vdisk, target);
        this.retryAt.delete(owner);
      } catch (err) {
        const prev = this.retryAt.get(owner)?.delayMs ?? this.parts.intervalMs / 2;
        const delayMs = Math.min(60_000, prev * 2);
        this.retryAt.set(owner, { at: Date.now() + delayMs, delayMs });
        this.parts.log.warn({ owner, vdisk: vdisk.id, err: (err as Error).message, retryInMs: delayMs }, 'alien hand-off failed; will retry');
      }
    }
  }

  private async deliverVdisk(owner: string, vdisk: Vdisk, target: NodeApi): Promise<void> {
    // Oldest partition first, so that what is left is always the newer data.
    for (const partition of [...vdisk.partitions.all].reverse()) {
      if (this.stopped) return;
      await vdisk.admin((ps) => ps.seal(partition));
      const delivered = await this.deliverPartition(partition, target);
      await vdisk.admin((ps) => ps.dropSealed(partition));
      this.parts.log.info({ owner, vdisk: vdisk.id, partition: partition.dirName, records: delivered }, 'alien partition handed over to its owner');
      this.parts.onDelivered?.(owner, delivered);
    }
  }

  private async deliverPartition(partition: Partition, target: NodeApi): Promise<number> {
    const entries = await partition.engine.snapshot();
    const records = new EngineSet([partition.engine]);
    let next = 0;
    const worker = async () => {
      while (next < entries.length) {
        const e = entries[next++];
        if (e.kind === 'deleted') {
          await target.delete(e.key, e.version, { isAlien: false, forceAlienNodes: [] });
          continue;
        }
        const r = await records.openNewest(e.key, WHOLE_UP_TO);
        if (isOpened(r)) await this.deliverLarge(partition, target, e.key, r);
        else if (r?.kind === 'found') await target.put(e.key, r.version, r.value, []);
        else if (r?.kind === 'deleted') await target.delete(e.key, r.version, { isAlien: false, forceAlienNodes: [] });
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.parts.concurrency, entries.length) }, worker));
    return entries.length;
  }

  /**
   * A value over 64 KiB goes in parts, read as they are sent, to an owner
   * that takes them; held whole, one larger than the owner's limits would
   * never arrive, and its partition never leave. A bob owner gets it whole,
   * once http_body_memory_limit has room for it. Either way its memory
   * counts against that limit, as a client's body does.
   */
  private async deliverLarge(partition: Partition, target: NodeApi, key: Buffer, opened: OpenedValue): Promise<void> {
    const { room } = this.parts;
    try {
      if (await target.takesParts(key)) return await copyWithin(room, opened, (value) => target.putIncoming(key, opened.version, value));
      await takeWhole(room, opened.size);
      try {
        const whole = await partition.engine.get(key);
        if (whole?.kind === 'found') await target.put(key, whole.version, whole.value, []);
      } finally {
        room.give(opened.size);
      }
    } finally {
      opened.reader.close();
    }
  }
}
