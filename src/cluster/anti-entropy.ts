// AntiEntropy: brings this node's replicas up to date with the other
// replicas of their vdisks, whatever they missed — writes made while a disk
// or the node was down whose alien copies were lost, a disk replaced by an
// empty one, writes a replica took in another order. Every pass compares,
// for each local replica and each other replica of its vdisk (on another
// node, or on another disk of this one), the digests of their keys' newest
// records per bucket (built from the indexes, no value read); for the
// buckets that differ it compares the entries key by key and copies here
// every record the other replica holds in a newer version — values and
// tombstones alike, with their versions, so nothing deleted comes back and
// nothing newer is overwritten; a large value is copied as it is read, a
// part at a time, whatever its size. A replica that holds less than half of
// another's keys (a replaced disk) first copies that one's closed partition
// files whole, which is as fast as copying files, then compares keys. Each node pulls what it lacks; the
// other replicas do the same in their own passes, so all converge. Passes run
// every `intervalMs`, and soon after a peer returns or a disk comes back;
// copying is limited to `rateBytesPerSecond` of values.
import fs from 'node:fs';
import path from 'node:path';
import { NodeStore, streamInto } from '../store/node-store';
import { LocalReplica } from '../store/place';
import { parsePartitionName } from '../store/partition';
import { ScrubDamage } from '../store/engine';
import { SnapshotEntry } from '../store/engine-snapshot';
import { Disk } from '../store/disk';
import { Vdisk } from '../store/vdisk';
import { RepairResult } from '../store/scrubber';
import { files } from '../store/files';
import { TokenBucket } from '../store/token-bucket';
import { Logger } from '../logging/logger';
import { VersionClock } from '../model/clock';
import { MaybePromise } from '../model/maybe-promise';
import { compareRecords, compareVersions, formatVersion, StoredRecord } from '../model/version';
import { isOpened, OpenedValue } from '../model/value';
import { ReadValue } from '../model/read-value';
import { isOysterError } from '../model/errors';
import { PeerClient } from '../grpc/peer-client';
import { Topology } from '../model/topology';

/** Buckets per vdisk: 2^12 digests are 32 KiB; with a million keys a differing bucket holds about 250. */
export const DIGEST_BITS = 12;
/** Differing buckets whose entries are asked for at once. */
const BUCKETS_PER_REQUEST = 256;
/** Records copied at once. */
const COPY_CONCURRENCY = 16;
/**
 * A refill reads a file in ranges of this many bytes, each one ReadFile
 * stream, this many at once: one stream alone leaves both nodes waiting on
 * each other's turns.
 */
const REFILL_RANGE = 32 * 1024 * 1024;
const REFILL_STREAMS = 4;
/** Chunks of a refilled file being written at once. */
const WRITES_IN_FLIGHT = 8;

export interface AntiEntropyParts {
  topology: Topology;
  store: NodeStore;
  peers: Map<string, PeerClient>;
  isAvailable: (node: string) => boolean;
  clock: VersionClock;
  keySize: number;
  intervalMs: number;
  rateBytesPerSecond: number;
  log: Logger;
  /** Records (and their value bytes) copied here from `source`. */
  onCopied?: (source: string, records: number, bytes: number) => void;
  /** Bytes of digests and entries received. */
  onExchanged?: (bytes: number) => void;
  /** A pass over every vdisk ended (its start and duration). */
  onPass?: (startedMs: number, seconds: number) => void;
}

/** Another replica of a vdisk, as a pass reads it. */
interface Source {
  name: string;
  digest(bits: number): Promise<{ digests: Buffer; keys: number }>;
  entries(bits: number, buckets: number[]): Promise<SnapshotEntry[]>;
  get(key: Buffer): MaybePromise<StoredRecord | null>;
  /** With `open`, a large value comes opened, to be read in parts. */
  get(key: Buffer, open: boolean): MaybePromise<StoredRecord | OpenedValue | null>;
  /** Its closed partition files, for an empty replica to copy whole (peers only). */
  files?(): Promise<Array<{ partition: string; files: Array<{ name: string; size: number }> }>>;
  /** Bytes of a closed file, in chunks, in order; fewer only at the end of the file. */
  readFile?(partition: string, name: string, offset: number, length: number): AsyncIterable<Buffer>;
}

