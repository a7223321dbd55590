// oyster blob check | info | recover: offline inspection and repair of
// partition directories, like bob's brt, on the engine's own format code
// (native/tools). The node must be stopped: the tools take the engine's
// directory lock and refuse a partition a node has open.
import fs from 'node:fs';
import path from 'node:path';
import { formatVersion } from '../../model/version';
import { findingsOf } from './blob-findings';
import { Command, integerOption, parseOptions, printHelp } from './command';
import { ExitCode, Failure, UsageError } from './exit-codes';
import { BlobReport, checkPartition, PartitionRecovery, PartitionReport, recoverPartition, ToolTask } from './native-tools';
import { findTargets, Target } from './partitions';
import { formatBytes, withProgress } from './progress-bar';

const PATHS_HELP = `PATH is a partition directory, any directory above partitions (a disk, its
bob/ directory, a vdisk: every partition below is taken), or one blob file
(also a kept copy such as corrupted/<name>.blob.1). The node must be stopped:
a partition that a running node holds is refused.`;

const KEY_SIZE_HELP = `  --key-size BYTES  the partition's key size, needed only when no blob or
                    index header tells it (all of them damaged)`;

const common = {
  'key-size': { type: 'string' },
  json: { type: 'boolean' },
} as const;

function keySizeOf(v: string | undefined): number | undefined {
  return v === undefined ? undefined : integerOption(v, 'key-size', 0, 1, 1024);
}

/** Runs one tool per target, one after the other, with a progress bar on a terminal. */
async function runEach<T>(targets: Target[], start: (t: Target) => ToolTask<T>): Promise<T[]> {
  const results: T[] = [];
  for (const [i, t] of targets.entries()) {
    const task = start(t);
    const label = targets.length > 1 ? `[${i + 1}/${targets.length}] ${path.basename(t.dir)}` : path.basename(t.only ?? t.dir);
    try {
      results.push(await withProgress(label, task.promise, task.progress));
    } catch (err) {
      throw new Failure(`${t.only ? path.join(t.dir, t.only) : t.dir}: ${(err as Error).message}`);
    }
  }
  return results;
}

function pathsOf(positionals: string[]): string[] {
  if (positionals.length === 0) throw new UsageError('no PATH given');
  return positionals;
}

async function targetsOf(paths: string[]): Promise<Target[]> {
  return (await Promise.all(paths.map(findTargets))).flat();
}

export const blobCheck: Command = {
  name: 'check',
  summary: 'verify partitions: records, torn tails, index files',
  help: `Usage: oyster blob check PATH... [--key-size BYTES] [-v] [--json]

Reads every record of every blob and compares every index file with its
blob, changing nothing (files are opened read-only). Reports records whose
checksum fails, damaged regions, torn tails, unreadable headers, index files
that are missing, damaged, stale or wrong, and leftovers of interrupted
index builds, each with what the engine does about it at open. Problems are
printed one per line as "<file>: <problem>", then a summary. Files of an
older format (format-1 blobs, version-1 index files) are readable: they are
noted, not counted as problems, with what the engine does at open.

${PATHS_HELP}

  -v, --verbose     also list the blobs that are fine
  --json            print the reports as JSON
${KEY_SIZE_HELP}

Exit codes: 0 every partition is as a clean shutdown leaves it, 1 problems
found, 2 wrong command line, 3 a path cannot be read or a node holds it.`,
  async run(argv) {
    const { values, positionals } = parseOptions(argv, { ...common, verbose: { type: 'boolean', short: 'v' } }, true);
    if (values.help) return printHelp(blobCheck);
    const keySize = keySizeOf(values['key-size']);
    const targets = await targetsOf(pathsOf(positionals));
    const reports = await runEach(targets, (t) => checkPartition(t.dir, { keySize, only: t.only, scan: true }));
    let problems = 0;
    let blobs = 0;
    let bytes = 0;
    const out: string[] = [];
    const json = reports.map((r) => {
      const f = findingsOf(r);
      problems += f.problems.length;
      blobs += r.blobs.length;
      bytes += r.blobs.reduce((a, b) => a + b.size, 0);
      for (const p of f.problems) out.push(`${path.join(r.dir, p.file)}: ${p.text}`);
      for (const n of f.notes) out.push(`${path.join(r.dir, n.file)}: note: ${n.text}`);
      if (values.verbose) {
        const bad = new Set(f.problems.map((p) => p.file));
        for (const b of r.blobs) if (!bad.has(b.name)) out.push(`${path.join(r.dir, b.name)}: ok, ${b.records} records${b.active ? ' (active)' : ''}`);
      }
      return { ...r, problems: f.problems, notes: f.notes };
    });
    const summary = `checked ${reports.length} partition${reports.length === 1 ? '' : 's'}, ${blobs} blob${blobs === 1 ? '' : 's'} (${formatBytes(bytes)}): ${
      problems === 0 ? 'no problems' : `${problems} problem${problems === 1 ? '' : 's'}`
    }`;
    if (values.json) process.stdout.write(`${JSON.stringify({ partitions: json, problems }, null, 2)}\n`);
    else process.stdout.write(`${[...out, summary].join('\n')}\n`);
    return problems === 0 ? ExitCode.ok : ExitCode.negative;
  },
};

