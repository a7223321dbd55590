// cluster.yaml: parsing, bob's validation rules, Oyster's key_size.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { readCluster } from './read';

const fixtures = path.resolve(__dirname, '../../../test/fixtures/bob-configs');
const fixture = (name: string) => fs.readFileSync(path.join(fixtures, name), 'utf8');

// One node n1 (disk d1) and vdisk 0 on it; `extra` is appended at top level.
const base = (extra = '') => `
nodes:
  - name: n1
    address: 127.0.0.1:20000
    disks:
      - name: d1
        path: /data/d1
vdisks:
  - id: 0
    replicas:
      - node: n1
        disk: d1
${extra}`;

t.test("bob's example cluster.yaml", async (t) => {
  const r = readCluster(fixture('cluster.yaml'));
  t.same(r.problems, []);
  t.same(r.warnings, []);
  t.same(r.config, {
    nodes: [{ name: 'local_node', address: '127.0.0.1:20000', disks: [{ name: 'disk1', path: '/tmp/d1' }] }],
    vdisks: [{ id: 0, replicas: [{ node: 'local_node', disk: 'disk1' }] }],
    racks: [],
    distributionFunc: 'Mod',
    keySize: 16,
  });
});

t.test("bob's example cluster with racks", async (t) => {
  const r = readCluster(fixture('cluster_with_racks.yaml'));
  t.same(r.problems, []);
  t.same(r.warnings, []);
  t.equal(r.config.nodes.length, 6);
  t.same(r.config.nodes[1].disks, [
    { name: 'disk1', path: '/tmp/d1/d2' },
    { name: 'disk2', path: '/tmp/d2/d2' },
  ]);
  t.same(r.config.vdisks.map((v) => v.id), [0, 1, 2, 3, 4, 5]);
  t.same(r.config.racks, [
    { name: 'rack1', nodes: ['node1', 'node2'] },
    { name: 'rack2', nodes: ['node3', 'node4', 'node5'] },
    { name: 'rack3', nodes: ['node6'] },
  ]);
});

t.test('the worked example: unsorted ids, host names, one node with two replicas of a vdisk', async (t) => {
  const r = readCluster(fixture('cluster-worked-example.yaml'));
  t.same(r.problems, []);
  t.equal(r.config.keySize, 8);
  t.same(r.config.vdisks.map((v) => v.id), [2, 0, 1], 'file order is kept');
  t.equal(r.config.nodes[2].address, 'storage-3.example.com:20000');
});

t.test('at least one node and one vdisk', async (t) => {
  t.same(readCluster('').lines, ['nodes: at least one node is required', 'vdisks: at least one vdisk is required']);
  t.same(readCluster('nodes: []\nvdisks: []\n').lines, [
    'nodes: at least one node is required',
    'vdisks: at least one vdisk is required',
  ]);
  t.same(readCluster('nodes:\nvdisks:\n').lines, [
    'nodes: at least one node is required',
    'vdisks: at least one vdisk is required',
  ]);
  t.same(readCluster('nodes: n1\nvdisks: 3\n').lines, ['nodes: must be a list', 'vdisks: must be a list']);
});