export interface SyncReport {
  vdisk: number;
  source: string;
  differingBuckets: number;
  copied: number;
  bytes: number;
}

export class AntiEntropy {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private started = false;
  private stopped = false;
  // bob nodes do not serve the Replicas service: asked again an hour later.
  private readonly unsupported = new Map<string, number>();
  private readonly tokens: TokenBucket;

  constructor(private readonly parts: AntiEntropyParts) {
    this.tokens = new TokenBucket(parts.rateBytesPerSecond);
  }

  start(): void {
    this.started = true;
    this.schedule(this.parts.intervalMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  /** A pass soon (a peer came back, a disk serves again). */
  trigger(): void {
    if (!this.started) return;
    if (this.running) this.again = true;
    else this.schedule(1000);
  }

  /** One pass over every vdisk with a replica here; resolves when it ends. */
  runOnce(): Promise<void> {
    this.running ??= this.pass().finally(() => (this.running = null));
    return this.running;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      void this.runOnce().finally(() => {
        const soon = this.again;
        this.again = false;
        this.schedule(soon ? 1000 : this.parts.intervalMs);
      });
    }, delayMs);
    this.timer.unref();
  }

  private async pass(): Promise<void> {
    const started = Date.now();
    const { topology, store } = this.parts;
    for (const v of topology.vdisks) {
      for (const local of store.localReplicas(v.id)) {
        if (this.stopped) return;
        if (!local.disk.isReady) continue;
        for (const source of this.sourcesFor(v.id, local)) {
          if (this.stopped) return;
          await this.sync(v.id, local, source).catch((err: Error) => this.failed(v.id, local, source.name, err));
        }
      }
    }
    this.parts.onPass?.(started, (Date.now() - started) / 1000);
  }

  /**
   * Repairs a record of `vdisk` (a replica, or alien copies) on `disk` that
   * failed its checks (store/scrubber.ts): every other replica of the vdisk
   * is asked for its newest record of the key, and the newest answer, if at
   * least as new as the damaged record, is written here at its version — of
   * two records of equal version the later written wins, so reads return the
   * copy from then on. A tombstone no replica holds is written again from
   * what the index says (its key and version are intact: only the record
   * was damaged). A value no replica holds is lost ('unrepairable') once
   * every replica answered; while one could not be asked, 'failed'.
   */
  async repair(disk: Disk, vdisk: Vdisk, damage: ScrubDamage): Promise<RepairResult> {
    const replicas = this.parts.store.localReplicas(vdisk.id);
    const self = replicas.find((r) => r.disk === disk) ?? null;
    // Every other replica: the local ones but this, and one per peer.
    const { topology } = this.parts;
    let unasked = replicas.length - (self ? 1 : 0) + topology.targetNodes(vdisk.id).filter((n) => n !== topology.self.name).length;
    let record: StoredRecord | OpenedValue | null = null;
    let source = '';
    // Large values come opened, read in parts below: held whole, one larger
    // than http_body_memory_limit could never be repaired.
    const answers = await Promise.allSettled(this.sourcesFor(vdisk.id, self, true).map(async (s) => ({ name: s.name, record: await s.get(damage.key, true) })));
    for (const a of answers) {
      if (a.status === 'rejected') continue;
      unasked--;
      if (a.value.record !== null && (record === null || compareRecords(a.value.record, record) > 0)) {
        record = a.value.record;
        source = a.value.name;
      }
    }
    for (const a of answers) if (a.status === 'fulfilled' && a.value.record !== record && isOpened(a.value.record)) a.value.record.reader.close();
    if (record === null || compareVersions(record.version, damage.version) < 0) {
      // Older than the damaged record: of no use.
      if (isOpened(record)) record.reader.close();
      if (!damage.tombstone) {
        return unasked > 0
          ? { outcome: 'failed', detail: `${unasked} replica(s) could not be asked` }
          : { outcome: 'unrepairable', detail: `no replica holds version ${formatVersion(damage.version)} or newer` };
      }
      record = { kind: 'deleted', version: damage.version };
      source = 'its index entry';
    }
    this.parts.clock.observe(record.version);
    const r = record;
    if (isOpened(r)) await this.copyInParts({ disk, vdisk: () => vdisk }, damage.key, r);
    else await disk.write(() => (r.kind === 'found' ? vdisk.put(damage.key, r.version, r.value) : vdisk.delete(damage.key, r.version)));
    return { outcome: 'repaired', detail: source };
  }

