// --json on every oyster command that prints results, for scripts: the
// output parses as JSON and says for every key, file or check what
// happened, with the exit code the text form has. (bench and blob print
// JSON in their own tests: test/cli/bench.test.ts, test/cli/blob.test.ts.)
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import YAML from 'yaml';
import { freePort, startNode, writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import { oyster } from './lib';

const json = <T>(stdout: string): T => JSON.parse(stdout) as T;

interface KeysOut {
  command: string;
  endpoint: string;
  keys: Array<Record<string, unknown> & { key: string }>;
}

t.test('data commands and wait-ready', async (t) => {
  const dir = tempDir(t);
  const files = await writeCluster(dir, { nodes: [{ name: 'a' }] });
  const node = await startNode(files, 'a');
  t.teardown(() => node.stop());
  for (const via of [['--rest', node.url], ['--grpc', files.addresses.a]]) {
    await t.test(via[0], async (t) => {
      const base = via[0] === '--rest' ? 100 : 200;
      const keys = `${base}-${base + 2}`;
      const put = await oyster(['put', keys, '--value', 'hello', '--json', ...via]);
      t.equal(put.code, 0);
      t.same(json<KeysOut>(put.stdout).keys, [0, 1, 2].map((i) => ({ key: String(base + i), stored: true, bytes: 5 })), 'put: every key stored');
      t.equal(put.stderr, '', 'nothing on stderr');

      const get = await oyster(['get', `${base}-${base + 3}`, '--json', ...via]);
      t.equal(get.code, 1, 'get: exit 1, one key is absent');
      const got = json<KeysOut>(get.stdout);
      t.equal(got.command, 'get');
      t.same(got.keys, [
        ...[0, 1, 2].map((i) => ({ key: String(base + i), found: true, bytes: 5, base64: Buffer.from('hello').toString('base64') })),
        { key: String(base + 3), found: false },
      ]);
      const out = tempDir(t);
      const toFiles = json<KeysOut>((await oyster(['get', keys, '-f', path.join(out, '{key}.bin'), '--json', ...via])).stdout);
      t.same(toFiles.keys.map((k) => k.file), [0, 1, 2].map((i) => path.join(out, `${base + i}.bin`)), 'get -f: the files written');
      t.equal(fs.readFileSync(path.join(out, `${base}.bin`), 'utf8'), 'hello');

      const exists = await oyster(['exists', `${base},${base + 9}`, '--json', ...via]);
      t.equal(exists.code, 1);
      t.same(json<KeysOut>(exists.stdout).keys, [
        { key: String(base), present: true },
        { key: String(base + 9), present: false },
      ]);
      const del = await oyster(['delete', String(base), '--json', ...via]);
      t.equal(del.code, 0);
      t.same(json<KeysOut>(del.stdout).keys, [{ key: String(base), deleted: true }]);
    });
  }

  await t.test('wait-ready', async (t) => {
    const ready = await oyster(['wait-ready', '--rest', node.url, '--json']);
    t.equal(ready.code, 0);
    t.match(json(ready.stdout), { ready: true, url: node.url, waitedMs: Number });
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const notReady = await oyster(['wait-ready', '--rest', nobody, '--timeout', '300ms', '--json']);
    t.equal(notReady.code, 1);
    t.match(json(notReady.stdout), { ready: false, url: nobody, error: /ECONNREFUSED|refused/ });
  });
});

t.test('a key that fails is in the list with its error, exit 3', async (t) => {
  // Two nodes, and b never starts: keys of its vdisks (odd ones) cannot be read.
  const files = await writeCluster(tempDir(t), { nodes: [{ name: 'a' }, { name: 'b' }], vdisks: 2 });
  const a = await startNode(files, 'a');
  t.teardown(() => a.stop());
  const r = await oyster(['get', '0,1', '--json', '--rest', a.url]);
  t.equal(r.code, 3);
  const out = json<KeysOut>(r.stdout);
  t.same(out.keys[0], { key: '0', found: false }, 'an absent key');
  t.match(out.keys[1], { key: '1', error: /503/ }, 'a key no replica could answer for');
  t.equal(r.stderr, '', 'nothing on stderr');
});

t.test('config generate and check', async (t) => {
  const dir = tempDir(t);
  const nodes = path.join(dir, 'nodes.yaml');
  fs.writeFileSync(nodes, YAML.stringify({ nodes: [1, 2, 3].map((i) => ({ name: `n${i}`, address: `10.0.0.${i}:20000`, disks: [{ name: 'd1', path: '/data/d1' }] })) }));
  const gen = await oyster(['config', 'generate', '-i', nodes, '-d', '6', '-r', '2', '--json']);
  t.equal(gen.code, 0);
  const g = json<{ written: boolean; output: null; vdisks: number; replicas: number; disks: number; nodes: number; cluster: { vdisks: unknown[] } }>(gen.stdout);
  t.match(g, { written: true, output: null, vdisks: 6, replicas: 2, disks: 3, nodes: 3 });
  t.equal(g.cluster.vdisks.length, 6, 'without --output, the cluster itself');
  const out = path.join(dir, 'cluster.yaml');
  const toFile = json<Record<string, unknown>>((await oyster(['config', 'generate', '-i', nodes, '-d', '6', '-r', '2', '-o', out, '--json'])).stdout);
  t.equal(toFile.output, out);
  t.notOk('cluster' in toFile, 'with --output, the summary only');
  const bad = await oyster(['config', 'generate', '-i', nodes, '-d', '6', '-r', '4', '--json']);
  t.equal(bad.code, 1);
  t.match(json(bad.stdout), { written: false, problems: [{ file: nodes, key: '', reason: '4 replicas need as many nodes, the cluster has 3' }] });

  const valid = await oyster(['config', 'check', '-c', out, '--json']);
  t.equal(valid.code, 0);
  t.same(json(valid.stdout), { valid: true, problems: [], warnings: [], summary: { nodes: 3, vdisks: 6, keySize: 16 } });
  fs.appendFileSync(out, 'key_sise: 8\n');
  const typo = await oyster(['config', 'check', '-c', out, '--json']);
  t.equal(typo.code, 0, 'an unknown key is a warning');
  t.same(json<{ warnings: unknown[] }>(typo.stdout).warnings, [{ file: out, key: 'key_sise', reason: 'unknown key, ignored; did you mean key_size?' }]);
  const strict = await oyster(['config', 'check', '-c', out, '--json', '--strict']);
  t.equal(strict.code, 1, '--strict: a problem');
  t.same(json(strict.stdout), { valid: false, problems: [{ file: out, key: 'key_sise', reason: 'unknown key, ignored; did you mean key_size?' }], warnings: [], summary: null });
});