t.test('node fields', async (t) => {
  const lines = (nodes: string) =>
    readCluster(`nodes:\n${nodes}\nvdisks:\n  - id: 0\n    replicas: [{node: n1, disk: d1}]\n`).lines;
  t.same(lines('  - {name: n1, address: "127.0.0.1:1", disks: [{name: d1, path: /p}]}'), []);
  t.same(lines('  - {address: "127.0.0.1:1", disks: [{name: d1, path: /p}]}'), ['nodes[0].name: is required']);
  t.same(lines('  - {name: "", address: "127.0.0.1:1", disks: [{name: d1, path: /p}]}'), ['nodes[0].name: must not be empty']);
  t.same(lines('  - {name: ~, address: "127.0.0.1:1", disks: [{name: d1, path: /p}]}'), ['nodes[0].name: is present but empty']);
  t.same(lines('  - {name: "~", address: "127.0.0.1:1", disks: [{name: d1, path: /p}]}'), ['nodes[0].name: is present but empty']);
  t.same(lines('  - {name: n1, disks: [{name: d1, path: /p}]}'), ['nodes[0].address: is required']);
  t.same(lines('  - {name: n1, address: "127.0.0.1:1"}'), ['nodes[0].disks: is required']);
  t.same(lines('  - {name: n1, address: "127.0.0.1:1", disks: [{path: /p}, {name: d1}]}'), [
    'nodes[0].disks[0].name: is required',
    'nodes[0].disks[1].path: is required',
  ]);
  t.same(lines('  - {name: n1, address: "127.0.0.1:1", disks: [{name: d1, path: ~}]}'), [
    'nodes[0].disks[0].path: is present but empty',
  ]);
  t.same(lines('  - {name: n1, address: "127.0.0.1:1", disks: [{name: d1, path: /a}, {name: d1, path: /b}]}'), [
    'nodes[0].disks[1].name: duplicate disk name "d1" in node "n1"',
  ]);
  t.same(lines('  - {name: n1, address: "127.0.0.1:1", disks: [d1]}'), ['nodes[0].disks[0]: must be a mapping of keys to values']);
  t.same(lines('  - just-a-name'), ['nodes[0]: must be a mapping of keys to values']);
});

t.test('node addresses: host:port with a u16 port', async (t) => {
  const problem = (address: string) =>
    readCluster(
      `nodes:\n  - {name: n1, address: "${address}", disks: [{name: d1, path: /p}]}\n` +
        'vdisks:\n  - {id: 0, replicas: [{node: n1, disk: d1}]}\n',
    ).lines;
  const valid = ['127.0.0.1:20000', '10.0.0.1:0', '0.0.0.0:65535', 'localhost:20000', 'storage-1.example.com:20000'];
  for (const ok of [...valid, '[::1]:20000', '[fe80::1]:1']) {
    t.same(problem(ok), [], ok);
  }
  const bad: Array<[string, RegExp]> = [
    ['127.0.0.1', /no port/],
    ['127.0.0.1:', /no port/],
    ['host', /no port/],
    [':20000', /no host/],
    ['127.0.0.1:65536', /invalid port/],
    ['127.0.0.1:-1', /invalid port/],
    ['127.0.0.1:http', /invalid port/],
    ['http://127.0.0.1:20000', /without a scheme/],
    ['127.0.0.1:20000/path', /must be host:port/],
    ['user@host:20000', /must be host:port/],
    ['host name:20000', /must be host:port/],
    ['::1:20000', /invalid host name/],
    ['[::1:20000', /invalid IPv6/],
    ['[zz]:20000', /invalid IPv6/],
    ['[::1]', /no port/],
  ];
  for (const [address, reason] of bad) {
    const lines = problem(address);
    t.equal(lines.length, 1, address);
    t.match(lines[0], /^nodes\[0\]\.address: /, address);
    t.match(lines[0], reason, address);
  }
});

t.test('unique node names and addresses', async (t) => {
  const r = readCluster(`
nodes:
  - {name: a, address: "10.0.0.1:20000", disks: [{name: d, path: /p}]}
  - {name: b, address: "10.0.0.1:20000", disks: [{name: d, path: /p}]}
  - {name: a, address: "10.0.0.3:20000", disks: [{name: d, path: /p}]}
vdisks:
  - {id: 0, replicas: [{node: a, disk: d}]}
`);
  t.same(r.lines, [
    'nodes[1].address: duplicate node address "10.0.0.1:20000" (also nodes[0])',
    'nodes[2].name: duplicate node name "a" (also nodes[0])',
  ]);
});

