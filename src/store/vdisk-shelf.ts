// The records a vdisk keeps of what it read (its shelf of the node's
// RecordCache), valid for the partitions as they were read: a new shelf
// once they change. `writes` moves as every write of the vdisk starts and
// ends: an answer read while it moved may be older than what the engine
// holds, and is not kept.
import type { EngineSet } from './engine';
import { RecordCache, RecordShelf } from './record-cache';

export class VdiskShelf {
  writes = 0;
  private shelf: RecordShelf | null = null;
  private of: EngineSet | null = null;

  constructor(private readonly records: RecordCache | undefined) {}

  /** The shelf of the records read from `set`; null without a cache. */
  for(set: EngineSet): RecordShelf | null {
    if (set !== this.of) {
      if (this.records === undefined) return null;
      this.shelf?.drop();
      this.shelf = this.records.newShelf();
      this.of = set;
    }
    return this.shelf;
  }

  /** A write of key starts or ends: what was kept of it may be older than what the engine holds. */
  forget(key: Buffer): void {
    this.writes++;
    this.shelf?.forget(key);
  }

  /** The partitions close: nothing kept stays. */
  drop(): void {
    this.shelf?.drop();
    this.shelf = null;
    this.of = null;
  }
}
