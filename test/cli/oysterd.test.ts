// oysterd's command line: --help and -h print the help (bob's -h HOST is
// refused with a pointer to --host, not taken for help and a clean exit),
// and --strict refuses a configuration with unknown keys, naming each with
// the key it is closest to, while the same files start without it.
import fs from 'node:fs';
import t from 'tap';
import YAML from 'yaml';
import { startNode, writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import { oysterd } from './lib';

t.test('--help and -h print the help', async (t) => {
  const help = await oysterd(['--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /^Usage: oysterd /);
  t.match(help.stdout, /--strict/);
  t.match(help.stdout, /--host ADDRESS/);
  t.same(await oysterd(['-h']), help, '-h is --help');
  const bobs = await oysterd(['-h', '0.0.0.0', '-c', 'cluster.yaml', '-n', 'node.yaml']);
  t.equal(bobs.code, 2, "bob's -h HOST is a usage error, not help and exit 0");
  t.match(bobs.stderr, /-h is --help here; give the REST listen address with --host 0\.0\.0\.0/);
  t.equal((await oysterd(['--host'])).code, 2, '--host needs a value');
});

t.test('--strict: unknown keys stop the node', async (t) => {
  const dir = tempDir(t, 'oyster-strict-');
  const files = await writeCluster(dir, { nodes: [{ name: 'n1' }] }, { extra: { quorom: 1, http_max_body_sise: '1 MiB', metrics: { graphite_enabled: false, prometheus_enabled: false, prometheus_adr: '127.0.0.1:9999' } } });
  const strict = await oysterd(['-c', files.clusterYaml, '-n', files.nodeYaml.n1, '--strict']);
  t.equal(strict.code, 2, 'exit 2');
  t.same(strict.stdout, '', 'nothing started: no log');
  t.match(strict.stderr, /^oysterd: invalid configuration\n/);
  t.match(strict.stderr, `${files.nodeYaml.n1}: http_max_body_sise: unknown key, ignored; did you mean http_max_body_size?`);
  t.match(strict.stderr, `${files.nodeYaml.n1}: quorom: unknown key, ignored\n`, 'quorom is close to quorum, which the file sets: not what it meant');
  t.match(strict.stderr, `${files.nodeYaml.n1}: metrics.prometheus_adr: unknown key, ignored; did you mean prometheus_addr?`);

  // Without --strict they are warnings in the log, and the node serves.
  const node = await startNode(files, 'n1');
  t.teardown(() => node.kill());
  const warned = node.output.filter((l) => l.includes('unknown key')).map((l) => (JSON.parse(l) as { level: string; key: string }));
  t.same(warned.map((w) => `${w.level} ${w.key}`).sort(), ['warn http_max_body_sise', 'warn metrics.prometheus_adr', 'warn quorom']);

  // Without unknown keys --strict changes nothing.
  const doc = YAML.parse(fs.readFileSync(files.nodeYaml.n1, 'utf8')) as Record<string, unknown>;
  delete doc.quorom;
  delete doc.http_max_body_sise;
  doc.metrics = { graphite_enabled: false, prometheus_enabled: false };
  fs.writeFileSync(files.nodeYaml.n1, YAML.stringify(doc));
  t.equal(await node.stop(), 0);
  const clean = await startNode(files, 'n1', { args: ['--strict'] });
  t.equal(await clean.stop(), 0, 'a clean configuration starts with --strict');
});
