// ReadRepair: when the replicas' answers to a read differ, the newest record
// is written back to the replicas that answered with an older one (or with
// nothing), in the background. A replica keeps whichever record is newer in
// the order of versions, so a repair that races a newer write changes
// nothing. Bounded: at most `maxInFlight` repairs run at once and one per
// key; a repair beyond that is dropped (anti-entropy catches up later) and
// counted. A large value that was read in parts (opened) is read again
// whole from this node's storage for its repair, within the memory for
// values in flight, and held only while it is written; one this node does
// not hold (it was read from a peer) is left to anti-entropy.
import { compareRecords, StoredRecord } from '../model/version';
import { Logger } from '../logging/logger';
import { NodeApi } from '../model/node-api';
import { isOpened, OpenedValue } from '../model/value';

export type RepairOutcome = 'repaired' | 'failed' | 'dropped';

export interface ReadRepairParts {
  node: (name: string) => NodeApi;
  /**
   * This node's newest record of key, a large value read whole, and what
   * gives its memory back; null when it holds none. Rejects when there is
   * no room for it.
   */
  load: (key: Buffer) => Promise<{ record: StoredRecord; give(): void } | null>;
  maxInFlight: number;
  log: Logger;
  onRepair?: (outcome: RepairOutcome) => void;
}

export class ReadRepair {
  private inFlight = 0;
  private readonly keys = new Set<string>();

  constructor(private readonly parts: ReadRepairParts) {}

  /** Writes `record` (the newest found; opened: this node's, read again) to `nodes`, which answered with older ones. */
  schedule(key: Buffer, record: StoredRecord | OpenedValue, nodes: string[]): void {
    if (nodes.length === 0) return;
    const id = key.toString('latin1');
    if (this.inFlight >= this.parts.maxInFlight || this.keys.has(id)) {
      this.parts.onRepair?.('dropped');
      return;
    }
    this.inFlight++;
    this.keys.add(id);
    void this.repair(key, record, nodes).finally(() => {
      this.inFlight--;
      this.keys.delete(id);
    });
  }

  private async repair(key: Buffer, record: StoredRecord | OpenedValue, nodes: string[]): Promise<void> {
    if (!isOpened(record)) {
      await Promise.allSettled(nodes.map((n) => this.write(n, key, record)));
      return;
    }
    let loaded: Awaited<ReturnType<ReadRepairParts['load']>>;
    try {
      loaded = await this.parts.load(key);
    } catch (err) {
      for (const name of nodes) this.failed(name, err);
      return;
    }
    if (loaded === null) return;
    // A value read from a peer that this node holds an older version of (or
    // none) is left to anti-entropy: the peer's reader was closed with the answer.
    if (compareRecords(loaded.record, record) < 0) {
      loaded.give();
      this.parts.onRepair?.('dropped');
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

  private failed(name: string, err: unknown): void {
    this.parts.onRepair?.('failed');
    this.parts.log.debug({ node: name, err: (err as Error).message }, 'read repair failed');
  }
}