function describeBlob(b: BlobReport): string[] {
  const lines = [
    `  ${b.name}: ${formatBytes(b.size)}, ${b.header === 'ok' ? `format ${b.version}, key size ${b.keySize}, id ${b.id}` : `header ${b.header}: ${b.headerProblem}`}${b.active ? ', active' : ''}`,
  ];
  if (b.scanned) {
    lines.push(
      `    records ${b.records}, keys ${b.keys}, tombstones ${b.tombstones}, corrupt ${b.corruptRecords}` +
        `${b.records ? `, timestamps ${b.minTimestamp}..${b.maxTimestamp}, largest tick ${b.maxTick}` : ''}` +
        `${b.skippedBytes ? `, damaged ${b.skippedBytes} B` : ''}${b.tailBytes ? `, tail ${b.tailBytes} B` : ''}`,
    );
  }
  const h = b.indexHeader;
  if (h) {
    lines.push(
      `    index ${b.prefix}.${b.id}.index: ${formatBytes(b.indexSize)}, format ${h.version}, ${h.entryCount} entries for ${h.recordsTotal} records, ` +
        `${h.blockCount} blocks of ${h.blockSize} B, bloom ${h.bloomBlocks} x 64 B with ${h.bloomProbes} probes, ` +
        `timestamps ${h.minTimestamp}..${h.maxTimestamp}, newest ${formatVersion({ timestamp: h.maxTimestamp, tick: h.newestTick, node: h.newestNode })}, ` +
        `largest tick ${h.maxTick}, blob size ${h.blobSize}: ${b.index === 'ok' ? 'valid' : `${b.index}: ${b.indexProblem}`}`,
    );
  } else if (b.index !== 'absent') {
    lines.push(`    index ${b.prefix}.${b.id}.index: ${formatBytes(b.indexSize)}, ${b.index}: ${b.indexProblem}`);
  }
  return lines;
}

export const blobInfo: Command = {
  name: 'info',
  summary: 'show blob and index headers (and counts with --full)',
  help: `Usage: oyster blob info PATH... [--full] [--key-size BYTES] [--json]

Prints, for every blob, its size, format version, key size and id, and the
header of its index file (format, entries, records, blocks, bloom filter,
timestamps, the newest version, the largest tick, the blob size it
describes) and whether the engine would accept it. With --full every blob
is read through to count its records, keys, tombstones and damaged records.
Nothing is changed.

${PATHS_HELP}

  --full            read the records too
  --json            print the reports as JSON
${KEY_SIZE_HELP}

Exit codes: 0 shown, 2 wrong command line, 3 a path cannot be read or a node holds it.`,
  async run(argv) {
    const { values, positionals } = parseOptions(argv, { ...common, full: { type: 'boolean' } }, true);
    if (values.help) return printHelp(blobInfo);
    const keySize = keySizeOf(values['key-size']);
    const targets = await targetsOf(pathsOf(positionals));
    const reports: PartitionReport[] = await runEach(targets, (t) => checkPartition(t.dir, { keySize, only: t.only, scan: values.full ?? false }));
    if (values.json) {
      process.stdout.write(`${JSON.stringify({ partitions: reports }, null, 2)}\n`);
      return ExitCode.ok;
    }
    const lines: string[] = [];
    for (const r of reports) {
      lines.push(`${r.dir}: ${r.blobs.length} blob${r.blobs.length === 1 ? '' : 's'}, key size ${r.keySize || 'unknown'}`);
      for (const b of r.blobs) lines.push(...describeBlob(b));
      for (const f of r.orphanIndexes) lines.push(`  ${f}: index without its blob`);
      for (const f of r.tempIndexes) lines.push(`  ${f}: unfinished index build`);
      if (r.quarantined.length) lines.push(`  corrupted/: ${r.quarantined.join(', ')}`);
    }
    process.stdout.write(`${lines.join('\n')}\n`);
    return ExitCode.ok;
  },
};

