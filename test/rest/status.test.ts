// The descriptive endpoints of one node in a three-node cluster (only n1
// runs): /status, /nodes, /metadata/distrfunc, /vdisks, /vdisks/{id},
// /disks/list, /alien, /alien/dir, /vdisks/{id}/replicas/local/dirs,
// /status/space, /version, /configuration, /metrics, and the StatusExt
// answers for unknown routes (404) and wrong methods (405).
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { sample } from './lib/metrics';
import { client, failure, isJson, RestNode, startRestNode } from './lib/node';

interface Dir {
  name: string;
  path: string;
  children: Dir[];
}

t.test('a node of a three-node cluster', async (t) => {
  // vdisk 0: n1/d1 + n2; vdisk 1: n2 + n3 (nothing on n1); vdisk 2: n1/d2;
  // vdisk 3: two replicas on n1 (d1 and d2) and one on n3.
  const node: RestNode = await startRestNode(t, {
    spec: {
      nodes: [{ name: 'n1', disks: ['d1', 'd2'] }, { name: 'n2' }, { name: 'n3' }],
      replicas: [['n1/d1', 'n2/disk1'], ['n2/disk1', 'n3/disk1'], ['n1/d2'], ['n1/d1', 'n3/disk1', 'n1/d2']],
    },
  });
  const api = client(node.url);
  const { files } = node;
  const p = (n: string, d: string) => files.disks[n][d];
  const rep = (n: string, d: string) => ({ node: n, disk: d, path: p(n, d) });
  const vdisks = [
    { id: 0, replicas: [rep('n1', 'd1'), rep('n2', 'disk1')] },
    { id: 1, replicas: [rep('n2', 'disk1'), rep('n3', 'disk1')] },
    { id: 2, replicas: [rep('n1', 'd2')] },
    { id: 3, replicas: [rep('n1', 'd1'), rep('n3', 'disk1'), rep('n1', 'd2')] },
  ];

  t.test('GET /status: this node and every vdisk of the cluster', async (t) => {
    const r = await api.get('/status');
    t.equal(r.status, 200);
    t.ok(isJson(r), 'application/json');
    t.same(r.json(), { name: 'n1', address: files.addresses.n1, vdisks });
  });

  t.test('GET /nodes: per node only its vdisks and only its replicas', async (t) => {
    const r = await api.get('/nodes');
    t.equal(r.status, 200);
    t.ok(isJson(r));
    t.same(r.json(), [
      {
        name: 'n1',
        address: files.addresses.n1,
        vdisks: [
          { id: 0, replicas: [rep('n1', 'd1')] },
          { id: 2, replicas: [rep('n1', 'd2')] },
          { id: 3, replicas: [rep('n1', 'd1'), rep('n1', 'd2')] },
        ],
      },
      {
        name: 'n2',
        address: files.addresses.n2,
        vdisks: [
          { id: 0, replicas: [rep('n2', 'disk1')] },
          { id: 1, replicas: [rep('n2', 'disk1')] },
        ],
      },
      {
        name: 'n3',
        address: files.addresses.n3,
        vdisks: [
          { id: 1, replicas: [rep('n3', 'disk1')] },
          { id: 3, replicas: [rep('n3', 'disk1')] },
        ],
      },
    ]);
  });

  t.test('GET /metadata/distrfunc', async (t) => {
    const r = await api.get('/metadata/distrfunc');
    t.equal(r.status, 200);
    t.ok(isJson(r));
    t.same(r.json(), { func: 'Mod' });
  });

  t.test('GET /vdisks and /vdisks/{id}', async (t) => {
    const r = await api.get('/vdisks');
    t.equal(r.status, 200);
    t.ok(isJson(r));
    t.same(r.json(), vdisks);
    for (const v of vdisks) {
      const one = await api.get(`/vdisks/${v.id}`);
      t.equal(one.status, 200);
      t.same(one.json(), v, `vdisk ${v.id}`);
    }
    t.same((await api.get('/vdisks/01')).json(), vdisks[1], 'leading zeros are still a number');
  });

  t.test('/vdisks/{id}: 404 for unknown ids, 400 for malformed ones', async (t) => {
    failure(t, await api.get('/vdisks/4'), 404, /4/, 'id 4');
    failure(t, await api.get('/vdisks/4294967295'), 404, undefined, 'u32 max');
    for (const bad of ['abc', '-1', '1.5', '0x1', '4294967296', '99999999999999999999999', '%20']) {
      failure(t, await api.get(`/vdisks/${bad}`), 400, undefined, `id ${bad}`);
    }
    for (const sub of ['records/count', 'partitions', 'partitions/1_x', 'replicas/local/dirs']) {
      failure(t, await api.get(`/vdisks/7/${sub}`), 404, undefined, `unknown vdisk /${sub}`);
      failure(t, await api.get(`/vdisks/x/${sub}`), 400, undefined, `malformed vdisk /${sub}`);
      failure(t, await api.get(`/vdisks/1/${sub}`), 404, /no replica on node n1/, `vdisk without a local replica /${sub}`);
    }
    failure(t, await api.post('/vdisks/1/remount'), 404, /no replica on node n1/, 'remount of a vdisk held elsewhere');
    failure(t, await api.post('/vdisks/9/remount'), 404, undefined, 'remount of an unknown vdisk');
    failure(t, await api.post('/vdisks/nine/remount'), 400, undefined, 'remount of a malformed vdisk id');
  });

  t.test('GET /disks/list: local disks first, the alien directory last', async (t) => {
    const r = await api.get('/disks/list');
    t.equal(r.status, 200);
    t.ok(isJson(r));
    t.same(r.json(), [
      { name: 'd1', path: p('n1', 'd1'), is_active: true, is_writable: true },
      { name: 'd2', path: p('n1', 'd2'), is_active: true, is_writable: true },
      // alien_disk is d1 (test/helpers/oysterd.ts): bob names the alien controller after it
      { name: 'd1', path: `${path.join(p('n1', 'd1'), 'alien')}/`, is_active: true, is_writable: true },
    ]);
  });

  t.test('GET /alien, /alien/dir and POST /alien/detach', async (t) => {
    const r = await api.get('/alien');
    t.equal(r.status, 200);
    t.match(r.headers.get('content-type'), /^text\/plain/);
    t.equal(r.text, 'alien');
    const alienRoot = path.join(p('n1', 'd1'), 'alien');
    t.same((await api.get('/alien/dir')).json(), { name: 'alien', path: alienRoot, children: [] }, 'no aliens yet');
    // An alien directory made by hand, with a file that must not be listed.
    fs.mkdirSync(path.join(alienRoot, 'n2', '0', '1700000000_abc'), { recursive: true });
    fs.writeFileSync(path.join(alienRoot, 'n2', '0', 'stray-file'), 'x');
    const tree = await api.get('/alien/dir');
    t.equal(tree.status, 200);
    t.ok(isJson(tree));
    t.same(tree.json(), {
      name: 'alien',
      path: alienRoot,
      children: [
        {
          name: 'n2',
          path: path.join(alienRoot, 'n2'),
          children: [
            {
              name: '0',
              path: path.join(alienRoot, 'n2', '0'),
              children: [{ name: '1700000000_abc', path: path.join(alienRoot, 'n2', '0', '1700000000_abc'), children: [] }],
            },
          ],
        },
      ],
    });
    const detach = await api.post('/alien/detach');
    t.equal(detach.status, 200);
    t.ok(isJson(detach));
    t.same(detach.json(), { ok: true, msg: '' });
  });

  t.test('GET /vdisks/{id}/replicas/local/dirs: one tree per local replica, rooted at the disk', async (t) => {
    const r = await api.get('/vdisks/3/replicas/local/dirs');
    t.equal(r.status, 200);
    t.ok(isJson(r));
    const trees = r.json<Dir[]>();
    t.same(
      trees.map((d) => [d.name, d.path]),
      [
        ['d1', p('n1', 'd1')],
        ['d2', p('n1', 'd2')],
      ],
    );
    const bob = trees[0].children.find((c) => c.name === 'bob');
    t.ok(bob, 'the root directory is in the tree');
    t.same(
      bob!.children.map((c) => c.name),
      ['0', '3'],
      'd1 holds vdisks 0 and 3',
    );
    const one = (await api.get('/vdisks/0/replicas/local/dirs')).json<Dir[]>();
    t.equal(one.length, 1);
    t.equal(one[0].path, p('n1', 'd1'));
  });

  t.test('GET /configuration and /version', async (t) => {
    const c = await api.get('/configuration');
    t.equal(c.status, 200);
    t.ok(isJson(c));
    t.same(c.json(), { blob_file_name_prefix: 'bob', root_dir_name: 'bob' });

    const v = await api.get('/version');
    t.equal(v.status, 200);
    t.ok(isJson(v));
    const body = v.json<Record<string, Record<string, unknown>>>();
    t.same(Object.keys(body).sort(), ['bob_version', 'pearl_version']);
    const pkg = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', '..', 'package.json'), 'utf8')) as { version: string };
    t.equal(body.bob_version.version, pkg.version, 'the package version');
    for (const k of ['bob_version', 'pearl_version']) {
      t.same(Object.keys(body[k]).sort(), ['build_time', 'version'], `${k} keys`);
      t.type(body[k].version, 'string');
      t.type(body[k].build_time, 'string');
    }
  });

  t.test('GET /status/space', async (t) => {
    const keys = ['free_disk_space_bytes', 'occupied_disk_space_by_disk', 'occupied_disk_space_bytes', 'total_disk_space_bytes', 'used_disk_space_bytes'];
    type Space = Record<string, number> & { occupied_disk_space_by_disk: Record<string, number> };
    const before = (await api.json<Space>('/status/space'));
    t.same(Object.keys(before).sort(), keys);
    t.same(Object.keys(before.occupied_disk_space_by_disk).sort(), ['d1', 'd2'], 'one entry per disk name (the alien directory counts for d1)');
    for (const k of ['total_disk_space_bytes', 'free_disk_space_bytes', 'used_disk_space_bytes', 'occupied_disk_space_bytes']) {
      t.ok(Number.isSafeInteger(before[k]) && before[k] >= 0, `${k} is a non-negative integer`);
    }
    t.ok(before.total_disk_space_bytes > 0);
    t.ok(before.free_disk_space_bytes <= before.total_disk_space_bytes);
    t.ok(before.used_disk_space_bytes <= before.total_disk_space_bytes);
    // Key 2 lands in vdisk 2, held only by n1/d2.
    t.equal((await api.post('/data/2', Buffer.alloc(5000, 7))).status, 201);
    const after = await api.json<Space>('/status/space');
    t.ok(after.occupied_disk_space_by_disk.d2 >= before.occupied_disk_space_by_disk.d2 + 5000, 'the written value occupies d2');
    t.equal(
      after.occupied_disk_space_bytes,
      after.occupied_disk_space_by_disk.d1 + after.occupied_disk_space_by_disk.d2,
      'occupied is the sum over disks',
    );
  });

  t.test('GET /metrics: Prometheus text whose request counters move', async (t) => {
    const m1 = await api.get('/metrics');
    t.equal(m1.status, 200);
    t.match(m1.headers.get('content-type'), /^text\/plain/);
    t.match(m1.text, /^# HELP oyster_rest_requests_total /m);
    t.match(m1.text, /^# TYPE oyster_rest_requests_total counter$/m);
    const labels = { method: 'GET', route: '/status', status: '200' };
    const before = sample(m1.text, 'oyster_rest_requests_total', labels);
    const unmatched = { method: 'GET', status: '404' };
    const before404 = sample(m1.text, 'oyster_rest_requests_total', unmatched);
    for (let i = 0; i < 3; i++) await api.get('/status');
    await api.get('/no/such/route');
    const m2 = (await api.get('/metrics')).text;
    t.equal(sample(m2, 'oyster_rest_requests_total', labels), before + 3, 'three more GET /status');
    t.equal(sample(m2, 'oyster_rest_requests_total', unmatched), before404 + 1, 'one more 404');
    t.ok(sample(m2, 'oyster_rest_request_duration_seconds_count', { method: 'GET', route: '/status' }) >= before + 3, 'latency histogram');
  });

  t.test('unknown routes are 404 and wrong methods 405, both StatusExt', async (t) => {
    for (const [m, u] of [
      ['GET', '/nope'],
      ['POST', '/nope'],
      ['DELETE', '/vdisks/0/nope'],
      ['GET', '/data'],
      ['GET', '/data/'],
      ['GET', '/vdisks/0/partitions/by_timestamp/1/attach/extra'],
      ['GET', '/'],
    ] as const) {
      failure(t, await api.call(m, u), 404, 'Not Found', `${m} ${u}`);
    }
    for (const [m, u, allow] of [
      ['PATCH', '/status', /GET/],
      ['POST', '/status', /GET/],
      ['DELETE', '/vdisks', /GET/],
      ['POST', '/disks/list', /GET/],
      ['GET', '/disks/d1/stop', /POST/],
      ['PUT', '/disks/d1/start', /POST/],
      ['PUT', '/data/1', /POST/],
      ['PATCH', '/data/1', /DELETE/],
      ['GET', '/vdisks/0/remount', /POST/],
      ['GET', '/blobs/outdated', /DELETE/],
      ['GET', '/vdisks/0/partitions/by_timestamp/1/attach', /PUT/],
      ['POST', '/vdisks/0/partitions/by_timestamp/1', /DELETE/],
      ['DELETE', '/alien', /GET/],
      ['GET', '/alien/detach', /POST/],
      ['POST', '/metrics', /GET/],
    ] as const) {
      const r = await api.call(m, u);
      failure(t, r, 405, 'Method Not Allowed', `${m} ${u}`);
      t.match(r.headers.get('allow'), allow, `${m} ${u}: Allow names the methods`);
    }
  });

  t.test('the node is still up and stops cleanly', async (t) => {
    t.ok(node.alive());
    t.equal((await api.get('/status')).status, 200);
    t.equal(await node.proc.stop(), 0, 'exit code 0 on SIGTERM');
  });
});
