// oyster config generate (vdisk placement from a nodes-only file, like ccg
// new, and onto added nodes and disks, like ccg expand; plain YAML) and
// oyster config check (the loader oysterd uses), on real files.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import YAML from 'yaml';
import { writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import { oyster, PACKAGING } from './lib';

interface Cluster {
  nodes: Array<{ name: string; disks: Array<{ name: string }> }>;
  racks?: Array<{ name: string; nodes: string[] }>;
  vdisks: Array<{ id: number; replicas: Array<{ node: string; disk: string }> }>;
  key_size?: number;
}

const node = (name: string, disks: number, port: number) => ({
  name,
  address: `10.0.0.${port}:20000`,
  disks: Array.from({ length: disks }, (_, i) => ({ name: `d${i}`, path: `/mnt/d${i}` })),
});

function writeNodes(dir: string, doc: object): string {
  const file = path.join(dir, 'nodes.yaml');
  fs.writeFileSync(file, YAML.stringify(doc));
  return file;
}

function diskUse(c: Cluster): number[] {
  const use = new Map<string, number>();
  for (const n of c.nodes) for (const d of n.disks) use.set(`${n.name}/${d.name}`, 0);
  for (const v of c.vdisks) for (const r of v.replicas) use.set(`${r.node}/${r.disk}`, use.get(`${r.node}/${r.disk}`)! + 1);
  return [...use.values()];
}

t.test('generate: replicas on distinct nodes, disks used evenly', async (t) => {
  const dir = tempDir(t);
  const input = writeNodes(dir, { nodes: [node('n1', 2, 1), node('n2', 2, 2), node('n3', 1, 3)], key_size: 8 });
  const r = await oyster(['config', 'generate', '-i', input, '-d', '10', '-r', '2']);
  t.equal(r.code, 0, r.stderr);
  const c = YAML.parse(r.stdout) as Cluster;
  t.equal(c.vdisks.length, 10);
  t.same(c.vdisks.map((v) => v.id), [...Array(10).keys()]);
  t.equal(c.key_size, 8, 'other keys of the input are kept');
  for (const v of c.vdisks) {
    t.equal(v.replicas.length, 2);
    t.not(v.replicas[0].node, v.replicas[1].node, `vdisk ${v.id}: replicas on different nodes`);
  }
  const use = diskUse(c);
  t.equal(use.reduce((a, b) => a + b), 20);
  t.ok(Math.max(...use) - Math.min(...use) <= 1, `every disk holds 4 replicas (${use})`);
  t.notMatch(r.stdout, /[&*][a-z]+\d+\b/, 'plain YAML: no anchors or aliases for the replicas that repeat');

  const perDisk = await oyster(['config', 'generate', '-i', input, '-p', '4', '-r', '2']);
  t.equal((YAML.parse(perDisk.stdout) as Cluster).vdisks.length, 10, 'ceil(4 per disk x 5 disks / 2 replicas)');
});

t.test('generate with racks: the second replica in the first one\'s rack, the third elsewhere', async (t) => {
  const dir = tempDir(t);
  const input = writeNodes(dir, {
    nodes: [node('a1', 1, 1), node('a2', 1, 2), node('b1', 1, 3), node('b2', 1, 4)],
    racks: [
      { name: 'ra', nodes: ['a1', 'a2'] },
      { name: 'rb', nodes: ['b1', 'b2'] },
    ],
  });
  const out = path.join(dir, 'cluster.yaml');
  const r = await oyster(['config', 'generate', '-i', input, '-d', '8', '-r', '3', '-R', '-o', out]);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, 'wrote');
  const c = YAML.parse(fs.readFileSync(out, 'utf8')) as Cluster;
  const rackOf = (n: string) => (n.startsWith('a') ? 'ra' : 'rb');
  const firstRacks = new Map<string, number>();
  for (const v of c.vdisks) {
    const [a, b, x] = v.replicas.map((p) => rackOf(p.node));
    t.equal(a, b, `vdisk ${v.id}: second replica in the first one's rack`);
    t.not(x, a, `vdisk ${v.id}: third replica in the other rack`);
    firstRacks.set(a, (firstRacks.get(a) ?? 0) + 1);
  }
  t.same([...firstRacks.values()], [4, 4], 'first replicas alternate between the racks');
  t.same(c.racks, [
    { name: 'ra', nodes: ['a1', 'a2'] },
    { name: 'rb', nodes: ['b1', 'b2'] },
  ]);
  const check = await oyster(['config', 'check', '-c', out]);
  t.equal(check.code, 0);
  t.equal(check.stdout, 'valid: 4 nodes, 8 vdisks, key size 16\n');
});