function describeRecovery(r: PartitionRecovery): string[] {
  const lines = [r.outDir ? `${r.dir} -> ${r.outDir}` : `${r.dir} (in place)`];
  for (const b of r.blobs) {
    let text: string = b.action;
    if (b.reason) text += ` (${b.reason})`;
    if (b.action === 'copied' || b.action === 'rewritten') text += `: ${b.recordsKept} records kept`;
    if (b.corruptDropped) text += `, ${b.corruptDropped} corrupt dropped${b.corruptNewest ? ` (${b.corruptNewest} the newest of their key: an older version, if any, is now the newest)` : ''}`;
    if (b.keptAs) text += `; original kept as ${b.keptAs}`;
    if (b.indexWritten) text += '; index written';
    lines.push(`  ${b.name}: ${text}`);
  }
  return lines;
}

export const blobRecover: Command = {
  name: 'recover',
  summary: 'copy out the intact records, rebuild index files',
  help: `Usage: oyster blob recover PATH (--out DIR | --in-place) [--key-size BYTES] [--json]

Recovers what can be recovered, like bob's brt recovery: every intact
record of a blob is copied into a new blob file (same name and id, records
at their new offsets, in format 2 whatever the blob's format, each with its
version); records whose checksum fails, damaged regions and torn tails are
left behind; blobs whose header is unreadable are read all the same. Index files are written for the new blobs (except the active
blob, which stays the one the engine appends to).

  --out DIR         write a recovered copy of every partition under DIR
                    (DIR/<path below PATH>); the source is only read
  --in-place        repair the partitions themselves: a damaged blob is
                    replaced by its intact records, the original is kept as
                    corrupted/<name> (the engine's quarantine, so its id is
                    never reused); missing, damaged or wrong index files are
                    rebuilt; blobs that are fine stay untouched
  --json            print the results as JSON
${KEY_SIZE_HELP}

${PATHS_HELP}

Note: when the newest version of a key is the record that is lost, the
key's older version (if the partition holds one) becomes its newest.

Exit codes: 0 recovered (or nothing to do), 1 some blob could not be
recovered (a pearl blob, another format version or key size), 2 wrong
command line, 3 a file cannot be read or written, or a node holds it.`,
  async run(argv) {
    const { values, positionals } = parseOptions(argv, { ...common, out: { type: 'string' }, 'in-place': { type: 'boolean' } }, true);
    if (values.help) return printHelp(blobRecover);
    if ((values.out === undefined) === !values['in-place']) throw new UsageError('give --out DIR or --in-place');
    const keySize = keySizeOf(values['key-size']);
    const paths = pathsOf(positionals);
    if (values.out !== undefined && paths.length > 1) throw new UsageError('--out takes one PATH');
    const targets = await targetsOf(paths);
    const outOf = (t: Target) => (values.out === undefined ? undefined : path.resolve(values.out, t.relative));
    for (const t of targets) {
      const out = outOf(t);
      if (out === undefined) continue;
      if (path.resolve(t.dir) === out) throw new UsageError(`--out ${values.out}: the same directory as ${t.dir}`);
      fs.mkdirSync(out, { recursive: true });
      if (fs.readdirSync(out).some((n) => /\.(blob|index)$/.test(n))) throw new Failure(`${out} already holds blob or index files`);
    }
    const results = await runEach(targets, (t) => recoverPartition(t.dir, { keySize, only: t.only, outDir: outOf(t) }));
    const skipped = results.reduce((a, r) => a + r.blobs.filter((b) => b.action === 'skipped').length, 0);
    if (values.json) process.stdout.write(`${JSON.stringify({ partitions: results, skipped }, null, 2)}\n`);
    else process.stdout.write(`${results.flatMap(describeRecovery).join('\n')}\n`);
    return skipped === 0 ? ExitCode.ok : ExitCode.negative;
  },
};
