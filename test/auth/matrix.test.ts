// The permission matrix over real HTTP and real gRPC: one
// oysterd with authentication_type Basic and a users.yaml covering the
// combinations of permissions (test/auth/lib.ts). Every REST route pattern
// and every BobApi method is called with every identity; refusals
// must be exactly 400/401/403 with StatusExt bodies on REST and
// INVALID_ARGUMENT / UNAUTHENTICATED / PERMISSION_DENIED on gRPC, and allowed
// calls must get past authentication (the operation may still answer 404).
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import { BobClient, keyBytes, Status } from '../helpers/grpc-client';
import { sample } from '../rest/lib/metrics';
import { call, isJson, Method, Reply, startRestNode } from '../rest/lib/node';
import { basic, identities, R, RR, W, Who, WR, writeUsers } from './lib';

const KEY_SIZE = 8;

interface Route {
  method: Method;
  path: string;
  need: number;
  body?: string;
}

/** One concrete path per REST route pattern; `pid` is an existing partition of vdisk 0. */
function routes(pid: string): Route[] {
  const none = (path: string): Route => ({ method: 'GET', path, need: 0 });
  const readRest = (path: string): Route => ({ method: 'GET', path, need: RR });
  const writeRest = (method: Method, path: string): Route => ({ method, path, need: WR });
  return [
    none('/status'),
    none('/status/space'),
    none('/metrics'),
    none('/version'),
    none('/alien'),
    readRest('/nodes'),
    readRest('/disks/list'),
    readRest('/metadata/distrfunc'),
    readRest('/configuration'),
    readRest('/vdisks'),
    readRest('/vdisks/0'),
    readRest('/vdisks/0/records/count'),
    readRest('/vdisks/0/partitions'),
    readRest(`/vdisks/0/partitions/${pid}`),
    readRest('/alien/dir'),
    readRest('/vdisks/0/replicas/local/dirs'),
    // The disk is stopped and started again in one go, so that later cells find it serving.
    writeRest('POST', '/disks/disk1/stop'),
    writeRest('POST', '/disks/disk1/start'),
    writeRest('DELETE', '/blobs/outdated'),
    writeRest('POST', '/vdisks/0/partitions/by_timestamp/12345/detach'),
    writeRest('PUT', '/vdisks/0/partitions/by_timestamp/12345/detach'),
    writeRest('POST', '/vdisks/0/partitions/by_timestamp/12345/attach'),
    writeRest('PUT', '/vdisks/0/partitions/by_timestamp/12345/attach'),
    writeRest('DELETE', '/vdisks/0/partitions/by_timestamp/12345'),
    writeRest('POST', '/vdisks/0/remount'),
    writeRest('POST', '/alien/detach'),
    { method: 'GET', path: '/data/4', need: R },
    { method: 'HEAD', path: '/data/4', need: R },
    { method: 'POST', path: '/data/4', need: W, body: 'matrix value' },
    { method: 'DELETE', path: '/data/4', need: W },
  ];
}

/** What a REST cell must answer: a refusal status, or "allowed". */
function expectedRest(who: Who, need: number): number | 'allowed' {
  if (need === 0) return 'allowed'; // no credential check at all, as in bob
  if (who.grants === 'malformed') return 400;
  if (who.grants === 'unauthenticated') return 401;
  return (who.grants & need) === need ? 'allowed' : 403;
}

/** The outcome of a REST cell, or a description of what is wrong with a refusal. */
function restOutcome(r: Reply, method: Method): number | 'allowed' | string {
  if (r.status === 401 || r.status === 403 || r.status === 400) {
    if (method === 'HEAD') return r.status;
    if (!isJson(r)) return `${r.status} without a JSON Content-Type`;
    try {
      const body = r.json<Record<string, unknown>>();
      const shape = Object.keys(body).sort().join(',') === 'msg,ok' && body.ok === false && typeof body.msg === 'string';
      return shape ? r.status : `${r.status} with a body that is not a StatusExt: ${r.text}`;
    } catch {
      return `${r.status} with a body that is not JSON: ${r.text}`;
    }
  }
  return r.status >= 500 ? `${r.status} ${r.text}` : 'allowed';
}

