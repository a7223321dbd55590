// oyster put | get | exists | delete against a real node, over REST and
// gRPC, in every key form; Basic authentication with the packaged users.yaml;
// oyster wait-ready.
import fs from 'node:fs';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import YAML from 'yaml';
import { BobApiService } from '../../src/grpc/proto';
import { startNode, writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import { oyster, PACKAGING } from './lib';

t.test('data commands against a node', async (t) => {
  const dir = tempDir(t);
  const files = await writeCluster(dir, { nodes: [{ name: 'a' }] });
  const node = await startNode(files, 'a');
  t.teardown(() => node.stop());
  const rest = ['--rest', node.url];
  const grpc = ['--grpc', files.addresses.a];

  await t.test('one key in every form, over both protocols', async (t) => {
    t.equal((await oyster(['put', '1', '--value', 'one', ...rest])).code, 0, 'put over REST');
    for (const form of ['1', '0x01', '01000000-0000-0000-0000-000000000000', '{01000000-0000-0000-0000-000000000000}']) {
      for (const via of [rest, grpc]) {
        const r = await oyster(['get', '-k', form, ...via]);
        t.equal(r.code, 0, `get ${form} via ${via[0]}`);
        t.equal(r.stdout, 'one', `get ${form} via ${via[0]} returns the value`);
      }
    }
    t.equal((await oyster(['put', '0x0001', '--value', 'two five six', ...grpc])).code, 0, 'put over gRPC');
    t.equal((await oyster(['get', '256', ...rest])).stdout, 'two five six', 'decimal 256 is 0x0001');
  });

  await t.test('ranges and lists; exists prints and exits by presence', async (t) => {
    t.equal((await oyster(['put', '-k', '10-14,20', '--value', 'x', ...grpc])).code, 0);
    for (const via of [rest, grpc]) {
      const some = await oyster(['exists', '9-11,20,0x15', ...via]);
      t.equal(some.code, 1, `exit 1 when a key is absent (${via[0]})`);
      t.equal(some.stdout, '9: absent\n10: present\n11: present\n20: present\n0x15: absent\n');
      const all = await oyster(['exists', '10-14', ...via]);
      t.equal(all.code, 0, `exit 0 when all are present (${via[0]})`);
    }
  });

  await t.test('values from and to files with {key}, and from stdin', async (t) => {
    const src = tempDir(t);
    for (const k of [30, 31, 32]) fs.writeFileSync(path.join(src, `${k}.bin`), Buffer.from(`file ${k}`));
    fs.writeFileSync(path.join(src, 'notes.bin'), 'not a key');
    const put = await oyster(['put', '-f', path.join(src, '{key}.bin'), ...rest]);
    t.equal(put.code, 0, 'put without keys stores every file that fits the pattern');
    const out = tempDir(t);
    const get = await oyster(['get', '30-32', '-f', path.join(out, 'v-{key}'), ...grpc]);
    t.equal(get.code, 0);
    t.same(fs.readdirSync(out).sort(), ['v-30', 'v-31', 'v-32']);
    t.equal(fs.readFileSync(path.join(out, 'v-31'), 'utf8'), 'file 31');
    t.equal((await oyster(['exists', '0x6e6f746573', ...rest])).code, 1, 'a file not named like a key was left alone');

    const bytes = Buffer.from([0, 1, 2, 255, 254, 10, 13]);
    t.equal((await oyster(['put', '40', ...grpc], { input: bytes })).code, 0, 'put from stdin');
    t.same((await oyster(['get', '40', ...rest])).out, bytes, 'binary value intact');
    const one = path.join(out, 'single');
    t.equal((await oyster(['get', '40', '-f', one, ...rest])).code, 0);
    t.same(fs.readFileSync(one), bytes);
  });

  await t.test('delete', async (t) => {
    t.equal((await oyster(['delete', '10-11', ...grpc])).code, 0);
    t.equal((await oyster(['delete', '12', ...rest])).code, 0);
    t.equal((await oyster(['exists', '10-13', ...rest])).stdout, '10: absent\n11: absent\n12: absent\n13: present\n');
    t.equal((await oyster(['delete', '999', ...rest])).code, 0, 'deleting an absent key succeeds');
    t.equal((await oyster(['delete', '998', ...grpc])).code, 0, 'also over gRPC');
  });

  await t.test('exit codes: absent 1, usage 2, unreachable 3', async (t) => {
    const absent = await oyster(['get', '12', ...rest]);
    t.equal(absent.code, 1);
    t.match(absent.stderr, '12: not found');
    t.equal((await oyster(['get', '12', ...grpc])).code, 1);
    t.equal((await oyster(['get', 'nokey', ...rest])).code, 2, 'invalid key form');
    t.equal((await oyster(['get', '1-3', ...rest])).code, 2, 'several keys without {key}');
    t.equal((await oyster(['get', '1', ...rest, ...grpc])).code, 2, 'both protocols');
    t.equal((await oyster(['put', '1', '--value', 'x', '--rest', 'ftp://x'])).code, 2);
    const down = await oyster(['get', '1', '--rest', 'http://127.0.0.1:1']);
    t.equal(down.code, 3);
    t.match(down.stderr, 'ECONNREFUSED');
    t.equal((await oyster(['put', '1', '--value', 'x', '--grpc', '127.0.0.1:1', '--timeout', '1s'])).code, 3);
    const overflow = await oyster(['get', '0x0102030405060708090a0b0c0d0e0f1011', ...rest]);
    t.equal(overflow.code, 2, 'a key longer than the key size');
  });

  await t.test('wait-ready', async (t) => {
    // node.yaml asks for any free port (0): a copy names the one it got, and
    // 0.0.0.0 (all interfaces) stands for this machine.
    const doc = YAML.parse(fs.readFileSync(files.nodeYaml.a, 'utf8')) as Record<string, unknown>;
    const nodeYaml = path.join(dir, 'ready.node.yaml');
    fs.writeFileSync(nodeYaml, YAML.stringify({ ...doc, http_api_address: '0.0.0.0', http_api_port: Number(new URL(node.url).port) }));
    t.equal((await oyster(['wait-ready', '-c', files.clusterYaml, '-n', nodeYaml, '--timeout', '5s'])).code, 0, 'the address from node.yaml');
    t.equal((await oyster(['wait-ready', '--rest', node.url])).code, 0, 'serving');
    const none = await oyster(['wait-ready', '--rest', 'http://127.0.0.1:1', '--timeout', '1s']);
    t.equal(none.code, 1);
    t.match(none.stderr, 'not serving after');
    t.equal((await oyster(['wait-ready', '-c', files.clusterYaml, '-n', path.join(dir, 'missing.yaml')])).code, 2, 'a configuration that does not load');
  });
});

t.test('credentials go out as Basic authorization, over REST and gRPC', async (t) => {
  const seen: Array<string | undefined> = [];
  const server = http.createServer((req, res) => {
    seen.push(req.headers.authorization);
    res.writeHead(200).end('v');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await oyster(['get', '5', '--rest', url, '-u', 'admin', '--password', 'pa:ss']);
  await oyster(['get', '5', '--rest', url, '-u', 'admin'], { env: { OYSTER_PASSWORD: 'env' } });
  await oyster(['get', '5', '--rest', url]);
  t.same(seen, [`Basic ${Buffer.from('admin:pa:ss').toString('base64')}`, `Basic ${Buffer.from('admin:env').toString('base64')}`, undefined]);

  const metadata: Array<string | undefined> = [];
  const grpcServer = new grpc.Server();
  grpcServer.addService(BobApiService, {
    Get: (call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      metadata.push(call.metadata.get('authorization')[0]?.toString());
      cb(null, { data: Buffer.from('v'), meta: { timestamp: 1 } });
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    grpcServer.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  t.teardown(() => grpcServer.forceShutdown());
  const r = await oyster(['get', '5', '--grpc', `127.0.0.1:${port}`, '-u', 'admin', '--password', 'secret']);
  t.equal(r.stdout, 'v');
  t.same(metadata, [`Basic ${Buffer.from('admin:secret').toString('base64')}`]);
});

t.test('Basic authentication on a node with the packaged users.yaml', async (t) => {
  const dir = tempDir(t);
  const files = await writeCluster(
    dir,
    { nodes: [{ name: 'a' }] },
    { extra: { authentication_type: 'Basic', users_config: path.join(PACKAGING, 'etc', 'users.yaml') } },
  );
  const node = await startNode(files, 'a');
  t.teardown(() => node.stop());
  const enforced = (await fetch(`${node.url}/data/6`, { method: 'POST', body: 'x' })).status === 403;
  for (const via of [['--rest', node.url], ['--grpc', files.addresses.a]]) {
    t.equal((await oyster(['put', '5', '--value', 'v', '-u', 'admin', '--password', 'change-me', ...via])).code, 0, `admin writes (${via[0]})`);
    const env = await oyster(['get', '5', '-u', 'admin', ...via], { env: { OYSTER_PASSWORD: 'change-me' } });
    t.equal(env.stdout, 'v', `the password from OYSTER_PASSWORD (${via[0]})`);
    if (!enforced) continue;
    t.equal((await oyster(['put', '5', '--value', 'v', ...via])).code, 3, `the anonymous user "default" may not write (${via[0]})`);
    t.equal((await oyster(['get', '5', '-u', 'admin', '--password', 'wrong', ...via])).code, 3, `a wrong password is refused (${via[0]})`);
  }
  // The node answers anonymous writes while authentication is not wired into it (issue 5).
  if (!enforced) t.skip('refusals: this node does not enforce Basic authentication', () => undefined);
});
