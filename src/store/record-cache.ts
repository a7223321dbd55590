// RecordCache: the records read last, kept as JavaScript objects, so that a
// read of one of them costs a lookup in a Map — no call into the engine, no
// copy, no system call. Each vdisk keeps its records on a shelf of its own
// (Vdisk: what its partitions held when they were read), every shelf
// charging one node-wide budget (part of read_cache_size); the oldest
// entries go first, whichever shelf they are on. A shelf holds the newest record of a key as the engine
// answered it, absence and tombstones included; the vdisk forgets a key as a
// write of it starts and again as the write ends, and takes a new shelf when
// its partitions change, so that no answer from here is older than the
// engine's. Values larger than maxValue are not kept.
import { StoredRecord } from '../model/version';

/**
 * What an entry costs beyond its value: its objects on the JavaScript heap
 * (the entry, the Map's slot, the key's string, the record, its version and
 * its Buffer: about 370 bytes measured with 16-byte keys) and the memory
 * allocator's share.
 */
const ENTRY_OVERHEAD = 400;

// An entry of a shelf, and a link of the cache's queue of every entry in
// the order they were kept (the oldest goes first, whichever shelf it is on).
class Entry {
  next: Entry | null = null;
  /** Forgotten or replaced: skipped when it comes to the head of the queue. */
  dead = false;
  constructor(
    readonly shelf: RecordShelf,
    readonly k: string,
    readonly record: StoredRecord | null,
    readonly charge: number,
  ) {}
}

export interface RecordCacheStats {
  capacity: number;
  usage: number;
  entries: number;
  hits: number;
  misses: number;
}

export class RecordCache {
  private usage = 0;
  private entries = 0;
  private hits = 0;
  private misses = 0;
  private head: Entry | null = null;
  private tail: Entry | null = null;
  private queued = 0;

  constructor(
    readonly capacity: number,
    readonly maxValue = 64 * 1024,
  ) {}

  /** A shelf for one vdisk's records, until it is dropped. */
  newShelf(): RecordShelf {
    return new RecordShelf(this);
  }

  stats(): RecordCacheStats {
    return { capacity: this.capacity, usage: this.usage, entries: this.entries, hits: this.hits, misses: this.misses };
  }

  /** @internal for shelves */
  counted(hit: boolean): void {
    if (hit) this.hits++;
    else this.misses++;
  }

  /** @internal Makes room for e (false: the budget cannot hold it) and queues it. */
  admit(e: Entry): boolean {
    if (e.charge > this.capacity) return false;
    while (this.usage + e.charge > this.capacity && this.head !== null) {
      const oldest = this.pop()!;
      if (!oldest.dead) oldest.shelf.evict(oldest);
    }
    this.usage += e.charge;
    this.entries++;
    if (this.tail === null) this.head = e;
    else this.tail.next = e;
    this.tail = e;
    this.queued++;
    return true;
  }

  /** @internal An entry left its shelf: its bytes come back; its link is dropped once it is among many dead ones. */
  release(e: Entry): void {
    e.dead = true;
    this.usage -= e.charge;
    this.entries--;
    if (this.queued > 2 * this.entries + 1024) this.compact();
  }

  private pop(): Entry | null {
    const e = this.head;
    if (e === null) return null;
    this.head = e.next;
    if (this.head === null) this.tail = null;
    e.next = null;
    this.queued--;
    return e;
  }

  // Rewrites the queue without its dead links (records forgotten or
  // replaced leave them behind, and a budget never full never pops them).
  private compact(): void {
    let live: Entry | null = null;
    let last: Entry | null = null;
    let n = 0;
    for (let e = this.head; e !== null; e = e.next) {
      if (e.dead) continue;
      if (last === null) live = e;
      else last.next = e;
      last = e;
      n++;
    }
    if (last !== null) last.next = null;
    this.head = live;
    this.tail = last;
    this.queued = n;
  }
}

export class RecordShelf {
  private readonly map = new Map<string, Entry>();

  constructor(private readonly cache: RecordCache) {}

  get size(): number {
    return this.map.size;
  }

  /** The record kept for key (null: kept as absent); undefined when none is kept. */
  get(key: Buffer): StoredRecord | null | undefined {
    const e = this.map.get(key.toString('latin1'));
    this.cache.counted(e !== undefined);
    return e?.record;
  }

  /** Keeps the engine's answer for key (null: absent). */
  keep(key: Buffer, record: StoredRecord | null): void {
    if (this.cache.capacity === 0) return;
    const size = record?.kind === 'found' ? record.value.length : 0;
    if (size > this.cache.maxValue) return;
    const k = key.toString('latin1');
    this.remove(k);
    const e = new Entry(this, k, record, size + ENTRY_OVERHEAD);
    if (this.cache.admit(e)) this.map.set(k, e);
  }

  forget(key: Buffer): void {
    if (this.map.size > 0) this.remove(key.toString('latin1'));
  }

  /** Gives everything back; the shelf is not used afterwards. */
  drop(): void {
    for (const e of this.map.values()) this.cache.release(e);
    this.map.clear();
  }

  /** @internal The cache needs the room of e, the oldest entry it holds. */
  evict(e: Entry): void {
    if (this.map.get(e.k) === e) this.map.delete(e.k);
    this.cache.release(e);
  }

  private remove(k: string): void {
    const e = this.map.get(k);
    if (e === undefined) return;
    this.map.delete(k);
    this.cache.release(e);
  }
}
