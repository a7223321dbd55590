// The offline blob tools of the native addon (native/tools via
// native/addon/tools_wrap.cc): typed, and with argument errors turned into
// rejections like every other failure.
import path from 'node:path';

export interface ToolProgress {
  done: number;
  total: number;
}

/** A running tool: its result, and its progress in bytes read, to poll. */
export interface ToolTask<T> {
  promise: Promise<T>;
  progress(): ToolProgress;
}

export type HeaderState = 'ok' | 'short' | 'pearl' | 'corrupt' | 'unsupported-version' | 'wrong-id' | 'wrong-key-size';
/** 'outdated': an index of an older format, which the engine rebuilds at open (nothing is wrong). */
export type IndexState = 'absent' | 'ok' | 'outdated' | 'invalid' | 'mismatch';

export interface IndexHeaderInfo {
  version: number;
  keySize: number;
  blobId: number;
  blobSize: number;
  recordsTotal: number;
  entryCount: number;
  minTimestamp: number;
  /** With newestTick and newestNode: the largest version in the blob. */
  maxTimestamp: number;
  newestTick: number;
  newestNode: number;
  /** The largest tick of any record in the blob. */
  maxTick: number;
  blockSize: number;
  blockCount: number;
  bloomBlocks: number;
  bloomProbes: number;
}

export interface BlobReport {
  name: string;
  prefix: string;
  id: number;
  size: number;
  /** The newest blob of its prefix without an index: the engine appends to it. */
  active: boolean;
  header: HeaderState;
  headerProblem: string;
  /** The blob format (1 or 2); for an unreadable header, the one its records read in (0: unknown). */
  version: number;
  keySize: number;
  scanned: boolean;
  // With a scan only:
  records?: number;
  tombstones?: number;
  keys?: number;
  corruptRecords?: number;
  corruptNewest?: number;
  skippedRegions?: number;
  skippedBytes?: number;
  validEnd?: number;
  tailBytes?: number;
  minTimestamp?: number;
  maxTimestamp?: number;
  maxTick?: number;
  index: IndexState;
  indexProblem: string;
  indexSize: number;
  indexEntriesVerified: boolean;
  indexHeader: IndexHeaderInfo | null;
}

export interface PartitionReport {
  dir: string;
  keySize: number;
  blobs: BlobReport[];
  orphanIndexes: string[];
  tempIndexes: string[];
  quarantined: string[];
}

export type RecoveryAction = 'copied' | 'rewritten' | 'index-rebuilt' | 'unchanged' | 'removed' | 'skipped';

export interface BlobRecovery {
  name: string;
  action: RecoveryAction;
  reason: string;
  recordsKept: number;
  corruptDropped: number;
  corruptNewest: number;
  bytesDropped: number;
  size: number;
  indexWritten: boolean;
  keptAs: string | null;
}

export interface PartitionRecovery {
  dir: string;
  outDir: string | null;
  keySize: number;
  blobs: BlobRecovery[];
}

interface CommonOptions {
  keySize?: number;
  /** A file name in the directory: only that blob. */
  only?: string;
}

interface NativeTools {
  checkPartition(dir: string, options: CommonOptions & { scan?: boolean }): ToolTask<PartitionReport>;
  recoverPartition(dir: string, options: CommonOptions & { outDir?: string }): ToolTask<PartitionRecovery>;
}

// dist/src/cli/oyster/native-tools.js -> <package root>/build/Release/oyster.node
const addonPath = path.resolve(__dirname, '..', '..', '..', '..', 'build', 'Release', 'oyster.node');

// Loaded on first use: the other commands do without the addon and its threads.
let loaded: NativeTools | undefined;
function tools(): NativeTools {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  loaded ??= (require(addonPath) as { tools: NativeTools }).tools;
  return loaded;
}

function start<T>(fn: () => ToolTask<T>): ToolTask<T> {
  try {
    return fn();
  } catch (err) {
    return { promise: Promise.reject(err), progress: () => ({ done: 0, total: 0 }) };
  }
}

/** Inspects a partition directory (or one blob in it) without changing anything. */
export function checkPartition(dir: string, options: CommonOptions & { scan?: boolean }): ToolTask<PartitionReport> {
  return start(() => tools().checkPartition(dir, options));
}

/** Recovers a partition into outDir, or in place when outDir is absent. */
export function recoverPartition(dir: string, options: CommonOptions & { outDir?: string }): ToolTask<PartitionRecovery> {
  return start(() => tools().recoverPartition(dir, options));
}
