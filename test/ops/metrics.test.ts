// Prometheus metrics of one running node (docs/OPERATIONS.md): scraped on the
// REST port and on the metrics.prometheus_addr listener after REST and gRPC
// traffic, every family of the node moves as the traffic says; a disk stop
// shows in oyster_disk_ready; a record damaged on disk while the node is
// stopped is refused on read, counted in oyster_corrupt_records_total and
// logged at error. Each exposition passes `promtool check metrics` when
// promtool is installed.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { BobClient, failure, keyBytes, Status } from '../helpers/grpc-client';
import { flipByte, recordsIn } from '../helpers/blob-files';
import { freePort, writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import { call } from '../rest/lib/node';
import { has, LEVEL, logs, promtoolCheck, runNode, sample, scrape, stopNode } from './lib';

const KEY_SIZE = 8;
// 4 vdisks: 0 and 2 on disk1, 1 and 3 on disk2

const value = (key: number) => Buffer.from(`metrics value of key ${key}, long enough to damage`);

t.test('metrics of a running node', async (t) => {
  const dir = tempDir(t, 'oyster-metrics-');
  const promPort = await freePort();
  const files = await writeCluster(
    dir,
    {
      nodes: [{ name: 'n1', disks: ['disk1', 'disk2'] }],
      replicas: [['n1/disk1'], ['n1/disk2'], ['n1/disk1'], ['n1/disk2']],
      keySize: KEY_SIZE,
    },
    {
      maxDataInBlob: 4, // closed blobs, so that bloom filters exist
      extra: { metrics: { graphite_enabled: false, prometheus_enabled: true, prometheus_addr: `127.0.0.1:${promPort}` } },
    },
  );
  let proc = await runNode(t, files, 'n1');
  const rest = () => proc.url;
  const listener = `http://127.0.0.1:${promPort}/metrics`;
  const grpcClient = new BobClient(files.addresses.n1);
  t.teardown(() => grpcClient.close());

  const before = await scrape(`${rest()}/metrics`);
  promtoolCheck(t, before, 'the exposition of an idle node');

  // REST: 16 puts (4 per vdisk), 16 gets, 2 gets of missing keys, 2 HEADs, 1 delete.
  const keys = Array.from({ length: 16 }, (_, i) => i);
  let written = 0;
  for (const k of keys) {
    t.equal((await call(rest(), 'POST', `/data/${k}`, value(k))).status, 201);
    written += value(k).length;
  }
  for (const k of keys) t.equal((await call(rest(), 'GET', `/data/${k}`)).text, value(k).toString());
  for (const k of [1000, 1001]) t.equal((await call(rest(), 'GET', `/data/${k}`)).status, 404);
  for (const k of [0, 1]) t.equal((await call(rest(), 'HEAD', `/data/${k}`)).status, 200);
  t.equal((await call(rest(), 'DELETE', '/data/15')).status, 200);
  // gRPC, coordinated: 3 puts, 3 gets (one missing), 1 exist of 2 keys, 1 delete; local (force_node): 1 put, 1 get.
  const ts = Math.floor(Date.now() / 1000);
  for (const k of [100, 101, 102]) await grpcClient.put(keyBytes(k, KEY_SIZE), value(k), ts);
  for (const k of [100, 101]) t.equal((await grpcClient.get(keyBytes(k, KEY_SIZE))).data.toString(), value(k).toString());
  t.equal((await failure(grpcClient.get(keyBytes(999, KEY_SIZE)))).code, Status.NOT_FOUND);
  t.same(await grpcClient.exist([keyBytes(100, KEY_SIZE), keyBytes(998, KEY_SIZE)]), [true, false]);
  await grpcClient.delete(keyBytes(102, KEY_SIZE), ts + 1);
  await grpcClient.put(keyBytes(200, KEY_SIZE), value(200), ts, { force_node: true });
  t.equal((await grpcClient.get(keyBytes(200, KEY_SIZE), { force_node: true })).data.toString(), value(200).toString());
  // Refused before any handler runs: bytes that are no PutRequest.
  t.equal((await failure(grpcClient.callRaw('/bob_storage.BobApi/Put', Buffer.from([0xff, 0xff, 0xff])))).code, Status.INVALID_ARGUMENT);

  const after = await scrape(`${rest()}/metrics`);
  const moved = (name: string, labels: Record<string, string> = {}) => sample(after, name, labels) - sample(before, name, labels);
  const req = (iface: string, operation: string, outcome: string, p = 'coordinated') => moved('oyster_requests_total', { interface: iface, operation, path: p, outcome });

  t.test('counters start at 0 for every label set they can take', async (t) => {
    const counters = [...before.matchAll(/^# TYPE (\w+) counter$/gm)].map((m) => m[1]);
    const seriesOf = (text: string, name: string) =>
      new Set(text.split('\n').filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `)).map((l) => l.slice(0, l.lastIndexOf(' '))));
    // Route and status pairs are open-ended: they appear with their first request.
    for (const name of counters.filter((n) => n !== 'oyster_rest_requests_total')) {
      const fresh = [...seriesOf(after, name)].filter((s) => !seriesOf(before, name).has(s));
      t.same(fresh, [], `${name}: no series appeared with the traffic`);
    }
    t.equal(seriesOf(before, 'oyster_requests_total').size, 3 * 5 + 2 * 4 * 5, 'oyster_requests_total: REST put, get, delete and gRPC coordinated and local, by 5 outcomes');
    t.equal(sample(before, 'oyster_requests_total'), 0, 'all at 0 before any request');
    for (const disk of ['disk1', 'disk2']) t.ok(has(before, 'oyster_corrupt_records_total', { disk }), `oyster_corrupt_records_total{disk="${disk}"} is there before any corruption`);
    t.ok(has(before, 'oyster_grpc_requests_total', { method: 'Put', code: 'DATA_LOSS' }), 'gRPC answers by method and every code the node answers with');
    t.ok(has(before, 'oyster_engine_operations_total', { operation: 'get', outcome: 'error' }), 'engine errors');
  });

  t.test('requests by interface, operation, path and outcome', async (t) => {
    t.equal(req('rest', 'put', 'ok'), 16, 'REST puts');
    t.equal(req('rest', 'get', 'ok'), 18, 'REST gets, and HEADs (GET without the body)');
    t.equal(req('rest', 'get', 'not_found'), 2, 'REST gets of missing keys');
    t.equal(req('rest', 'exist', 'ok'), 0, 'REST HEADs are gets');
    t.equal(req('rest', 'delete', 'ok'), 1, 'REST delete');
    t.equal(req('grpc', 'put', 'ok'), 3, 'gRPC coordinated puts');
    t.equal(req('grpc', 'get', 'ok'), 2, 'gRPC coordinated gets');
    t.equal(req('grpc', 'get', 'not_found'), 1, 'gRPC get of a missing key');
    t.equal(req('grpc', 'exist', 'ok'), 1, 'gRPC exist');
    t.equal(req('grpc', 'delete', 'ok'), 1, 'gRPC delete');
    t.equal(req('grpc', 'put', 'ok', 'local'), 1, 'gRPC force_node put: the local path');
    t.equal(req('grpc', 'get', 'ok', 'local'), 1, 'gRPC force_node get: the local path');
    t.equal(req('rest', 'put', 'ok', 'local'), 0, 'REST never takes the local path');
    t.equal(moved('oyster_request_duration_seconds_count', { interface: 'rest', operation: 'put', path: 'coordinated' }), 16, 'latency histogram count');
    t.ok(moved('oyster_request_duration_seconds_sum', { interface: 'rest', operation: 'put', path: 'coordinated' }) > 0, 'latency histogram sum');
    t.ok(has(after, 'oyster_request_duration_seconds_bucket', { interface: 'grpc', operation: 'get', path: 'local', le: '+Inf' }), 'buckets per path');
    t.equal(moved('oyster_rest_requests_total', { method: 'POST', route: '/data/:key', status: '201' }), 16, 'REST requests by route pattern and status');
    t.equal(moved('oyster_rest_requests_total', { method: 'GET', route: '/data/:key', status: '404' }), 2);
    t.equal(moved('oyster_rest_request_duration_seconds_count', { method: 'GET', route: '/data/:key' }), 18);
  });

  t.test('gRPC calls by method and status code, refusals included', async (t) => {
    const grpcCalls = (method: string, code: string) => moved('oyster_grpc_requests_total', { method, code });
    t.equal(grpcCalls('Put', 'OK'), 4, 'puts, coordinated and force_node');
    t.equal(grpcCalls('Get', 'OK'), 3, 'gets, coordinated and force_node');
    t.equal(grpcCalls('Get', 'NOT_FOUND'), 1, 'get of a missing key');
    t.equal(grpcCalls('Exist', 'OK'), 1);
    t.equal(grpcCalls('Delete', 'OK'), 1);
    t.equal(grpcCalls('Put', 'INVALID_ARGUMENT'), 1, 'the undecodable put');
  });

  t.test('engine operations and bytes', async (t) => {
    t.ok(moved('oyster_engine_operations_total', { operation: 'put', outcome: 'ok' }) >= 16 + 3 + 1, 'engine puts');
    t.ok(moved('oyster_engine_operations_total', { operation: 'get', outcome: 'ok' }) >= 16 + 2 + 1, 'engine gets');
    t.ok(moved('oyster_engine_operations_total', { operation: 'delete', outcome: 'ok' }) >= 2, 'engine deletes');
    t.ok(moved('oyster_engine_operations_total', { operation: 'exist' }) >= 1, 'engine exists');
    t.ok(moved('oyster_engine_bytes_total', { direction: 'written' }) >= written, `value bytes written (≥ ${written})`);
    t.ok(moved('oyster_engine_bytes_total', { direction: 'read' }) >= written - value(15).length, 'value bytes read');
  });

  t.test('storage gauges per disk', async (t) => {
    for (const disk of ['disk1', 'disk2']) {
      t.ok(sample(after, 'oyster_records', { disk }) >= 8, `${disk}: records`);
      t.ok(sample(after, 'oyster_blobs', { disk }) >= 2, `${disk}: blobs (4 records per blob)`);
      t.ok(sample(after, 'oyster_partitions', { disk }) >= 2, `${disk}: partitions (one per vdisk)`);
      t.ok(sample(after, 'oyster_disk_used_bytes', { disk }) > written / 2, `${disk}: bytes of blob and index files`);
      t.ok(sample(after, 'oyster_index_memory_bytes', { disk }) > 0, `${disk}: index memory`);
      t.ok(sample(after, 'oyster_bloom_filter_memory_bytes', { disk }) > 0, `${disk}: bloom filter memory of closed blobs`);
      const size = sample(after, 'oyster_disk_size_bytes', { disk });
      const avail = sample(after, 'oyster_disk_avail_bytes', { disk });
      t.ok(size > 0 && avail > 0 && avail <= size, `${disk}: filesystem size ${size}, available ${avail}`);
      t.equal(sample(after, 'oyster_corrupted_blobs', { disk, alien: 'false' }), 0, `${disk}: no quarantined blobs`);
      t.equal(sample(after, 'oyster_disk_ready', { disk, alien: 'false' }), 1, `${disk} is ready`);
      t.equal(sample(before, 'oyster_records', { disk }), 0, `${disk} had no records before`);
      t.ok(has(before, 'oyster_live_keys', { disk, alien: 'false' }) && sample(before, 'oyster_live_keys', { disk }) === 0, `${disk} had a live keys series at 0 before`);
    }
    // Keys whose newest record is a value: vdisks 0 and 2 (even keys) on
    // disk1, 1 and 3 on disk2; 15 and 102 deleted.
    t.equal(sample(after, 'oyster_live_keys', { disk: 'disk1', alien: 'false' }), 8 + 2, 'disk1: live keys 0, 2, ..., 14, 100, 200');
    t.equal(sample(after, 'oyster_live_keys', { disk: 'disk2', alien: 'false' }), 7 + 1, 'disk2: live keys 1, 3, ..., 13, 101');
    t.ok(sample(after, 'oyster_records', { disk: 'disk1', alien: 'false' }) > sample(after, 'oyster_live_keys', { disk: 'disk1', alien: 'false' }), 'records count the tombstone too');
    t.ok(has(after, 'oyster_live_keys', { disk: 'disk1', alien: 'true' }), 'the alien directory has its live keys');
    t.equal(sample(after, 'oyster_disk_ready', { disk: 'disk1', alien: 'true' }), 1, 'the alien directory (on disk1) is ready');
    t.notOk(has(after, 'oyster_aliens_pending_records'), 'no aliens on a single node');
    t.ok(has(after, 'oyster_records', { disk: 'disk1', alien: 'true' }), 'the alien directory has its own series');
    t.notOk(after.split('\n').some((l) => /[{,]node="/.test(l)), 'no series carries a node label: the scrape target names the node');
  });

  t.test('process metrics', async (t) => {
    t.ok(sample(after, 'process_cpu_seconds_total') > 0, 'CPU seconds, under the standard name');
    t.ok(sample(after, 'process_resident_memory_bytes') > 10e6, 'resident memory');
    t.ok(sample(after, 'process_open_fds') > 0, 'open file descriptors');
    t.ok(sample(after, 'nodejs_heap_size_used_bytes') > 0, 'heap');
    t.ok(has(after, 'nodejs_eventloop_lag_seconds'), 'event loop lag');
    t.ok(has(after, 'nodejs_active_resources', { type: 'TCPServerWrap' }), 'active resources by type');
    t.notOk(/^oyster_(process|nodejs)_/m.test(after), 'no prefixed copies');
    const busy = [sample(before, 'oyster_event_loop_busy_seconds_total'), sample(after, 'oyster_event_loop_busy_seconds_total')];
    t.ok(busy[0] > 0 && busy[1] > busy[0], `event loop busy time grows with the traffic (${busy[0]} s, then ${busy[1]} s)`);
    const info = after.split('\n').find((l) => l.startsWith('oyster_build_info{'));
    t.match(info, /^oyster_build_info\{version="\d+\.\d+\.\d+[^"]*",revision="[0-9a-f]{7,40}",nodejs="v\d+\.\d+\.\d+"\} 1$/, `oyster_build_info names version, revision and Node.js: ${info}`);
  });

  t.test('the metrics listener on prometheus_addr', async (t) => {
    const separate = await scrape(listener);
    t.ok(sample(separate, 'oyster_requests_total', { interface: 'rest', operation: 'put', outcome: 'ok' }) >= 16, 'the same counters');
    t.ok(has(separate, 'oyster_records', { disk: 'disk1' }), 'and gauges');
    t.equal((await fetch(`http://127.0.0.1:${promPort}/other`)).status, 404, 'other paths: 404');
    t.equal((await fetch(`http://127.0.0.1:${promPort}/`)).status, 200, '/ serves the metrics too');
    promtoolCheck(t, separate, 'the listener exposition after traffic');
    promtoolCheck(t, after, 'the REST exposition after traffic');
  });

  t.test('oyster_disk_ready follows a disk stop and start', async (t) => {
    t.equal((await call(rest(), 'POST', '/disks/disk2/stop')).status, 200);
    let m = await scrape(`${rest()}/metrics`);
    t.equal(sample(m, 'oyster_disk_ready', { disk: 'disk2', alien: 'false' }), 0, 'disk2 is not ready');
    t.equal(sample(m, 'oyster_disk_ready', { disk: 'disk1', alien: 'false' }), 1, 'disk1 still is');
    for (const name of ['oyster_records', 'oyster_live_keys', 'oyster_blobs', 'oyster_partitions', 'oyster_disk_used_bytes']) {
      t.notOk(has(m, name, { disk: 'disk2' }), `a stopped disk has no ${name} series (not a 0)`);
      t.ok(has(m, name, { disk: 'disk1', alien: 'false' }), `disk1 still has its ${name}`);
    }
    t.equal((await call(rest(), 'POST', '/disks/disk2/start')).status, 200);
    m = await scrape(`${rest()}/metrics`);
    t.equal(sample(m, 'oyster_disk_ready', { disk: 'disk2', alien: 'false' }), 1, 'disk2 is ready again');
    t.ok(sample(m, 'oyster_records', { disk: 'disk2' }) >= 8, 'and reports its records again');
  });

  t.test('a damaged record: the read fails, the counter moves, an error is logged', async (t) => {
    const victim = 4; // vdisk 0, on disk1
    t.equal(await stopNode(proc), 0, 'the node stops cleanly');
    const vdiskDir = path.join(files.disks.n1.disk1, 'bob', '0');
    const want = keyBytes(victim, KEY_SIZE);
    let damaged = false;
    for (const part of fs.readdirSync(vdiskDir)) {
      for (const f of fs.readdirSync(path.join(vdiskDir, part)).filter((n) => n.endsWith('.blob'))) {
        const blob = path.join(vdiskDir, part, f);
        const rec = recordsIn(blob, KEY_SIZE).find((r) => r.key.equals(want));
        if (!rec) continue;
        flipByte(blob, rec.offset + rec.headerSize + 10);
        damaged = true;
      }
    }
    t.ok(damaged, `the record of key ${victim} was found and one byte of its value flipped`);
    proc = await runNode(t, files, 'n1');
    const m0 = await scrape(`${rest()}/metrics`);
    const r = await call(rest(), 'GET', `/data/${victim}`);
    t.ok(r.status >= 500, `GET of the damaged key fails (${r.status} ${r.text})`);
    t.notMatch(r.text, value(victim).toString().slice(0, 20), 'the damaged value is not returned');
    t.equal((await call(rest(), 'GET', '/data/8')).text, value(8).toString(), 'another key of the same vdisk reads fine');
    const m1 = await scrape(`${rest()}/metrics`);
    t.ok(sample(m1, 'oyster_corrupt_records_total', { disk: 'disk1' }) > sample(m0, 'oyster_corrupt_records_total', { disk: 'disk1' }), 'oyster_corrupt_records_total{disk="disk1"} moved');
    t.equal(sample(m1, 'oyster_corrupt_records_total', { disk: 'disk2' }), 0, 'not on disk2');
    t.ok(sample(m1, 'oyster_engine_operations_total', { operation: 'get', outcome: 'error' }) >= 1, 'the engine get is counted as an error');
    const line = logs(proc).find((l) => l.level === LEVEL.error && /damaged record/.test(l.msg));
    t.ok(line, 'the damaged record is logged at error');
    t.match(line, { node: 'n1', vdisk: 0 }, 'with the node and vdisk');
    promtoolCheck(t, m1, 'the exposition with a corrupt record');
  });
});
