// ReadRepair: when the replicas' answers to a read differ, the newest record
// is written back to the replicas that answered with an older one (or with
// nothing), in the background. A replica keeps whichever record is newer in
// the order of versions, so a repair that races a newer write changes
// nothing. Bounded: at most `maxInFlight` repairs run at once and one per
// key; a repair beyond that is dropped (anti-entropy catches up later) and
// counted.
import { StoredRecord } from '../model/version';
import { Logger } from '../logging/logger';
import { NodeApi } from '../model/node-api';

export type RepairOutcome = 'repaired' | 'failed' | 'dropped';

export interface ReadRepairParts {
  node: (name: string) => NodeApi;
  maxInFlight: number;
  log: Logger;
  onRepair?: (outcome: RepairOutcome) => void;
}

export class ReadRepair {
  private inFlight = 0;
  private readonly keys = new Set<string>();

  constructor(private readonly parts: ReadRepairParts) {}

  /** Writes `record` (the newest found) to `nodes`, which answered with older ones. */
  schedule(key: Buffer, record: StoredRecord, nodes: string[]): void {
    if (nodes.length === 0) return;
    const id = key.toString('latin1');
    if (this.inFlight >= this.parts.maxInFlight || this.keys.has(id)) {
      this.parts.onRepair?.('dropped');
      return;
    }
    this.inFlight++;
    this.keys.add(id);
    void Promise.allSettled(nodes.map((n) => this.write(n, key, record))).finally(() => {
      this.inFlight--;
      this.keys.delete(id);
    });
  }

  private async write(name: string, key: Buffer, record: StoredRecord): Promise<void> {
    const node = this.parts.node(name);
    try {
      if (record.kind === 'found') await node.put(key, record.version, record.value, []);
      else await node.delete(key, record.version, { isAlien: false, forceAlienNodes: [] });
      this.parts.onRepair?.('repaired');
    } catch (err) {
      this.parts.onRepair?.('failed');
      this.parts.log.debug({ node: name, err: (err as Error).message }, 'read repair failed');
    }
  }
}
