// oyster config generate | check: writing a cluster.yaml's vdisk placement
// from the nodes (like bob's ccg new), or onto the nodes and disks added to a
// cluster (ccg expand), and validating configuration files with the very
// code oysterd loads them with.
import fs from 'node:fs';
import YAML from 'yaml';
import { ClusterConfig, readClusterConfig } from '../../config/cluster-config';
import { ConfigError, formatProblem, Problem } from '../../config/errors';
import { loadConfig, sortProblems } from '../../config/load';
import { ConfigReader } from '../../config/reader';
import { Command, integerOption, parseOptions, printHelp } from './command';
import { ExitCode, Failure, UsageError } from './exit-codes';
import { expandPlacement, Move, PlacedVDisk, placeVDisks } from './placement';

const GENERATE_HELP = `Usage: oyster config generate -i NODES.yaml (-d COUNT | -p PER_DISK) [-r REPLICAS] [-R] [-o cluster.yaml] [--json]
       oyster config generate -i NODES.yaml --expand CURRENT.yaml [-o cluster.yaml] [--json]

Reads a cluster.yaml that lists only the nodes (and, optionally, racks) and
writes it back with a vdisk placement, like bob's ccg new:
  -i, --input FILE           the nodes (bob's cluster.yaml format, no vdisks)
  -o, --output FILE          where to write (default: standard output)
  -d, --vdisks COUNT         how many vdisks
  -p, --vdisks-per-disk N    or: N per physical disk, COUNT = ceil(N x disks / replicas)
  -r, --replicas N           replicas per vdisk, each on a different node (default 1)
  -R, --use-racks            place replicas by rack: the second in the first one's
                             rack, the others in other racks (needs racks in the input)
  --json                     print what was done as JSON (with the cluster itself
                             when there is no --output)

Every disk gets about the same number of replicas, so nodes with more disks
hold more. The number of vdisks is fixed for the life of a cluster (keys map
to vdisks by key mod count): choose it with growth in mind.

With --expand, like bob's ccg expand: CURRENT.yaml is the cluster as it
runs, NODES.yaml its nodes with the ones and disks added (every current
node and disk still there, at the same address and path). The vdisks stay,
and replicas move from the most used disks to the new ones until the disks
are used evenly, each vdisk's replicas still on different nodes. Every move
is printed: anti-entropy refills a moved replica from the vdisk's other
replicas; the only replica of a vdisk must be copied by hand.

The output is plain YAML: no anchors or aliases, which other tools may not read.

Exit codes: 0 written, 1 the input has problems (printed), 2 wrong command
line, 3 a file cannot be read or written.`;

const CHECK_HELP = `Usage: oyster config check -c cluster.yaml [-n node.yaml] [--strict] [--json]

Validates the files as oysterd would load them (cluster.yaml alone, or both
files checked against each other, with users.yaml when node.yaml turns on
Basic authentication), and prints every problem and warning, one per line:
  error: <file>: <key>: <reason>
  warning: <file>: <key>: <reason>

  -c, --cluster FILE   cluster.yaml
  -n, --node FILE      node.yaml
  --strict             unknown keys are problems (as oysterd --strict)
  --json               print the result as JSON: {valid, problems, warnings, summary}

Exit codes: 0 valid (warnings allowed), 1 problems found, 2 wrong command line.`;

function readText(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new Failure(`cannot read ${file}: ${(err as Error).message}`);
  }
}