  /**
   * The other replicas of `vdisk` in service: the local ones but `local`
   * (all for null), and the peers available — those serving anti-entropy
   * only, unless `reads` (a bob peer answers reads).
   */
  private sourcesFor(vdisk: number, local: LocalReplica | null, reads = false): Source[] {
    const { topology, store, peers } = this.parts;
    const out: Source[] = [];
    for (const other of store.localReplicas(vdisk)) {
      if (other === local || !other.disk.isReady) continue;
      out.push({
        name: `${topology.self.name}/${other.disk.name}`,
        digest: (bits) => other.run((v) => v.digest(bits)),
        entries: (bits, buckets) => other.run((v) => v.entries(bits, buckets)),
        get: ((key: Buffer, open: boolean = false) => other.run((v) => v.get(key, open))) as Source['get'],
      });
    }
    for (const node of topology.targetNodes(vdisk)) {
      const peer = peers.get(node);
      if (!peer || !this.parts.isAvailable(node) || (!reads && (this.unsupported.get(node) ?? 0) > Date.now())) continue;
      out.push({
        name: node,
        digest: (bits) => peer.digest(vdisk, bits),
        entries: (bits, buckets) => peer.entries(vdisk, bits, buckets, this.parts.keySize),
        get: ((key: Buffer, open: boolean = false) => peer.get(key, 'normal', open)) as Source['get'],
        files: () => peer.files(vdisk),
        readFile: (partition, name, offset, length) => peer.readFile(vdisk, partition, name, offset, length),
      });
    }
    return out;
  }

  /**
   * Writes an opened value into `local` as it is read, READ_PART bytes at a
   * time: a value of any size, in the memory of two parts (one larger than
   * http_body_memory_limit could not be read whole). Nothing of it is
   * readable here unless all of it was read, checked and written.
   */
  private async copyInParts(local: Pick<LocalReplica, 'disk' | 'vdisk'>, key: Buffer, value: OpenedValue): Promise<void> {
    try {
      const place = { disk: local.disk, begin: () => local.vdisk().beginStream(key, value.version, value.size) };
      await streamInto([place], new ReadValue(value), (bytes) => this.tokens.take(bytes));
    } finally {
      value.reader.close();
    }
  }

