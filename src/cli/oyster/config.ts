// oyster config generate | check: writing a cluster.yaml's vdisk placement
// from the nodes (like bob's ccg), and validating configuration files with
// the very code oysterd loads them with.
import fs from 'node:fs';
import YAML from 'yaml';
import { ClusterConfig, readClusterConfig } from '../../config/cluster-config';
import { ConfigError, formatProblem, Problem } from '../../config/errors';
import { loadConfig } from '../../config/load';
import { ConfigReader } from '../../config/reader';
import { Command, integerOption, parseOptions, printHelp } from './command';
import { ExitCode, Failure, UsageError } from './exit-codes';
import { placeVDisks } from './placement';

const GENERATE_HELP = `Usage: oyster config generate -i NODES.yaml (-d COUNT | -p PER_DISK) [-r REPLICAS] [-R] [-o cluster.yaml]

Reads a cluster.yaml that lists only the nodes (and, optionally, racks) and
writes it back with a vdisk placement, like bob's ccg:
  -i, --input FILE           the nodes (bob's cluster.yaml format, no vdisks)
  -o, --output FILE          where to write (default: standard output)
  -d, --vdisks COUNT         how many vdisks
  -p, --vdisks-per-disk N    or: N per physical disk, COUNT = ceil(N x disks / replicas)
  -r, --replicas N           replicas per vdisk, each on a different node (default 1)
  -R, --use-racks            place replicas by rack: the second in the first one's
                             rack, the others in other racks (needs racks in the input)

Every disk gets about the same number of replicas, so nodes with more disks
hold more. The number of vdisks is fixed for the life of a cluster (keys map
to vdisks by key mod count): choose it with growth in mind.

Exit codes: 0 written, 1 the input has problems (printed), 2 wrong command
line, 3 a file cannot be read or written.`;

const CHECK_HELP = `Usage: oyster config check -c cluster.yaml [-n node.yaml]

Validates the files as oysterd would load them (cluster.yaml alone, or both
files checked against each other, with users.yaml when node.yaml turns on
Basic authentication), and prints every problem and warning, one per line:
  error: <file>: <key>: <reason>
  warning: <file>: <key>: <reason>

  -c, --cluster FILE   cluster.yaml
  -n, --node FILE      node.yaml

Exit codes: 0 valid (warnings allowed), 1 problems found, 2 wrong command line.`;

