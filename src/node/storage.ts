// Builds this node's storage (disks, vdisks, partitions) from its
// configuration: where every directory is and how partitions are named.
import path from 'node:path';
import { Disk, DiskState } from '../store/disk';
import { NodeState, Refusal } from '../store/identity';
import { NodeStore } from '../store/node-store';
import { StorageObserver, Vdisk } from '../store/vdisk';
import { Topology } from '../model/topology';
import { LoadedConfig } from '../config/load';
import { EngineOptions, newIndexBlockCache } from '../store/engine';
import { RecordCache } from '../store/record-cache';
import { ownerHash } from '../keys/owner-hash';
import { Logger } from '../logging/logger';
import { VersionClock } from '../model/clock';

export interface StorageOptions {
  config: LoadedConfig;
  topology: Topology;
  /** Create missing root directories on the disks (--init-folders). */
  initFolders: boolean;
  log: Logger;
  onDiskState?: (disk: string, alien: boolean, state: DiskState) => void;
  /** A disk went below min_free_space (false) or back above it (true). */
  onDiskWritable?: (disk: string, alien: boolean, writable: boolean) => void;
  /** A disk was refused for its identity, or is no longer (null). */
  onDiskRefusal?: (disk: string, alien: boolean, refusal: Refusal | null) => void;
  /** What the partitions of a disk report to (metrics). */
  observer?: (disk: string) => StorageObserver;
  /** The node's version clock, shown every partition opened. */
  clock: VersionClock;
}

/** Where the alien directory lives and under which name /disks/list shows it. */
export function alienLocation(config: LoadedConfig, topology: Topology): { name: string; diskPath: string; root: string } {
  const { pearl } = config.node;
  const disk = pearl.alienDisk ? topology.self.disks.find((d) => d.name === pearl.alienDisk) : undefined;
  if (disk) return { name: disk.name, diskPath: disk.path, root: path.join(disk.path, pearl.settings.alienRootDirName) };
  // bob: without alien_disk the alien directory is relative to the working directory.
  const root = path.resolve(pearl.settings.alienRootDirName);
  return { name: 'alien_disk', diskPath: path.dirname(root), root };
}

export function createNodeStore(o: StorageOptions): NodeStore {
  const { node, cluster } = o.config;
  const { pearl } = node;
  const self = o.topology.self.name;
  // read_cache_size: three quarters for records, served without a call into
  // the engine; a quarter for the index blocks of closed blobs, which spare
  // lookups a system call (one block serves the lookups of dozens of keys).
  const records = new RecordCache(Math.floor((node.readCacheSize * 3) / 4));
  const indexBlocks = newIndexBlockCache(node.readCacheSize - records.capacity);
  const engine: EngineOptions = {
    keySize: cluster.keySize,
    maxBlobSize: pearl.maxBlobSize,
    maxDataInBlob: pearl.maxDataInBlob,
    maxDirtyBytesBeforeSync: pearl.maxDirtyBytesBeforeSync,
    syncWrites: pearl.syncWrites,
    bloomBitsPerKey: bloomBitsPerKey(pearl.bloomFilterMaxBufBitsCount, pearl.maxDataInBlob),
    cache: indexBlocks,
  };
  const periodSeconds = Math.max(1, Math.round(pearl.settings.timestampPeriod / 1000));
  const vdisk = (disk: string, dir: string, id: number, alien: boolean) =>
    new Vdisk({
      dir,
      id,
      // Alien partitions carry the hash of "a" + the storing node, so that
      // copied into the owner's vdisk they never collide with its own.
      hash: ownerHash(alien ? `a${self}` : self, pearl.hashCharsCount),
      blobPrefix: pearl.blobFileNamePrefix,
      periodSeconds,
      roundStarts: !alien,
      engine,
      openAttempts: pearl.failRetryCount,
      openRetryDelayMs: pearl.failRetryTimeout,
      idleCloseMs: 10_000,
      observer: o.observer?.(disk),
      records,
      clock: o.clock,
      log: o.log,
    });
  const common = {
    createRoot: o.initFolders,
    monitorIntervalMs: 1000,
    retryInitialMs: 1000,
    retryMaxMs: 60_000,
    minFreeSpace: node.minFreeSpace,
  };
  const state = new NodeState(node.stateDir, self);
  const disks = o.topology.self.disks.map(
    (d) =>
      new Disk({
        ...common,
        name: d.name,
        diskPath: d.path,
        root: path.join(d.path, pearl.settings.rootDirName),
        alien: false,
        vdisks: o.topology.vdisksOnLocalDisk(d.name),
        makeVdisk: (dir, id) => vdisk(d.name, dir, id, false),
        log: o.log,
        onStateChange: (s) => o.onDiskState?.(d.name, false, s),
        onWritableChange: (w) => o.onDiskWritable?.(d.name, false, w),
        identity: { node: self, disk: d.name, state },
        onRefusal: (r) => o.onDiskRefusal?.(d.name, false, r),
      }),
  );
  const where = alienLocation(o.config, o.topology);
  const alien = new Disk({
    ...common,
    name: where.name,
    diskPath: where.diskPath,
    root: where.root,
    alien: true,
    vdisks: [],
    acceptsAlien: (owner, vdisk) => o.topology.node(owner) !== undefined && o.topology.isOnNode(vdisk, owner),
    makeVdisk: (dir, id) => vdisk(where.name, dir, id, true),
    log: o.log,
    onStateChange: (s) => o.onDiskState?.(where.name, true, s),
    onWritableChange: (w) => o.onDiskWritable?.(where.name, true, w),
    // The alien directory on a disk has that disk's identity; one in the working directory (bob's default) has none.
    identity: pearl.alienDisk && where.name === pearl.alienDisk ? { node: self, disk: where.name, state } : undefined,
    onRefusal: (r) => o.onDiskRefusal?.(where.name, true, r),
  });
  return new NodeStore({ topology: o.topology, disks, alien, startParallelism: node.initParDegree, clock: o.clock, state, readCache: { records, indexBlocks }, log: o.log });
}

// bob sizes bloom filters in bits per blob; the engine in bits per key.
function bloomBitsPerKey(maxBufBits: number | undefined, maxDataInBlob: number): number {
  if (maxBufBits === undefined) return 10;
  return Math.min(32, Math.max(2, Math.round(maxBufBits / maxDataInBlob)));
}