t.test('vdisk ids must be exactly 0..N-1', async (t) => {
  const vdisks = (ids: Array<number | string>) =>
    readCluster(
      `nodes:\n  - {name: n1, address: "127.0.0.1:1", disks: [{name: d1, path: /p}]}\nvdisks:\n` +
        ids.map((id) => `  - {id: ${id}, replicas: [{node: n1, disk: d1}]}\n`).join(''),
    ).lines;
  t.same(vdisks([0]), []);
  t.same(vdisks([3, 1, 0, 2]), [], 'any order');
  t.same(vdisks([1]), ['vdisks[0].id: gap in vdisk ids before 1 (missing 0); ids must be exactly 0..N-1']);
  t.same(vdisks([0, 1, 4]), ['vdisks[2].id: gap in vdisk ids before 4 (missing 2..3); ids must be exactly 0..N-1']);
  t.same(vdisks([0, 2, 5]), [
    'vdisks[1].id: gap in vdisk ids before 2 (missing 1); ids must be exactly 0..N-1',
    'vdisks[2].id: gap in vdisk ids before 5 (missing 3..4); ids must be exactly 0..N-1',
  ]);
  t.same(vdisks([0, 1, 1]), ['vdisks[2].id: duplicate vdisk id 1 (also vdisks[1])']);
  t.same(vdisks([0, 0, 0]), [
    'vdisks[1].id: duplicate vdisk id 0 (also vdisks[0])',
    'vdisks[2].id: duplicate vdisk id 0 (also vdisks[0])',
  ]);
  t.same(vdisks([0, 4294967295]), [
    'vdisks[1].id: gap in vdisk ids before 4294967295 (missing 1..4294967294); ids must be exactly 0..N-1',
  ]);
  t.same(vdisks([0, 4294967296]), ['vdisks[1].id: must be at most 4294967295']);
  t.same(vdisks([0, -1]), ['vdisks[1].id: must be at least 0']);
  t.same(vdisks([0, '"one"']), ['vdisks[1].id: must be a whole number']);
  t.same(readCluster(base('').replace('  - id: 0\n', '  - ids: 0\n')).lines, ['vdisks[0].id: is required']);
});

t.test('replicas', async (t) => {
  const replicas = (list: string) =>
    readCluster(`
nodes:
  - {name: n1, address: "10.0.0.1:1", disks: [{name: d1, path: /a}, {name: d2, path: /b}]}
  - {name: n2, address: "10.0.0.2:1", disks: [{name: d1, path: /a}]}
vdisks:
  - id: 0
${list}
`).lines;
  t.same(replicas('    replicas: [{node: n1, disk: d1}, {node: n2, disk: d1}]'), []);
  t.same(replicas('    replicas: [{node: n1, disk: d1}, {node: n1, disk: d2}]'), [], 'one node, two disks');
  t.same(replicas('    replicas: []'), ['vdisks[0].replicas: a vdisk must have at least one replica']);
  t.same(replicas(''), ['vdisks[0].replicas: a vdisk must have at least one replica']);
  t.same(replicas('    replicas: [{node: n1, disk: d1}, {node: n1, disk: d1}]'), [
    'vdisks[0].replicas[1]: duplicate replica (node "n1", disk "d1") in vdisk 0',
  ]);
  t.same(replicas('    replicas: [{node: n3, disk: d1}]'), ['vdisks[0].replicas[0].node: node "n3" is not in nodes']);
  t.same(replicas('    replicas: [{node: n2, disk: d2}]'), ['vdisks[0].replicas[0].disk: node "n2" has no disk "d2"']);
  t.same(replicas('    replicas: [{node: n1}, {disk: d1}]'), [
    'vdisks[0].replicas[0].disk: is required',
    'vdisks[0].replicas[1].node: is required',
  ]);
});

