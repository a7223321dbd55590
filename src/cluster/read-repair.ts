// ReadRepair: when the replicas' answers to a read differ, the newest record
// is written back to the replicas that answered with an older one (or with
// nothing), in the background. A replica keeps whichever record is newer in
// the order of versions, so a repair that races a newer write changes
// nothing. Bounded: at most `maxInFlight` repairs run at once and one per
// key; a repair beyond that is dropped (anti-entropy catches up later) and
// counted. A large value that was read in parts (opened) is read again
// whole for its repair, from a replica that holds it, within the memory for
// values in flight, and held only while it is written; one larger than that
// memory is read again a part at a time and written to each stale node that
// takes values in parts as it is read (ReadValue), two parts at most held.
import { compareRecords, StoredRecord } from '../model/version';
import { Logger } from '../logging/logger';
import { errors } from '../model/errors';
import { NodeApi } from '../model/node-api';
import { ValueRoom } from '../model/pushed-value';
import { isOpened, OpenedValue } from '../model/value';
import { copyWithin } from '../model/read-value';

export type RepairOutcome = 'repaired' | 'failed' | 'dropped';

/** Where a large value read in parts is read again for its repair: a node's replica, or its alien copy. */
export interface RepairSource {
  node: string;
  store: 'normal' | 'alien';
}

export interface ReadRepairParts {
  node: (name: string) => NodeApi;
  /**
   * The newest record of key in `from` (of this node or a peer), a large
   * value of about `size` bytes read whole, and what gives its memory back;
   * null when it holds none. Rejects when there is no room for it.
   */
  load: (key: Buffer, from: RepairSource, size: number) => Promise<{ record: StoredRecord; give(): void } | null>;
  /** The newest record of key in `from`, a large value opened (read in parts); null when it holds none. */
  open: (key: Buffer, from: RepairSource) => Promise<StoredRecord | OpenedValue | null>;
  /** The memory for values in flight: a value larger than it is repaired in parts, which take two of them from it. */
  room: ValueRoom;
  maxInFlight: number;
  log: Logger;
  onRepair?: (outcome: RepairOutcome) => void;
}

export class ReadRepair {
  private inFlight = 0;
  private readonly keys = new Set<string>();

  constructor(private readonly parts: ReadRepairParts) {}

  /** Writes `record` (the newest found; opened: read again from `from`) to `nodes`, which answered with older ones. */
  schedule(key: Buffer, record: StoredRecord | OpenedValue, nodes: string[], from?: RepairSource): void {
    if (nodes.length === 0) return;
    const id = key.toString('latin1');
    if (this.inFlight >= this.parts.maxInFlight || this.keys.has(id)) {
      this.parts.onRepair?.('dropped');
      return;
    }
    this.inFlight++;
    this.keys.add(id);
    void this.repair(key, record, nodes, from).finally(() => {
      this.inFlight--;
      this.keys.delete(id);
    });
  }

  private async repair(key: Buffer, record: StoredRecord | OpenedValue, nodes: string[], from: RepairSource | undefined): Promise<void> {
    if (!isOpened(record)) {
      await Promise.allSettled(nodes.map((n) => this.write(n, key, record)));
      return;
    }
    if (from !== undefined && record.size > this.parts.room.limit) {
      for (const n of nodes) await this.writeInParts(n, key, record, from);
      return;
    }
    let loaded: Awaited<ReturnType<ReadRepairParts['load']>>;
    try {
      if (from === undefined) throw new Error('no place to read the value from again');
      loaded = await this.parts.load(key, from, record.size);
      // Older than the record read (its holder lost it since): nothing to repair with.
      if (loaded !== null && compareRecords(loaded.record, record) < 0) {
        loaded.give();
        loaded = null;
      }
      if (loaded === null) throw new Error(`${from.node} (${from.store}) no longer holds the version read`);
    } catch (err) {
      for (const name of nodes) this.failed(name, err);
      return;
    }
    try {
      // Newer than the record read, if a write came meanwhile: the replicas keep the newest.
      await Promise.allSettled(nodes.map((n) => this.write(n, key, loaded.record)));
    } finally {
      loaded.give();
    }
  }

  private async write(name: string, key: Buffer, record: StoredRecord): Promise<void> {
    const node = this.parts.node(name);
    try {
      if (record.kind === 'found') await node.put(key, record.version, record.value, []);
      else await node.delete(key, record.version, { isAlien: false, forceAlienNodes: [] });
      this.parts.onRepair?.('repaired');
    } catch (err) {
      this.failed(name, err);
    }
  }

  /** Writes the value of `record`, read again from `from` a part at a time, to node `name` as it is read. */
  private async writeInParts(name: string, key: Buffer, record: OpenedValue, from: RepairSource): Promise<void> {
    const node = this.parts.node(name);
    let opened: StoredRecord | OpenedValue | null = null;
    try {
      if (!(await node.takesParts(key))) throw errors.unavailable(`${name} takes no values in parts, and a value of ${record.size} bytes cannot be held whole`);
      opened = await this.parts.open(key, from);
      // Older than the record read (its holder lost it since): nothing to repair with.
      if (!isOpened(opened) || compareRecords(opened, record) < 0) throw new Error(`${from.node} (${from.store}) no longer holds the version read`);
      const value = opened;
      await copyWithin(this.parts.room, value, (v) => node.putIncoming(key, value.version, v));
      this.parts.onRepair?.('repaired');
    } catch (err) {
      this.failed(name, err);
    } finally {
      if (isOpened(opened)) opened.reader.close();
    }
  }

  private failed(name: string, err: unknown): void {
    this.parts.onRepair?.('failed');
    this.parts.log.debug({ node: name, err: (err as Error).message }, 'read repair failed');
  }
}