  /** Copies into `local` every record `source` holds in a newer version. */
  async sync(vdisk: number, local: LocalReplica, source: Source): Promise<SyncReport> {
    const report: SyncReport = { vdisk, source: source.name, differingBuckets: 0, copied: 0, bytes: 0 };
    const started = Date.now();
    let lastProgress = started;
    let [mine, theirs] = await Promise.all([local.run((v) => v.digest(DIGEST_BITS)), source.digest(DIGEST_BITS)]);
    this.parts.onExchanged?.(theirs.digests.length);
    if (mine.keys * 2 < theirs.keys && source.files) {
      // A replica holding less than half of the other's keys (a replaced
      // disk, refilled meanwhile only by a few writes and read repairs): the
      // other's closed files first, copied whole, then key by key what they
      // do not hold. Records it holds already are copied again, harmlessly.
      const copied = await this.refill(vdisk, local, source);
      report.bytes += copied.bytes;
      const before = mine.keys;
      mine = await local.run((v) => v.digest(DIGEST_BITS));
      report.copied += mine.keys - before;
      this.parts.onCopied?.(source.name, mine.keys - before, copied.bytes);
    }
    // Where the other holds no key (digest 0) it has nothing to give: the
    // other's own pass takes what it lacks from here.
    const differing: number[] = [];
    for (let b = 0; b < 2 ** DIGEST_BITS; b++) {
      const their = theirs.digests.readBigUInt64LE(b * 8);
      if (their !== 0n && mine.digests.readBigUInt64LE(b * 8) !== their) differing.push(b);
    }
    report.differingBuckets = differing.length;
    for (let i = 0; i < differing.length && !this.stopped; i += BUCKETS_PER_REQUEST) {
      const buckets = differing.slice(i, i + BUCKETS_PER_REQUEST);
      const [ours, their] = await Promise.all([local.run((v) => v.entries(DIGEST_BITS, buckets)), source.entries(DIGEST_BITS, buckets)]);
      this.parts.onExchanged?.(their.length * (17 + this.parts.keySize));
      const newer = newerThere(ours, their);
      let next = 0;
      const worker = async () => {
        while (next < newer.length && !this.stopped) {
          const e = newer[next++];
          const record = await source.get(e.key, true);
          // Gone or older meanwhile: nothing to copy (a newer write reached both).
          if (record === null || compareRecords(record, e) < 0) {
            if (isOpened(record)) record.reader.close();
            continue;
          }
          const bytes = isOpened(record) ? record.size : record.kind === 'found' ? record.value.length : 0;
          this.parts.clock.observe(record.version);
          if (isOpened(record)) await this.copyInParts(local, e.key, record);
          else {
            await this.tokens.take(bytes + this.parts.keySize);
            await local.write((v) => (record.kind === 'found' ? v.put(e.key, record.version, record.value) : v.delete(e.key, record.version)));
          }
          report.copied++;
          report.bytes += bytes;
          this.parts.onCopied?.(source.name, 1, bytes);
        }
      };
      await Promise.all(Array.from({ length: Math.min(COPY_CONCURRENCY, newer.length) }, worker));
      if (Date.now() - lastProgress > 10_000) {
        lastProgress = Date.now();
        this.parts.log.info(
          { vdisk, disk: local.disk.name, source: source.name, copied: report.copied, bytes: report.bytes, buckets: `${Math.min(i + BUCKETS_PER_REQUEST, differing.length)}/${differing.length}`, keysThere: theirs.keys, keysHere: mine.keys },
          'anti-entropy: copying records from another replica',
        );
      }
    }
    if (report.copied > 0) {
      this.parts.log.info(
        { vdisk, disk: local.disk.name, source: source.name, copied: report.copied, bytes: report.bytes, seconds: (Date.now() - started) / 1000 },
        'anti-entropy: records copied from another replica',
      );
    }
    return report;
  }

  /**
   * Copies the closed partition files of `source` into the local replica:
   * each partition into a directory whose name is no partition's, synced,
   * then renamed into place and attached. A partition of that name already
   * here is left alone.
   */
  private async refill(vdisk: number, local: LocalReplica, source: Source): Promise<{ partitions: number; bytes: number }> {
    const started = Date.now();
    const target = local.vdisk();
    const listed = await source.files!();
    const here = new Set(await local.disk.use(() => files.list(target.dir)));
    const total = listed.reduce((a, p) => a + p.files.reduce((b, f) => b + f.size, 0), 0);
    let bytes = 0;
    let partitions = 0;
    let lastProgress = started;
    for (const p of listed) {
      if (this.stopped) break;
      const prefix = target.partitions.blobFilePrefix(p.partition);
      if (here.has(p.partition) || parsePartitionName(p.partition) === null || p.files.some((f) => !f.name.startsWith(`${prefix}.`))) continue;
      const tmp = path.join(target.dir, `.refill.${p.partition}`);
      await fs.promises.rm(tmp, { recursive: true, force: true });
      await local.disk.write(() => files.createDir(tmp));
      try {
        for (const f of p.files) bytes += await this.copyFile(local, source, p.partition, f, path.join(tmp, f.name));
        await local.disk.use(async () => {
          await files.syncDir(tmp);
          await files.rename(tmp, path.join(target.dir, p.partition));
          await files.syncDir(target.dir);
        });
        partitions++;
      } catch (err) {
        await fs.promises.rm(tmp, { recursive: true, force: true }).catch(() => undefined);
        throw err;
      }
      if (Date.now() - lastProgress > 10_000) {
        lastProgress = Date.now();
        this.parts.log.info({ vdisk, disk: local.disk.name, source: source.name, partitions, bytes, of: total }, 'anti-entropy: refilling a replica with whole partitions');
      }
    }
    await local.run((v) => v.admin((ps) => ps.attachAll()));
    this.parts.log.info(
      { vdisk, disk: local.disk.name, source: source.name, partitions, bytes, seconds: (Date.now() - started) / 1000 },
      'anti-entropy: replica refilled with whole partitions; comparing keys next',
    );
    return { partitions, bytes };
  }