t.test('racks', async (t) => {
  const racks = (list: string) =>
    readCluster(`
nodes:
  - {name: n1, address: "10.0.0.1:1", disks: [{name: d, path: /a}]}
  - {name: n2, address: "10.0.0.2:1", disks: [{name: d, path: /a}]}
  - {name: n3, address: "10.0.0.3:1", disks: [{name: d, path: /a}]}
vdisks:
  - {id: 0, replicas: [{node: n1, disk: d}]}
racks:
${list}
`).lines;
  t.same(racks('  - {name: r1, nodes: [n1, n2]}\n  - {name: r2, nodes: [n3]}'), []);
  t.same(racks('  - {name: r1, nodes: []}'), []);
  t.same(racks('  - {nodes: [n1]}'), ['racks[0].name: is required']);
  t.same(racks('  - {name: r1}'), ['racks[0].nodes: is required']);
  t.same(racks('  - {name: ~, nodes: [n1]}'), ['racks[0].name: is present but empty']);
  t.same(racks('  - {name: r1, nodes: [n1]}\n  - {name: r1, nodes: [n2]}'), ['racks[1].name: duplicate rack name "r1" (also racks[0])']);
  t.same(racks('  - {name: r1, nodes: [n1, n1]}'), ['racks[0].nodes[1]: node "n1" is listed twice in rack "r1"']);
  t.same(racks('  - {name: r1, nodes: [n1]}\n  - {name: r2, nodes: [n2, n1]}'), ['racks[1].nodes[1]: node "n1" is already in rack "r1"']);
  t.same(racks('  - {name: r1, nodes: [n1, n9]}'), ['racks[0].nodes[1]: node "n9" is not in nodes']);
  t.same(racks('  - {name: r1, nodes: [{n: 1}]}'), ['racks[0].nodes[0]: must be a string']);
});

t.test('distribution_func and key_size', async (t) => {
  t.equal(readCluster(base()).config.keySize, 16, 'key_size defaults to 16');
  t.same(readCluster(base('distribution_func: Mod')).lines, []);
  t.same(readCluster(base('distribution_func: Hash')).lines, [
    'distribution_func: unknown distribution function "Hash", only Mod is supported',
  ]);
  t.same(readCluster(base('distribution_func: mod')).lines.length, 1, 'case-sensitive, like the serde enum');
  for (const size of [8, 16, 32]) {
    const r = readCluster(base(`key_size: ${size}`));
    t.same(r.lines, []);
    t.equal(r.config.keySize, size);
  }
  for (const size of ['12', '0', '64', '"16"', '16.5']) {
    const r = readCluster(base(`key_size: ${size}`));
    t.equal(r.lines.length, 1, size);
    t.match(r.lines[0], /^key_size: /);
  }
});

t.test('unknown keys are warnings naming the key', async (t) => {
  const r = readCluster(
    base('replication: 3\n').replace('        path: /data/d1\n', '        path: /data/d1\n        size: 1TB\n'),
  );
  t.same(r.problems, []);
  t.same(
    r.warnings.map((w) => `${w.file}: ${w.key}: ${w.reason}`),
    ['cluster.yaml: replication: unknown key, ignored', 'cluster.yaml: nodes[0].disks[0].size: unknown key, ignored'],
  );
});

t.test('every problem is reported at once', async (t) => {
  const r = readCluster(`
nodes:
  - name: n1
    address: 10.0.0.1
    disks:
      - name: d1
  - name: n1
    address: 10.0.0.2:20000
    disks: []
vdisks:
  - id: 1
    replicas:
      - node: n9
        disk: d1
  - id: 1
  - id: 3
    replicas:
      - node: n1
        disk: d7
racks:
  - name: r
    nodes: [n5]
key_size: 4
`);
  t.same(r.lines, [
    'nodes[0].address: "10.0.0.1" has no port',
    'nodes[0].disks[0].path: is required',
    'vdisks[1].replicas: a vdisk must have at least one replica',
    'key_size: must be 8, 16 or 32',
    'nodes[1].name: duplicate node name "n1" (also nodes[0])',
    'vdisks[1].id: duplicate vdisk id 1 (also vdisks[0])',
    'vdisks[0].id: gap in vdisk ids before 1 (missing 0); ids must be exactly 0..N-1',
    'vdisks[2].id: gap in vdisk ids before 3 (missing 2); ids must be exactly 0..N-1',
    'racks[0].nodes[0]: node "n5" is not in nodes',
    'vdisks[0].replicas[0].node: node "n9" is not in nodes',
    'vdisks[2].replicas[0].disk: node "n1" has no disk "d7"',
  ]);
});