export const generate: Command = {
  name: 'generate',
  summary: 'write the vdisk placement of a cluster.yaml (like ccg)',
  help: GENERATE_HELP,
  async run(argv) {
    const { values } = parseOptions(argv, {
      input: { type: 'string', short: 'i' },
      output: { type: 'string', short: 'o' },
      vdisks: { type: 'string', short: 'd' },
      'vdisks-per-disk': { type: 'string', short: 'p' },
      replicas: { type: 'string', short: 'r' },
      'use-racks': { type: 'boolean', short: 'R' },
    });
    if (values.help) return printHelp(generate);
    if (values.input === undefined) throw new UsageError('--input is required');
    if ((values.vdisks === undefined) === (values['vdisks-per-disk'] === undefined)) {
      throw new UsageError('give either --vdisks or --vdisks-per-disk');
    }
    const replicas = integerOption(values.replicas, 'replicas', 1, 1, 1000);
    let text: string;
    try {
      text = fs.readFileSync(values.input, 'utf8');
    } catch (err) {
      throw new Failure(`cannot read ${values.input}: ${(err as Error).message}`);
    }
    const problems = (list: readonly Problem[]) => {
      for (const p of list) process.stderr.write(`error: ${formatProblem(p)}\n`);
      return ExitCode.negative;
    };
    const input = (reason: string) => problems([{ file: values.input!, key: '', reason }]);
    let doc: unknown;
    try {
      doc = YAML.parse(text);
    } catch (err) {
      return input(`YAML syntax error: ${(err as Error).message.split('\n')[0]}`);
    }
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return input('the file must be a YAML mapping with nodes');
    const { vdisks: present, ...nodesOnly } = doc as Record<string, unknown>;
    if (Array.isArray(present) && present.length > 0) return input('vdisks: already present; give a file with the nodes only');
    // The nodes and racks, read and checked as oysterd reads cluster.yaml;
    // the only complaint expected is the missing vdisks.
    const reader = new ConfigReader(values.input);
    const cluster = readClusterConfig(reader, nodesOnly);
    const nodeProblems = reader.problems.filter((p) => p.key !== 'vdisks');
    if (nodeProblems.length > 0) return problems(nodeProblems);
    const disks = cluster.nodes.reduce((a, n) => a + n.disks.length, 0);
    const count =
      values.vdisks !== undefined
        ? integerOption(values.vdisks, 'vdisks', 0, 1, 2 ** 32 - 1)
        : Math.ceil((integerOption(values['vdisks-per-disk'], 'vdisks-per-disk', 0, 1, 1_000_000) * disks) / replicas);
    let placement;
    try {
      placement = placeVDisks({
        nodes: cluster.nodes.map((n) => ({ name: n.name, disks: n.disks.map((d) => d.name) })),
        racks: cluster.racks,
        vdisks: count,
        replicas,
        useRacks: values['use-racks'] ?? false,
      });
    } catch (err) {
      return input((err as Error).message);
    }
    // The input's keys (key_size, distribution_func, racks) in its order, vdisks last.
    const out = { ...nodesOnly, vdisks: placement.map((replicasOf, id) => ({ id, replicas: replicasOf })) };
    const outReader = new ConfigReader(values.output ?? '(output)');
    readClusterConfig(outReader, out);
    if (outReader.problems.length > 0) return problems(outReader.problems);
    const yaml = YAML.stringify(out);
    if (values.output === undefined) {
      process.stdout.write(yaml);
    } else {
      try {
        fs.writeFileSync(values.output, yaml);
      } catch (err) {
        throw new Failure(`cannot write ${values.output}: ${(err as Error).message}`);
      }
      process.stderr.write(`wrote ${values.output}: ${count} vdisks x ${replicas} replicas on ${disks} disks of ${cluster.nodes.length} nodes\n`);
    }
    return ExitCode.ok;
  },
};

export const check: Command = {
  name: 'check',
  summary: 'validate cluster.yaml and node.yaml as oysterd loads them',
  help: CHECK_HELP,
  async run(argv) {
    const { values } = parseOptions(argv, {
      cluster: { type: 'string', short: 'c' },
      node: { type: 'string', short: 'n' },
    });
    if (values.help) return printHelp(check);
    if (values.cluster === undefined) throw new UsageError('--cluster is required');
    let problems: readonly Problem[] = [];
    let warnings: readonly Problem[] = [];
    let what: string;
    if (values.node === undefined) {
      const reader = new ConfigReader(values.cluster);
      let cluster: ClusterConfig | undefined;
      try {
        cluster = readClusterConfig(reader, YAML.parse(fs.readFileSync(values.cluster, 'utf8')));
        reader.finish();
      } catch (err) {
        reader.problem('', (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'file not found' : (err as Error).message);
      }
      ({ problems, warnings } = reader);
      what = cluster ? `${cluster.nodes.length} nodes, ${cluster.vdisks.length} vdisks, key size ${cluster.keySize}` : '';
    } else {
      try {
        const c = loadConfig(values.cluster, values.node);
        warnings = c.warnings;
        what =
          `node ${c.node.name} of ${c.cluster.nodes.length}, ${c.cluster.vdisks.length} vdisks, key size ${c.cluster.keySize}, ` +
          `REST on ${c.node.httpApiAddress}:${c.node.httpApiPort}, authentication ${c.node.authenticationType}`;
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        ({ problems, warnings } = err);
        what = '';
      }
    }
    for (const p of problems) process.stdout.write(`error: ${formatProblem(p)}\n`);
    for (const w of warnings) process.stdout.write(`warning: ${formatProblem(w)}\n`);
    if (problems.length > 0) {
      process.stdout.write(`${problems.length} problem${problems.length === 1 ? '' : 's'}, ${warnings.length} warning${warnings.length === 1 ? '' : 's'}\n`);
      return ExitCode.negative;
    }
    process.stdout.write(`valid: ${what}${warnings.length > 0 ? ` (${warnings.length} warning${warnings.length === 1 ? '' : 's'})` : ''}\n`);
    return ExitCode.ok;
  },
};