/** A YAML mapping from a file, or the reason it is not one. */
function mappingOf(file: string): Record<string, unknown> | string {
  let doc: unknown;
  try {
    doc = YAML.parse(readText(file));
  } catch (err) {
    if (err instanceof Failure) throw err;
    return `YAML syntax error: ${(err as Error).message.split('\n')[0]}`;
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return 'the file must be a YAML mapping with nodes';
  return doc as Record<string, unknown>;
}

function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export const generate: Command = {
  name: 'generate',
  summary: 'write the vdisk placement of a cluster.yaml, or expand one (like ccg)',
  help: GENERATE_HELP,
  async run(argv) {
    const { values } = parseOptions(argv, {
      input: { type: 'string', short: 'i' },
      output: { type: 'string', short: 'o' },
      vdisks: { type: 'string', short: 'd' },
      'vdisks-per-disk': { type: 'string', short: 'p' },
      replicas: { type: 'string', short: 'r' },
      'use-racks': { type: 'boolean', short: 'R' },
      expand: { type: 'string' },
      json: { type: 'boolean' },
    });
    if (values.help) return printHelp(generate);
    if (values.input === undefined) throw new UsageError('--input is required');
    const expanding = values.expand !== undefined;
    if (expanding) {
      const given = ['vdisks', 'vdisks-per-disk', 'replicas', 'use-racks'].filter((o) => values[o as keyof typeof values] !== undefined);
      if (given.length > 0) throw new UsageError(`--expand keeps the vdisks and their replicas: --${given[0]} does not go with it`);
    } else if ((values.vdisks === undefined) === (values['vdisks-per-disk'] === undefined)) {
      throw new UsageError('give either --vdisks or --vdisks-per-disk');
    }
    const replicas = integerOption(values.replicas, 'replicas', 1, 1, 1000);
    const problems = (list: readonly Problem[]) => {
      if (values.json) printJson({ written: false, problems: list });
      else for (const p of list) process.stderr.write(`error: ${formatProblem(p)}\n`);
      return ExitCode.negative;
    };
    const inputProblem = (file: string, reason: string) => problems([{ file, key: '', reason }]);
    const doc = mappingOf(values.input);
    if (typeof doc === 'string') return inputProblem(values.input, doc);
    const { vdisks: present, ...nodesOnly } = doc;
    if (Array.isArray(present) && present.length > 0) return inputProblem(values.input, 'vdisks: already present; give a file with the nodes only');
    // The nodes and racks, read and checked as oysterd reads cluster.yaml;
    // the only complaint expected is the missing vdisks.
    const reader = new ConfigReader(values.input);
    const cluster = readClusterConfig(reader, nodesOnly);
    const nodeProblems = reader.problems.filter((p) => p.key !== 'vdisks');
    if (nodeProblems.length > 0) return problems(nodeProblems);
    const nodes = cluster.nodes.map((n) => ({ name: n.name, disks: n.disks.map((d) => d.name) }));
    const disks = nodes.reduce((a, n) => a + n.disks.length, 0);

    let placed: PlacedVDisk[];
    let moves: Move[] | undefined;
    let out: Record<string, unknown>;
    if (expanding) {
      const current = readCurrent(values.expand!);
      if ('problems' in current) return problems(current.problems);
      const mismatch = expansionProblems(current.cluster, cluster, values.input);
      if (mismatch.length > 0) return problems(mismatch);
      ({ vdisks: placed, moves } = expandPlacement(current.cluster.vdisks, nodes));
      // The current file's other keys (key_size, distribution_func) stay with the data they describe.
      const { vdisks: _old, nodes: _n, racks: _r, ...kept } = current.doc;
      out = { ...kept, ...nodesOnly, vdisks: placed };
    } else {
      const count =
        values.vdisks !== undefined
          ? integerOption(values.vdisks, 'vdisks', 0, 1, 2 ** 32 - 1)
          : Math.ceil((integerOption(values['vdisks-per-disk'], 'vdisks-per-disk', 0, 1, 1_000_000) * disks) / replicas);
      try {
        placed = placeVDisks({ nodes, racks: cluster.racks, vdisks: count, replicas, useRacks: values['use-racks'] ?? false }).map((r, id) => ({ id, replicas: r }));
      } catch (err) {
        return inputProblem(values.input, (err as Error).message);
      }
      // The input's keys (key_size, distribution_func, racks) in its order, vdisks last.
      out = { ...nodesOnly, vdisks: placed };
    }
    const outReader = new ConfigReader(values.output ?? '(output)');
    readClusterConfig(outReader, out);
    if (outReader.problems.length > 0) return problems(outReader.problems);
    // Replicas share objects in memory: written as they are, the yaml library would make anchors of them.
    const yaml = YAML.stringify(out, { aliasDuplicateObjects: false });
    if (values.output !== undefined) {
      try {
        fs.writeFileSync(values.output, yaml);
      } catch (err) {
        throw new Failure(`cannot write ${values.output}: ${(err as Error).message}`);
      }
    } else if (!values.json) {
      process.stdout.write(yaml);
    }
    const summary = {
      written: true,
      output: values.output ?? null,
      vdisks: placed.length,
      replicas: Math.max(...placed.map((v) => v.replicas.length)),
      disks,
      nodes: cluster.nodes.length,
      ...(moves ? { moves } : {}),
    };
    if (values.json) {
      printJson(values.output === undefined ? { ...summary, cluster: out } : summary);
      return ExitCode.ok;
    }
    for (const m of moves ?? []) process.stderr.write(`${describeMove(m, placed)}\n`);
    if (values.output !== undefined) {
      const what = expanding ? `${moves!.length} replica${moves!.length === 1 ? '' : 's'} moved` : `${summary.vdisks} vdisks x ${replicas} replicas`;
      process.stderr.write(`wrote ${values.output}: ${what} on ${disks} disks of ${cluster.nodes.length} nodes\n`);
    }
    return ExitCode.ok;
  },
};

/** The cluster as it runs, read and checked as oysterd reads it. */
function readCurrent(file: string): { doc: Record<string, unknown>; cluster: ClusterConfig } | { problems: Problem[] } {
  const doc = mappingOf(file);
  if (typeof doc === 'string') return { problems: [{ file, key: '', reason: doc }] };
  const reader = new ConfigReader(file);
  const cluster = readClusterConfig(reader, doc);
  return reader.problems.length > 0 ? { problems: reader.problems } : { doc, cluster };
}

/** An expansion adds nodes and disks: every current one must still be there, where it was. */
function expansionProblems(current: ClusterConfig, next: ClusterConfig, file: string): Problem[] {
  const out: Problem[] = [];
  for (const n of current.nodes) {
    const now = next.nodes.find((x) => x.name === n.name);
    if (!now) {
      out.push({ file, key: 'nodes', reason: `node ${n.name} of the current cluster is missing: expand only adds nodes` });
      continue;
    }
    if (now.address !== n.address) out.push({ file, key: 'nodes', reason: `node ${n.name}: address ${now.address}, the current cluster has ${n.address}` });
    for (const d of n.disks) {
      const disk = now.disks.find((x) => x.name === d.name);
      if (!disk) out.push({ file, key: 'nodes', reason: `disk ${d.name} of node ${n.name} is missing: expand only adds disks` });
      else if (disk.path !== d.path) out.push({ file, key: 'nodes', reason: `disk ${d.name} of node ${n.name}: path ${disk.path}, the current cluster has ${d.path} (its data is there)` });
    }
  }
  return out;
}

function describeMove(m: Move, vdisks: PlacedVDisk[]): string {
  const others = vdisks.find((v) => v.id === m.vdisk)!.replicas.length > 1;
  const how = others ? 'anti-entropy refills it from the other replicas' : `its only replica: copy ${m.from.node}'s ${m.from.disk} directory of vdisk ${m.vdisk} to ${m.to.node}'s ${m.to.disk} before the nodes run on the new file`;
  return `vdisk ${m.vdisk}: ${m.from.node}/${m.from.disk} -> ${m.to.node}/${m.to.disk} (${how})`;
}

export const check: Command = {
  name: 'check',
  summary: 'validate cluster.yaml and node.yaml as oysterd loads them',
  help: CHECK_HELP,
  async run(argv) {
    const { values } = parseOptions(argv, {
      cluster: { type: 'string', short: 'c' },
      node: { type: 'string', short: 'n' },
      strict: { type: 'boolean' },
      json: { type: 'boolean' },
    });
    if (values.help) return printHelp(check);
    if (values.cluster === undefined) throw new UsageError('--cluster is required');
    const strict = values.strict ?? false;
    let problems: readonly Problem[] = [];
    let warnings: readonly Problem[] = [];
    let summary: Record<string, unknown> | null = null;
    let what = '';
    if (values.node === undefined) {
      const reader = new ConfigReader(values.cluster);
      let cluster: ClusterConfig | undefined;
      try {
        cluster = readClusterConfig(reader, YAML.parse(fs.readFileSync(values.cluster, 'utf8')));
        reader.finish();
      } catch (err) {
        reader.problem('', (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'file not found' : (err as Error).message);
      }
      ({ problems, warnings } = sortProblems(reader.problems, reader.warnings, { strict }));
      if (cluster) {
        summary = { nodes: cluster.nodes.length, vdisks: cluster.vdisks.length, keySize: cluster.keySize };
        what = `${cluster.nodes.length} nodes, ${cluster.vdisks.length} vdisks, key size ${cluster.keySize}`;
      }
    } else {
      try {
        const c = loadConfig(values.cluster, values.node, { strict });
        warnings = c.warnings;
        summary = {
          node: c.node.name,
          nodes: c.cluster.nodes.length,
          vdisks: c.cluster.vdisks.length,
          keySize: c.cluster.keySize,
          rest: `${c.node.httpApiAddress}:${c.node.httpApiPort}`,
          authentication: c.node.authenticationType,
        };
        what =
          `node ${c.node.name} of ${c.cluster.nodes.length}, ${c.cluster.vdisks.length} vdisks, key size ${c.cluster.keySize}, ` +
          `REST on ${summary.rest}, authentication ${c.node.authenticationType}`;
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        ({ problems, warnings } = err);
      }
    }
    const valid = problems.length === 0;
    if (values.json) {
      const plain = (list: readonly Problem[]) => list.map(({ file, key, reason }) => ({ file, key, reason }));
      printJson({ valid, problems: plain(problems), warnings: plain(warnings), summary: valid ? summary : null });
      return valid ? ExitCode.ok : ExitCode.negative;
    }
    for (const p of problems) process.stdout.write(`error: ${formatProblem(p)}\n`);
    for (const w of warnings) process.stdout.write(`warning: ${formatProblem(w)}\n`);
    if (!valid) {
      process.stdout.write(`${problems.length} problem${problems.length === 1 ? '' : 's'}, ${warnings.length} warning${warnings.length === 1 ? '' : 's'}\n`);
      return ExitCode.negative;
    }
    process.stdout.write(`valid: ${what}${warnings.length > 0 ? ` (${warnings.length} warning${warnings.length === 1 ? '' : 's'})` : ''}\n`);
    return ExitCode.ok;
  },
};