t.test('permission matrix with authentication_type Basic', async (t) => {
  let usersFile = '';
  const node = await startRestNode(t, {
    spec: { nodes: [{ name: 'n1' }], vdisks: 4, keySize: KEY_SIZE },
    opts: { extra: { authentication_type: 'Basic', users_config: 'users.yaml' } },
    prepare: (files) => (usersFile = writeUsers(files.dir)),
  });
  t.ok(usersFile.endsWith('users.yaml'), 'users_config is found next to node.yaml');
  const admin = { authorization: basic('admin', 'admin-pw') };
  t.equal((await call(node.url, 'POST', '/data/4', 'x', admin)).status, 201, 'admin writes a record: vdisk 0 gets a partition');
  const parts = (await call(node.url, 'GET', '/vdisks/0/partitions', undefined, admin)).json<{ partitions: string[] }>().partitions;
  t.equal(parts.length, 1);
  const who = identities('n1');

  t.test('REST: every route × every identity', async (t) => {
    const list = routes(parts[0]);
    for (const id of who.rest) {
      const got: string[] = [];
      const want: string[] = [];
      for (const r of list) {
        const reply = await call(node.url, r.method, r.path, r.body, id.header === undefined ? {} : { authorization: id.header });
        got.push(`${r.method} ${r.path} -> ${restOutcome(reply, r.method)}`);
        want.push(`${r.method} ${r.path} -> ${expectedRest(id, r.need)}`);
      }
      t.same(got, want, id.label);
    }
  });

  t.test('REST: refusal bodies', async (t) => {
    const nodes = await call(node.url, 'GET', '/nodes', undefined, { authorization: basic('admin', 'nope') });
    t.equal(nodes.status, 401);
    t.match(nodes.json(), { ok: false, msg: /Unauthorized/ }, '401 names the reason');
    const data = await call(node.url, 'POST', '/data/4', 'x', { authorization: basic('reader', 'reader-pw') });
    t.equal(data.status, 403);
    t.match(data.json(), { ok: false, msg: /[Pp]ermission/ }, '403 names the reason');
    const unknown = await call(node.url, 'GET', '/no/such/route', undefined, { authorization: basic('admin', 'nope') });
    t.equal(unknown.status, 404, 'an unknown route is 404 whatever the credentials');
    t.equal((await call(node.url, 'GET', '/data/4', undefined, { authorization: 'basic ' + basic('data', 'data-pw').slice(6) })).status, 404, 'the scheme is case-insensitive (past authentication: the key is deleted)');
    const metrics = (await call(node.url, 'GET', '/metrics')).text;
    t.ok(sample(metrics, 'oyster_rest_requests_total', { method: 'GET', route: '/nodes', status: '401' }) >= 1, 'refusals are counted under their route pattern: 401');
    t.ok(sample(metrics, 'oyster_rest_requests_total', { method: 'POST', route: '/data/:key', status: '403' }) >= 1, 'and 403');
    t.ok(sample(metrics, 'oyster_rest_requests_total', { method: 'GET', route: '/data/:key', status: '400' }) >= 1, 'and 400 (malformed credentials)');
  });

  t.test('gRPC: every method × every identity', async (t) => {
    const address = node.files.addresses.n1;
    const client = new BobClient(address);
    t.teardown(() => client.close());
    const key = keyBytes(8, KEY_SIZE);
    const ts = Math.floor(Date.now() / 1000);
    const methods: Array<{ name: string; need: number; run: (md: grpc.Metadata) => Promise<unknown> }> = [
      { name: 'Put', need: W, run: (md) => client.call('Put', { key: { key }, data: { data: Buffer.from('v'), meta: { timestamp: String(ts) } } }, md) },
      { name: 'Get', need: R, run: (md) => client.call('Get', { key: { key } }, md) },
      { name: 'Exist', need: R, run: (md) => client.call('Exist', { keys: [{ key }] }, md) },
      { name: 'Delete', need: W, run: (md) => client.call('Delete', { key: { key }, meta: { timestamp: String(ts) } }, md) },
      { name: 'Ping', need: 0, run: (md) => client.call('Ping', {}, md) },
    ];
    const expected = (id: Who, need: number): string => {
      if (need === 0) return 'allowed';
      if (id.grants === 'malformed') return 'INVALID_ARGUMENT';
      if (id.grants === 'unauthenticated') return 'UNAUTHENTICATED';
      if ((id.grants & need) === need) return 'allowed';
      return `PERMISSION_DENIED ${need === W ? 'WRITE' : 'READ'} permission required`;
    };
    const before = (await call(node.url, 'GET', '/metrics')).text;
    const refusals = new Map<string, number>(); // "Put PERMISSION_DENIED" -> calls expected so
    for (const id of who.grpc) {
      const got: string[] = [];
      const want: string[] = [];
      for (const m of methods) {
        const md = new grpc.Metadata();
        if (id.header !== undefined) md.set('authorization', id.header);
        const outcome = await m.run(md).then(
          () => 'allowed',
          (err: grpc.ServiceError) => {
            if (err.code === Status.NOT_FOUND) return 'allowed'; // Get of a deleted key
            if (err.code === Status.PERMISSION_DENIED) return `PERMISSION_DENIED ${err.details}`;
            return Status[err.code] ?? String(err.code);
          },
        );
        got.push(`${m.name} -> ${outcome}`);
        want.push(`${m.name} -> ${expected(id, m.need)}`);
        const code = expected(id, m.need).split(' ')[0];
        if (code !== 'allowed') refusals.set(`${m.name} ${code}`, (refusals.get(`${m.name} ${code}`) ?? 0) + 1);
      }
      t.same(got, want, id.label);
    }
    const after = (await call(node.url, 'GET', '/metrics')).text;
    t.ok(refusals.size >= 3, 'the matrix refuses in every way');
    for (const [what, n] of refusals) {
      const [method, code] = what.split(' ');
      const labels = { method, code };
      t.equal(sample(after, 'oyster_grpc_requests_total', labels) - sample(before, 'oyster_grpc_requests_total', labels), n, `refusals are counted: ${what}`);
    }
  });

  t.test('what was written under the matrix is there', async (t) => {
    // The last REST writer of /data/4 deleted it; gRPC writers put key 8 and deleted it too.
    t.equal((await call(node.url, 'GET', '/data/4', undefined, admin)).status, 404);
    t.equal((await call(node.url, 'POST', '/data/4', 'final', { authorization: basic('hashed', 'hashed-pw') })).status, 201, 'the hashed user writes');
    const r = await call(node.url, 'GET', '/data/4', undefined, { authorization: basic('data', 'data-pw') });
    t.equal(r.text, 'final', 'and the data user reads it back');
  });
});
