// oyster config generate (vdisk placement from a nodes-only file, like ccg)
// and oyster config check (the loader oysterd uses), on real files.
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