  /**
   * Copies one closed file of `source` to `target` (created, then synced):
   * ranges of it stream in several at a time, each written as it comes at
   * its own offset, so reading there and writing here overlap. Returns its
   * bytes.
   */
  private async copyFile(local: LocalReplica, source: Source, partition: string, f: { name: string; size: number }, target: string): Promise<number> {
    await local.disk.write(() => files.write(target, 0, Buffer.alloc(0), true));
    let next = 0;
    // The first failure stops the others; the file is removed only once none writes to it.
    let failed = false;
    let failure: unknown = null;
    const fail = (err: unknown) => {
      if (!failed) failure = err;
      failed = true;
    };
    // Chunks are written as they come, several at once, so that neither the
    // streams nor the disk wait on each other's turns; past WRITES_IN_FLIGHT
    // the streams stop pulling, which stops the peer (flow control).
    const writing = new Set<Promise<void>>();
    const write = async (offset: number, data: Buffer) => {
      while (writing.size >= WRITES_IN_FLIGHT) await Promise.race(writing);
      const done: Promise<void> = local.disk
        .write(() => files.write(target, offset, data, false))
        .catch(fail)
        .finally(() => writing.delete(done));
      writing.add(done);
    };
    const worker = async () => {
      while (next < f.size && !failed && !this.stopped) {
        const range = next;
        next += REFILL_RANGE;
        const length = Math.min(REFILL_RANGE, f.size - range);
        let at = range;
        for await (const data of source.readFile!(partition, f.name, range, length)) {
          if (this.stopped || failed) throw new Error('anti-entropy stopped');
          await this.tokens.take(data.length);
          const offset = at;
          at += data.length;
          await write(offset, data);
        }
        if (at !== range + length) throw new Error(`${partition}/${f.name}: ${at - range} bytes at ${range} instead of ${length}: the file changed`);
      }
    };
    await Promise.all(Array.from({ length: REFILL_STREAMS }, () => worker().catch(fail)));
    while (writing.size > 0) await Promise.all([...writing]);
    if (failed) throw failure;
    if (next < f.size) throw new Error('anti-entropy stopped');
    await local.disk.use(() => files.sync(target));
    return f.size;
  }

  private failed(vdisk: number, local: LocalReplica, source: string, err: Error): void {
    if (isOysterError(err, 'Unsupported')) {
      this.unsupported.set(source, Date.now() + 3600_000);
      this.parts.log.info({ peer: source }, 'peer does not serve anti-entropy (a bob node?); left out for an hour');
      return;
    }
    this.parts.log.warn({ vdisk, disk: local.disk.name, source, err: err.message }, 'anti-entropy with a replica failed; next pass retries');
  }
}

/** The entries of `theirs` that are newer than (or missing from) `ours`; both sorted by key. */
export function newerThere(ours: SnapshotEntry[], theirs: SnapshotEntry[]): SnapshotEntry[] {
  const out: SnapshotEntry[] = [];
  let i = 0;
  for (const t of theirs) {
    while (i < ours.length && Buffer.compare(ours[i].key, t.key) < 0) i++;
    const mine = i < ours.length && ours[i].key.equals(t.key) ? ours[i] : null;
    if (mine === null || compareRecords(t, mine) > 0) out.push(t);
  }
  return out;
}