t.test('generate --expand: the vdisks stay, replicas move onto the added disks', async (t) => {
  const dir = tempDir(t);
  const first = writeNodes(dir, { nodes: [node('n1', 1, 1), node('n2', 1, 2)], key_size: 8 });
  const current = path.join(dir, 'current.yaml');
  t.equal((await oyster(['config', 'generate', '-i', first, '-d', '12', '-r', '2', '-o', current])).code, 0);
  const before = YAML.parse(fs.readFileSync(current, 'utf8')) as Cluster;
  // A third node, and a second disk on n1.
  const grown = path.join(dir, 'grown.yaml');
  fs.writeFileSync(grown, YAML.stringify({ nodes: [node('n1', 2, 1), node('n2', 1, 2), node('n3', 1, 3)] }));
  const out = path.join(dir, 'expanded.yaml');
  const r = await oyster(['config', 'generate', '-i', grown, '--expand', current, '-o', out]);
  t.equal(r.code, 0, r.stderr);
  const after = YAML.parse(fs.readFileSync(out, 'utf8')) as Cluster;
  t.same(after.vdisks.map((v) => [v.id, v.replicas.length]), before.vdisks.map((v) => [v.id, v.replicas.length]), 'the same vdisks with as many replicas');
  t.equal(after.nodes.length, 3, 'the nodes of the input');
  t.equal(after.key_size, 8, "the current file's key_size stays");
  for (const v of after.vdisks) t.equal(new Set(v.replicas.map((x) => x.node)).size, 2, `vdisk ${v.id}: replicas on different nodes`);
  const use = diskUse(after);
  t.ok(Math.max(...use) - Math.min(...use) <= 1, `the four disks are used evenly (${use})`);
  const kept = after.vdisks.flatMap((v, i) => v.replicas.filter((x) => before.vdisks[i].replicas.some((b) => b.node === x.node && b.disk === x.disk))).length;
  const moves = r.stderr.split('\n').filter((l) => /^vdisk \d+: /.test(l));
  t.equal(moves.length, 24 - kept, `every replica that moved is printed (${moves.length}), the others stay where their data is`);
  t.equal(moves.length, 12, 'as few as it takes: 24 replicas on 4 disks, 6 each, 12 onto the new disks');
  t.ok(moves.every((l) => /-> n(1\/d1|3\/d0) \(anti-entropy refills it from the other replicas\)$/.test(l)), 'onto the new disks, with what to expect');
  t.match(r.stderr, `wrote ${out}: 12 replicas moved on 4 disks of 3 nodes`);
  t.equal((await oyster(['config', 'check', '-c', out])).code, 0, 'the result is valid');

  const lost = path.join(dir, 'lost.yaml');
  fs.writeFileSync(lost, YAML.stringify({ nodes: [node('n1', 2, 1), node('n3', 1, 3)] }));
  const dropped = await oyster(['config', 'generate', '-i', lost, '--expand', current]);
  t.equal(dropped.code, 1);
  t.match(dropped.stderr, 'node n2 of the current cluster is missing: expand only adds nodes');
  const moved = path.join(dir, 'moved.yaml');
  fs.writeFileSync(moved, YAML.stringify({ nodes: [{ ...node('n1', 1, 1), disks: [{ name: 'd0', path: '/elsewhere' }] }, node('n2', 1, 2)] }));
  const elsewhere = await oyster(['config', 'generate', '-i', moved, '--expand', current]);
  t.equal(elsewhere.code, 1);
  t.match(elsewhere.stderr, 'disk d0 of node n1: path /elsewhere, the current cluster has /mnt/d0 (its data is there)');
  t.equal((await oyster(['config', 'generate', '-i', grown, '--expand', current, '-d', '4'])).code, 2, '--expand keeps the vdisk count');
});

