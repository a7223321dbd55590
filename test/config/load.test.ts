// Loading both files: file errors, cross-checks, one ConfigError for all
// problems, warnings, and the built-in default configuration.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ConfigError, formatProblem } from '../../src/config/errors';
import { defaultConfig, loadConfig, LoadOptions } from '../../src/config/load';
import { nodeYaml } from './read';
import { tempDir } from '../helpers/tmpdir';

const fixtures = path.resolve(__dirname, '../../../test/fixtures/bob-configs');
const fixture = (name: string) => path.join(fixtures, name);

function files(t: Parameters<typeof tempDir>[0], cluster: string, node: string) {
  const dir = tempDir(t);
  fs.writeFileSync(path.join(dir, 'cluster.yaml'), cluster);
  fs.writeFileSync(path.join(dir, 'node.yaml'), node);
  return { cluster: path.join(dir, 'cluster.yaml'), node: path.join(dir, 'node.yaml') };
}

function loadError(clusterPath: string, nodePath: string, options: LoadOptions = {}): ConfigError {
  try {
    loadConfig(clusterPath, nodePath, options);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

const cluster2 = `
nodes:
  - {name: n1, address: "10.0.0.1:20000", disks: [{name: d1, path: /a}, {name: d2, path: /b}]}
  - {name: n2, address: "10.0.0.2:20000", disks: [{name: d1, path: /a}]}
vdisks:
  - {id: 0, replicas: [{node: n1, disk: d1}, {node: n2, disk: d1}]}
  - {id: 1, replicas: [{node: n1, disk: d2}]}
  - {id: 2, replicas: [{node: n2, disk: d1}]}
`;

t.test("bob's example files load without problems or warnings", async (t) => {
  const loaded = loadConfig(fixture('cluster.yaml'), fixture('node.yaml'));
  t.same(loaded.warnings, []);
  t.equal(loaded.node.name, 'local_node');
  t.equal(loaded.node.pearl.alienDisk, 'disk1');
  t.equal(loaded.cluster.vdisks.length, 1);
  const minimal = loadConfig(fixture('cluster.yaml'), fixture('node-minimal.yaml'));
  t.same(minimal.warnings, []);
  t.equal(minimal.node.pearl.settings.timestampPeriod, 3_600_000);
});

t.test('the racks example loads for any of its nodes', async (t) => {
  const yaml = nodeYaml().replace('name: n1', 'name: node2').replace('quorum: 1', 'quorum: 2');
  const f = files(t, fs.readFileSync(fixture('cluster_with_racks.yaml'), 'utf8'), yaml + 'bind_to_ip_address: 127.0.0.1:20001\n');
  const loaded = loadConfig(f.cluster, f.node);
  t.equal(loaded.cluster.racks.length, 3);
  t.equal(loaded.node.quorum, 2);
});

t.test('missing and unreadable files are problems naming the file', async (t) => {
  const dir = tempDir(t);
  const err = loadError(path.join(dir, 'nope.yaml'), dir);
  t.equal(err.name, 'ConfigError');
  t.ok(err instanceof Error);
  t.same(err.problems.map((p) => [p.file, p.key]), [
    [path.join(dir, 'nope.yaml'), ''],
    [dir, ''],
  ]);
  t.equal(err.problems[0].reason, 'file not found');
  t.match(err.problems[1].reason, /^cannot read the file: EISDIR/);
  t.equal(err.message, `${path.join(dir, 'nope.yaml')}: file not found\n${dir}: ${err.problems[1].reason}`);
});

t.test('YAML syntax errors name the file, line and column', async (t) => {
  const f = files(t, 'nodes:\n  - name: a\n  - name: b\n    name: c\n', 'name: [unclosed\n');
  const err = loadError(f.cluster, f.node);
  t.equal(err.problems.length, 2);
  t.same(err.problems[0], {
    file: f.cluster,
    key: '',
    reason: 'YAML syntax error: Map keys must be unique at line 4, column 5',
  });
  t.equal(err.problems[1].file, f.node);
  t.match(err.problems[1].reason, /^YAML syntax error: .* at line \d+, column \d+$/);
  t.notMatch(err.message, /\n.*\n.*\n/, 'one line per problem');
});

t.test('problems of both files are reported together, one line each', async (t) => {
  const f = files(t, cluster2.replace('10.0.0.2:20000', '10.0.0.2'), nodeYaml('http_api_port: 99999\n'));
  const err = loadError(f.cluster, f.node);
  t.same(err.message.split('\n'), [
    `${f.cluster}: nodes[1].address: "10.0.0.2" has no port`,
    `${f.node}: http_api_port: must be at most 65535`,
  ]);
  t.same(err.message.split('\n'), err.problems.map(formatProblem));
});

t.test('cross-check: the node must be in the cluster', async (t) => {
  const f = files(t, cluster2, nodeYaml().replace('name: n1', 'name: n3'));
  const err = loadError(f.cluster, f.node);
  t.same(err.problems, [{ file: f.node, key: 'name', reason: `node "n3" is not one of the nodes in ${f.cluster}` }]);
});

t.test('cross-check: quorum against the replicas of every vdisk', async (t) => {
  const f = files(t, cluster2, nodeYaml().replace('quorum: 1', 'quorum: 2'));
  t.same(loadError(f.cluster, f.node).problems, [
    { file: f.node, key: 'quorum', reason: 'quorum 2 is more than the number of replicas of vdisks 1 (1), 2 (1)' },
  ]);
  const g = files(t, cluster2, nodeYaml().replace('quorum: 1', 'quorum: 3'));
  t.same(loadError(g.cluster, g.node).problems.map((p) => p.reason), [
    'quorum 3 is more than the number of replicas of vdisks 0 (2), 1 (1), 2 (1)',
  ]);
  const many =
    'nodes:\n  - {name: n1, address: "1.1.1.1:1", disks: [{name: d1, path: /a}]}\nvdisks:\n' +
    Array.from({ length: 12 }, (_, id) => `  - {id: ${id}, replicas: [{node: n1, disk: d1}]}\n`).join('');
  const h = files(t, many, nodeYaml().replace('quorum: 1', 'quorum: 2'));
  t.same(loadError(h.cluster, h.node).problems.map((p) => p.reason), [
    'quorum 2 is more than the number of replicas of vdisks 0 (1), 1 (1), 2 (1), 3 (1), 4 (1), 5 (1), 6 (1), 7 (1), 8 (1), 9 (1) and 2 more',
  ]);
  const twoEach = cluster2
    .replace('{id: 1, replicas: [{node: n1, disk: d2}]}', '{id: 1, replicas: [{node: n1, disk: d2}, {node: n2, disk: d1}]}')
    .replace('{id: 2, replicas: [{node: n2, disk: d1}]}', '{id: 2, replicas: [{node: n2, disk: d1}, {node: n1, disk: d1}]}');
  const one = files(t, twoEach, nodeYaml().replace('quorum: 1', 'quorum: 2'));
  t.equal(loadConfig(one.cluster, one.node).node.quorum, 2);
  const singleVDisk = cluster2.slice(0, cluster2.indexOf('vdisks:')) + 'vdisks:\n  - {id: 0, replicas: [{node: n1, disk: d1}]}\n';
  const single = files(t, singleVDisk, nodeYaml().replace('quorum: 1', 'quorum: 2'));
  t.same(loadError(single.cluster, single.node).problems.map((p) => p.reason), [
    'quorum 2 is more than the number of replicas of vdisk 0 (1)',
  ]);
});

t.test('cross-check: the alien disk must be a disk of this node', async (t) => {
  const withAlien = (disk: string) => nodeYaml().replace('pearl:\n', `pearl:\n  alien_disk: ${disk}\n`);
  const ok = files(t, cluster2, withAlien('d2'));
  t.equal(loadConfig(ok.cluster, ok.node).node.pearl.alienDisk, 'd2');
  const bad = files(t, cluster2, withAlien('d3'));
  t.same(loadError(bad.cluster, bad.node).problems, [
    { file: bad.node, key: 'pearl.alien_disk', reason: `"d3" is not a disk of node "n1" in ${bad.cluster} (disks: d1, d2)` },
  ]);
});

t.test('cross-check: bind_to_ip_address must match the cluster address, as bob requires', async (t) => {
  const ok = files(t, cluster2, nodeYaml('bind_to_ip_address: 10.0.0.1:20000\n'));
  t.equal(loadConfig(ok.cluster, ok.node).node.bindToIpAddress, '10.0.0.1:20000');
  const bad = files(t, cluster2, nodeYaml('bind_to_ip_address: 0.0.0.0:20000\n'));
  t.same(loadError(bad.cluster, bad.node).problems.map((p) => `${p.key}: ${p.reason}`), [
    `bind_to_ip_address: "0.0.0.0:20000" differs from this node's address "10.0.0.1:20000" in ${bad.cluster}`,
  ]);
  const named = files(t, cluster2.replace('10.0.0.1:20000', 'node-1.example.com:20000'), nodeYaml('bind_to_ip_address: 0.0.0.0:20000\n'));
  t.equal(loadConfig(named.cluster, named.node).node.bindToIpAddress, '0.0.0.0:20000', 'a host name is not compared');
});

t.test('cross-checks are skipped when their inputs already have problems', async (t) => {
  const noName = files(t, cluster2, nodeYaml().replace('name: n1\n', ''));
  t.same(loadError(noName.cluster, noName.node).problems.map((p) => `${p.key}: ${p.reason}`), ['name: is required']);
  const badQuorum = files(t, cluster2, nodeYaml().replace('quorum: 1', 'quorum: 0'));
  t.same(loadError(badQuorum.cluster, badQuorum.node).problems.map((p) => `${p.key}: ${p.reason}`), ['quorum: must be at least 1']);
  const badNodes = files(t, cluster2.replace('name: n1,', 'name: ~,'), nodeYaml());
  t.same(loadError(badNodes.cluster, badNodes.node).problems.map((p) => `${p.key}: ${p.reason}`), [
    'nodes[0].name: is present but empty',
  ]);
  const brokenCluster = files(t, 'nodes: [', nodeYaml('quorum_typo: 1\n'));
  const err = loadError(brokenCluster.cluster, brokenCluster.node);
  t.same(err.problems.map((p) => p.file), [brokenCluster.cluster], 'node.yaml itself is fine');
  t.same(err.warnings.map((w) => `${w.file}: ${w.key}`), [`${brokenCluster.node}: quorum_typo`], 'warnings travel with the error');
});

t.test('unknown keys of both files are returned as warnings', async (t) => {
  const metrics = 'metrics:\n  graphite_enabled: false\n  prometheus_enabled: true\n  prometheus: 0.0.0.0:9100\n';
  const f = files(t, cluster2 + 'replication_factor: 2\n', nodeYaml(metrics));
  const loaded = loadConfig(f.cluster, f.node);
  t.same(loaded.warnings, [
    { file: f.cluster, key: 'replication_factor', reason: 'unknown key, ignored', unknownKey: true },
    { file: f.node, key: 'metrics.prometheus', reason: 'unknown key, ignored; did you mean prometheus_addr?', unknownKey: true },
  ]);
  const strict = loadError(f.cluster, f.node, { strict: true });
  t.same(
    strict.problems.map((p) => `${p.key}: ${p.reason}`),
    ['replication_factor: unknown key, ignored', 'metrics.prometheus: unknown key, ignored; did you mean prometheus_addr?'],
    'strict: unknown keys are problems',
  );
  t.same(strict.warnings, [], 'and no longer warnings');
  const clean = files(t, cluster2, nodeYaml());
  t.doesNotThrow(() => loadConfig(clean.cluster, clean.node, { strict: true }), 'without unknown keys strict loads as before');
});

t.test('a file a key names that is not there names the key', async (t) => {
  const f = files(t, cluster2, nodeYaml('authentication_type: Basic\nusers_config: missing-users.yaml\nlog_config: missing-logger.yaml\n'));
  const err = loadError(f.cluster, f.node);
  const dir = path.dirname(f.node);
  const cwd = process.cwd();
  t.same(
    err.problems.map(formatProblem),
    [`${f.node}: users_config: missing-users.yaml: file not found (looked for ${dir}/missing-users.yaml and ${cwd}/missing-users.yaml)`],
    'users_config: an error at the key, with the paths looked for',
  );
  t.same(
    err.warnings.map(formatProblem),
    [`${f.node}: log_config: missing-logger.yaml: file not found (looked for ${dir}/missing-logger.yaml and ${cwd}/missing-logger.yaml); logging at the default level`],
    "log_config: a warning at the key (bob's examples point at files elsewhere)",
  );
});

t.test('an empty node.yaml lists every required key', async (t) => {
  const f = files(t, cluster2, '');
  t.same(loadError(f.cluster, f.node).problems.map((p) => p.key), [
    'name',
    'quorum',
    'operation_timeout',
    'check_interval',
    'cluster_policy',
    'backend_type',
    'cleanup_interval',
    'pearl',
  ]);
});

t.test('the built-in default configuration', async (t) => {
  const { cluster, node, warnings } = defaultConfig('/srv/oyster');
  t.same(warnings, []);
  t.strictSame(cluster, {
    nodes: [{ name: 'local', address: '127.0.0.1:20000', disks: [{ name: 'disk0', path: '/srv/oyster/disk0' }] }],
    vdisks: [0, 1, 2, 3].map((id) => ({ id, replicas: [{ node: 'local', disk: 'disk0' }] })),
    racks: [],
    distributionFunc: 'Mod',
    keySize: 16,
  });
  t.equal(node.name, 'local');
  t.equal(node.quorum, 1);
  t.equal(node.clusterPolicy, 'quorum');
  t.equal(node.backendType, 'pearl');
  t.equal(node.operationTimeout, 3000);
  t.equal(node.checkInterval, 5000);
  t.equal(node.countInterval, 10000);
  t.equal(node.cleanupInterval, 3_600_000);
  t.equal(node.httpApiAddress, '127.0.0.1', 'REST on loopback: nothing is authenticated');
  t.equal(node.httpApiPort, 8000);
  t.equal(node.authenticationType, 'None');
  t.equal(node.httpMaxBodySize, 1024 * 1024 * 1024);
  t.equal(node.logConfig, undefined);
  t.equal(node.usersConfig, undefined);
  t.equal(node.tls, undefined);
  t.same(node.metrics, { graphiteEnabled: false, prometheusEnabled: false, prometheusAddr: '127.0.0.1:9000', restFormat: 'prometheus' });
  t.same(node.pearl.settings, { rootDirName: 'bob', alienRootDirName: 'alien', timestampPeriod: 86_400_000, createPearlWaitDelay: 100 });
  t.equal(node.pearl.alienDisk, 'disk0');
  t.equal(node.pearl.blobFileNamePrefix, 'bob');
  t.equal(node.pearl.maxBlobSize, 1e9);
  t.equal(node.pearl.maxDataInBlob, 1_000_000);
  t.equal(node.pearl.syncWrites, false);
  t.equal(defaultConfig('data').cluster.nodes[0].disks[0].path, path.join('data', 'disk0'));
});
