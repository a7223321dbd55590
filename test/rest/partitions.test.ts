// Time partitions over REST with a 2 s timestamp_period:
// roll-over into new partition directories, /vdisks/{id}/partitions[/{id}],
// detach/attach (PUT and POST) and DELETE by timestamp with their 404/409/400
// answers, the active partition's protection, DELETE /blobs/outdated, and a
// remount that picks up a partition directory copied in.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ownerHash } from '../../src/keys/owner-hash';
import { client, failure, isJson, ls, sleep, startRestNode, statusExt } from './lib/node';

const PERIOD = 2; // seconds; a divisor of a day, so partitions start at multiples of it

/** Sleeps until just after the next partition boundary; returns that partition's start. */
async function nextPeriod(): Promise<number> {
  const now = Date.now() / 1000;
  const start = (Math.floor(now / PERIOD) + 1) * PERIOD;
  await sleep((start - now) * 1000 + 80);
  return start;
}

t.test('partitions of vdisk 0', async (t) => {
  const node = await startRestNode(t, { spec: { nodes: [{ name: 'solo' }], vdisks: 2 }, opts: { timestampPeriod: `${PERIOD}s` } });
  const api = client(node.url);
  const hash = ownerHash('solo');
  const vdiskDir = path.join(node.disk('disk1'), 'bob', '0');
  const name = (ts: number) => `${ts}_${hash}`;
  const partitions = async () => (await api.json<{ partitions: string[] }>('/vdisks/0/partitions')).partitions.slice().sort();
  const value = async (key: number) => {
    const r = await api.get(`/data/${key}`);
    return r.status === 200 ? r.text : r.status;
  };
  const byTs = (ts: number | string, action?: string) => `/vdisks/0/partitions/by_timestamp/${ts}${action ? `/${action}` : ''}`;

  // Even keys land in vdisk 0. Two periods, two partitions.
  const p1 = await nextPeriod();
  for (const k of [0, 2]) t.equal((await api.post(`/data/${k}`, `v${k}`)).status, 201);
  t.equal((await api.post('/data/1', 'v1')).status, 201, 'vdisk 1 gets its own partition');
  const p2 = await nextPeriod();
  for (const k of [4, 6]) t.equal((await api.post(`/data/${k}`, `v${k}`)).status, 201);

  t.test('the current partition cannot be detached or deleted (409)', async (t) => {
    failure(t, await api.post(byTs(p2, 'detach')), 409, /active/, 'POST detach');
    failure(t, await api.put(byTs(p2, 'detach')), 409, /active/, 'PUT detach');
    failure(t, await api.del(byTs(p2)), 409, /active/, 'DELETE');
    t.equal(await value(4), 'v4', 'its records stay readable');
    t.ok(fs.existsSync(path.join(vdiskDir, name(p2))), 'its directory stays');
  });

  t.test('writes in different periods made different partition directories', async (t) => {
    t.same(await partitions(), [name(p1), name(p2)].sort());
    t.same(ls(vdiskDir), [name(p1), name(p2)].sort(), 'one directory per partition');
    const r = await api.get('/vdisks/0/partitions');
    t.ok(isJson(r));
    const body = r.json<Record<string, unknown>>();
    t.same(Object.keys(body).sort(), ['disk_name', 'node_name', 'partitions', 'vdisk_id']);
    t.same({ ...body, partitions: undefined }, { vdisk_id: 0, node_name: 'solo', disk_name: 'disk1', partitions: undefined });
    t.same((await api.json<{ partitions: string[] }>('/vdisks/1/partitions')).partitions, [name(p1)]);
    t.equal(await api.json<number>('/vdisks/0/records/count'), 4);
  });

  t.test('GET /vdisks/0/partitions/{partitionId}', async (t) => {
    const r = await api.get(`/vdisks/0/partitions/${name(p1)}`);
    t.equal(r.status, 200);
    t.ok(isJson(r));
    t.same(Object.keys(r.json() as object), ['vdisk_id', 'node_name', 'disk_name', 'timestamp', 'records_count', 'disk_bytes', 'reclaimable_bytes', 'reclaimable_records']);
    t.match(r.json(), { vdisk_id: 0, node_name: 'solo', disk_name: 'disk1', timestamp: p1, records_count: 2, disk_bytes: Number, reclaimable_bytes: 0, reclaimable_records: 0 });
    t.match(await api.json(`/vdisks/0/partitions/${name(p2)}`), { vdisk_id: 0, node_name: 'solo', disk_name: 'disk1', timestamp: p2, records_count: 2, disk_bytes: Number });
    failure(t, await api.get(`/vdisks/0/partitions/${p1}_nothash`), 404, new RegExp(`${p1}_nothash`), 'unknown partition id');
    failure(t, await api.get(`/vdisks/0/partitions/${p1}`), 404, undefined, 'a bare timestamp is not a partition id');
    failure(t, await api.get(`/vdisks/1/partitions/${name(p2)}`), 404, undefined, 'a partition of another vdisk');
  });

  t.test('DELETE /blobs/outdated closes the active blob of past partitions only', async (t) => {
    const indexes = (ts: number) => ls(path.join(vdiskDir, name(ts))).filter((f) => f.endsWith('.index'));
    t.same(indexes(p1), [], 'the old partition still has its active blob');
    statusExt(t, await api.del('/blobs/outdated'), 200, true, 'Successfully removed outdated blobs');
    t.equal(indexes(p1).length, 1, 'closing the active blob wrote its index');
    t.same(indexes(p2), [], 'the current partition keeps its active blob');
    t.equal(await value(0), 'v0', 'records of the closed blob stay readable');
  });

  t.test('detach makes the records of an old partition unreadable; attach brings them back', async (t) => {
    statusExt(t, await api.post(byTs(p1, 'detach')), 200, true, `partitions with timestamp ${p1} on vdisk 0 is successfully Detached`);
    t.same([await value(0), await value(2), await value(4), await value(6)], [404, 404, 'v4', 'v6']);
    t.equal((await api.head('/data/0')).status, 404);
    t.same(await partitions(), [name(p2)]);
    t.equal(await api.json<number>('/vdisks/0/records/count'), 2);
    failure(t, await api.get(`/vdisks/0/partitions/${name(p1)}`), 404, undefined, 'a detached partition has no info');
    t.ok(fs.existsSync(path.join(vdiskDir, name(p1))), 'the directory stays on disk');
    t.equal(await value(1), 'v1', 'the same period of another vdisk is not affected');
    failure(t, await api.post(byTs(p1, 'detach')), 404, new RegExp(`${p1}`), 'detaching it again');

    statusExt(t, await api.put(byTs(p1, 'attach')), 200, true, `partitions with timestamp ${p1} on vdisk 0 is successfully Attached`);
    t.same([await value(0), await value(2), await value(4)], ['v0', 'v2', 'v4']);
    t.same(await partitions(), [name(p1), name(p2)].sort());
    failure(t, await api.put(byTs(p1, 'attach')), 409, /already attached/, 'PUT attach of an attached partition');
    failure(t, await api.post(byTs(p1, 'attach')), 409, /already attached/, 'POST attach of an attached partition');
    failure(t, await api.post(byTs(p2, 'attach')), 409, undefined, 'attach of the current partition');

    // PUT detach and POST attach work as well.
    statusExt(t, await api.put(byTs(p1, 'detach')), 200, true, undefined, 'PUT detach');
    t.equal(await value(2), 404);
    statusExt(t, await api.post(byTs(p1, 'attach')), 200, true, undefined, 'POST attach');
    t.equal(await value(2), 'v2');
  });

  t.test('malformed and unknown parameters', async (t) => {
    for (const m of ['POST', 'PUT'] as const) {
      failure(t, await api.call(m, byTs(p1, 'explode')), 400, /explode/, `${m} unknown action`);
      failure(t, await api.call(m, byTs(p1, 'ATTACH')), 400, undefined, `${m} actions are lower case`);
      failure(t, await api.call(m, byTs(123, 'attach')), 404, /123/, `${m} attach of an unknown timestamp`);
      failure(t, await api.call(m, byTs(123, 'detach')), 404, /123/, `${m} detach of an unknown timestamp`);
      failure(t, await api.call(m, byTs('abc', 'detach')), 400, undefined, `${m} malformed timestamp`);
      failure(t, await api.call(m, byTs('-5', 'detach')), 400, undefined, `${m} negative timestamp`);
      failure(t, await api.call(m, byTs('18446744073709551616', 'attach')), 400, undefined, `${m} timestamp beyond u64`);
      failure(t, await api.call(m, byTs('18446744073709551615', 'attach')), 404, undefined, `${m} u64 max names no partition`);
      failure(t, await api.call(m, `/vdisks/9/partitions/by_timestamp/${p1}/detach`), 404, undefined, `${m} unknown vdisk`);
      failure(t, await api.call(m, `/vdisks/x/partitions/by_timestamp/${p1}/detach`), 400, undefined, `${m} malformed vdisk`);
    }
    failure(t, await api.del(byTs(123)), 404, /123/, 'DELETE of an unknown timestamp');
    failure(t, await api.del(byTs('abc')), 400, undefined, 'DELETE with a malformed timestamp');
    failure(t, await api.del(byTs('18446744073709551616')), 400, undefined, 'DELETE with a timestamp beyond u64');
    failure(t, await api.del(`/vdisks/9/partitions/by_timestamp/${p1}`), 404, undefined, 'DELETE on an unknown vdisk');
    t.same(await partitions(), [name(p1), name(p2)].sort(), 'nothing changed');
  });

  t.test('DELETE by timestamp removes the directory and its records', async (t) => {
    // Keep a copy of the old partition under another start, as bob-tools copies partitions in.
    t.equal((await api.post(byTs(p1, 'detach'))).status, 200, 'detached first so that its files are complete');
    const copy = p1 - 1000;
    fs.cpSync(path.join(vdiskDir, name(p1)), path.join(vdiskDir, name(copy)), { recursive: true });

    statusExt(t, await api.del(byTs(p1)), 200, true, new RegExp(`${name(p1)}.*${p1}`), 'DELETE of a detached partition');
    t.notOk(fs.existsSync(path.join(vdiskDir, name(p1))), 'its directory is gone');
    failure(t, await api.del(byTs(p1)), 404, undefined, 'DELETE again');
    failure(t, await api.put(byTs(p1, 'attach')), 404, undefined, 'nothing left to attach');
    t.same([await value(0), await value(4)], [404, 'v4']);

    t.test('a remount picks up the partition copied in', async (t) => {
      t.same(await partitions(), [name(p2)], 'not seen before the remount');
      statusExt(t, await api.post('/vdisks/0/remount'), 200, true, 'vdisk 0 successfully restarted');
      t.same(await partitions(), [name(copy), name(p2)].sort());
      t.same([await value(0), await value(2), await value(4), await value(6)], ['v0', 'v2', 'v4', 'v6']);
      t.match(await api.json(`/vdisks/0/partitions/${name(copy)}`), { vdisk_id: 0, node_name: 'solo', disk_name: 'disk1', timestamp: copy, records_count: 2, disk_bytes: Number, reclaimable_bytes: 0, reclaimable_records: 0 });
    });

    t.test('DELETE of an attached old partition', async (t) => {
      statusExt(t, await api.del(byTs(copy)), 200, true, new RegExp(`${copy}`));
      t.notOk(fs.existsSync(path.join(vdiskDir, name(copy))));
      t.same(await partitions(), [name(p2)]);
      t.same([await value(0), await value(2), await value(4)], [404, 404, 'v4']);
      t.equal(await api.json<number>('/vdisks/0/records/count'), 2);
    });
  });

  t.test('during a remount the vdisk answers 503, never a wrong answer', async (t) => {
    // Left in vdisk 0: the partition of p2 (keys 4 and 6).
    const seen: Record<string, number> = {};
    const wrong: string[] = [];
    const written: number[] = [];
    let stop = false;
    const note = (what: string, status: number, ok: boolean, text: string) => {
      seen[`${what} ${status}`] = (seen[`${what} ${status}`] ?? 0) + 1;
      if (!ok) wrong.push(`${what}: ${status} ${text.slice(0, 200)}`);
    };
    const reader = async () => {
      while (!stop) {
        const v = await api.get('/data/4');
        note('GET /data/4', v.status, (v.status === 200 && v.text === 'v4') || v.status === 503, v.text);
        const c = await api.get('/vdisks/0/records/count');
        note('records/count', c.status, (c.status === 200 && Number(c.text) >= 2) || c.status === 503, c.text);
        const p = await api.get('/vdisks/0/partitions');
        note('partitions', p.status, (p.status === 200 && p.json<{ partitions: string[] }>().partitions.includes(name(p2))) || p.status === 503, p.text);
      }
    };
    const writer = async () => {
      for (let k = 1000; !stop; k += 2) {
        const r = await api.post(`/data/${k}`, `w${k}`);
        note('POST', r.status, r.status === 201, r.text);
        if (r.status === 201) written.push(k);
      }
    };
    const load = [reader(), reader(), writer()];
    for (let i = 0; i < 15; i++) statusExt(t, await api.post('/vdisks/0/remount'), 200, true, 'vdisk 0 successfully restarted', `remount ${i}`);
    stop = true;
    await Promise.all(load);
    t.same(wrong, [], 'every answer was right or 503');
    t.ok((seen['records/count 503'] ?? 0) + (seen['partitions 503'] ?? 0) + (seen['GET /data/4 503'] ?? 0) > 0, `503 seen while remounting: ${JSON.stringify(seen)}`);
    let unread = 0;
    for (const k of written) if ((await api.get(`/data/${k}`)).text !== `w${k}`) unread++;
    t.equal(unread, 0, `the ${written.length} records written meanwhile read back`);
  });

  t.test('the node is still up and stops cleanly', async (t) => {
    t.ok(node.alive());
    t.equal(await node.proc.stop(), 0);
  });
});