t.test('generate refuses what it cannot do', async (t) => {
  const dir = tempDir(t);
  const input = writeNodes(dir, { nodes: [node('n1', 1, 1), node('n2', 1, 2)] });
  const tooMany = await oyster(['config', 'generate', '-i', input, '-d', '4', '-r', '3']);
  t.equal(tooMany.code, 1);
  t.match(tooMany.stderr, '3 replicas need as many nodes, the cluster has 2');
  const noRacks = await oyster(['config', 'generate', '-i', input, '-d', '4', '-R']);
  t.equal(noRacks.code, 1);
  t.match(noRacks.stderr, 'needs racks');
  const withVdisks = writeNodes(dir, { nodes: [node('n1', 1, 1)], vdisks: [{ id: 0, replicas: [{ node: 'n1', disk: 'd0' }] }] });
  t.equal((await oyster(['config', 'generate', '-i', withVdisks, '-d', '4'])).code, 1, 'the input already has vdisks');
  const dup = writeNodes(dir, { nodes: [node('n1', 1, 1), node('n1', 1, 2)] });
  const dupRun = await oyster(['config', 'generate', '-i', dup, '-d', '4']);
  t.equal(dupRun.code, 1);
  t.match(dupRun.stderr, /nodes\[1\]\.name: duplicate node name "n1"/);
  t.equal((await oyster(['config', 'generate', '-d', '4'])).code, 2, 'no input');
  t.equal((await oyster(['config', 'generate', '-i', input, '-d', '4', '-p', '2'])).code, 2, 'both counts');
  t.equal((await oyster(['config', 'generate', '-i', path.join(dir, 'missing.yaml'), '-d', '4'])).code, 3, 'unreadable input');
});

t.test('check: every problem and warning of both files, as oysterd loads them', async (t) => {
  const dir = tempDir(t);
  const files = await writeCluster(dir, { nodes: [{ name: 'a' }] });
  const ok = await oyster(['config', 'check', '-c', files.clusterYaml, '-n', files.nodeYaml.a]);
  t.equal(ok.code, 0);
  t.match(ok.stdout, /^valid: node a of 1, 4 vdisks, key size 16, REST on 127\.0\.0\.1:0, authentication None\n$/);

  const doc = YAML.parse(fs.readFileSync(files.nodeYaml.a, 'utf8')) as Record<string, unknown>;
  const broken = path.join(dir, 'broken.node.yaml');
  fs.writeFileSync(broken, YAML.stringify({ ...doc, quorum: 0, cluster_policy: 'paxos', colour: 'blue' }));
  const bad = await oyster(['config', 'check', '-c', files.clusterYaml, '-n', broken]);
  t.equal(bad.code, 1);
  t.match(bad.stdout, `error: ${broken}: quorum:`);
  t.match(bad.stdout, `error: ${broken}: cluster_policy: unknown cluster policy "paxos"`);
  t.match(bad.stdout, `warning: ${broken}: colour: unknown key, ignored`);
  t.match(bad.stdout, /\n2 problems, 1 warning\n$/);

  const missing = await oyster(['config', 'check', '-c', path.join(dir, 'nope.yaml')]);
  t.equal(missing.code, 1);
  t.match(missing.stdout, 'file not found');
  t.equal((await oyster(['config', 'check', '-n', files.nodeYaml.a])).code, 2, '--cluster is required');
});

t.test('check: the configuration the package installs is valid', async (t) => {
  const r = await oyster(['config', 'check', '-c', path.join(PACKAGING, 'etc', 'cluster.yaml'), '-n', path.join(PACKAGING, 'etc', 'node.yaml')]);
  t.equal(r.code, 0);
  t.equal(r.stdout, 'valid: node local of 1, 4 vdisks, key size 16, REST on 127.0.0.1:8000, authentication None\n');
});
