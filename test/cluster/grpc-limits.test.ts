// The gRPC port's limits: a connection has at most 256 calls open at once
// (HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS), so a client that makes
// thousands of calls at once has them queued on its side instead of held
// by the node; connections past grpc_max_connections are closed while the
// others are served; calls past grpc_max_calls, all connections together,
// are refused at once, and a call whose request does not arrive within
// http_request_timeout ends, so that clients stalling calls on many
// connections hold a bounded memory; an Exist whose keys would hold more
// than the memory for values in flight is refused unread. A real oysterd.
import http2 from 'node:http2';
import net from 'node:net';
import t from 'tap';
import { BobClient, codeOf } from '../helpers/grpc-client';
import { startRestNode } from '../rest/lib/node';
import { peakRss } from '../helpers/memory';
import { sample } from '../rest/lib/metrics';
import { waitFor } from './lib';

t.test('a connection has at most 256 calls open; more are queued by the client, not held by the node', async (t) => {
  const node = await startRestNode(t, { spec: { nodes: [{ name: 'solo' }], vdisks: 2 } });
  const address = node.files.addresses.solo;
  const session = http2.connect(`http://${address}`);
  t.teardown(() => session.close());
  const settings = await new Promise<http2.Settings>((resolve) => session.once('remoteSettings', resolve));
  t.equal(settings.maxConcurrentStreams, 256, "the node's SETTINGS_MAX_CONCURRENT_STREAMS");
  const client = new BobClient(address, 120_000);
  t.teardown(() => client.close());
  const pid = node.proc.child.pid!;
  await client.exist([Buffer.alloc(8)]);
  const before = peakRss(pid);
  const calls = 40_000;
  const answers = await Promise.allSettled(Array.from({ length: calls }, (_, i) => client.exist([Buffer.from([i & 255, 0, 0, 0, 0, 0, 0, 0])])));
  const failed = answers.filter((a) => a.status === 'rejected');
  t.equal(failed.length, 0, `${calls} calls at once all answered${failed.length ? ` (first failure: ${(failed[0] as PromiseRejectedResult).reason})` : ''}`);
  const grew = peakRss(pid) - before;
  // Held at once, they took 330–450 MB more.
  t.ok(grew < 160 * 1024 * 1024, `peak resident set grew ${(grew / 1024 / 1024).toFixed(0)} MiB`);
});

t.test('connections past grpc_max_connections are closed, the others served', async (t) => {
  const node = await startRestNode(t, { spec: { nodes: [{ name: 'solo' }], vdisks: 2 }, opts: { extra: { grpc_max_connections: 2 } } });
  const address = node.files.addresses.solo;
  const [host, port] = [address.split(':')[0], Number(address.split(':')[1])];
  /** A connection, and whether the node closes it within `ms`. */
  const connect = () => {
    const socket = net.connect(port, host);
    socket.on('error', () => undefined);
    const closedWithin = (ms: number) =>
      new Promise<boolean>((resolve) => {
        if (socket.destroyed) return resolve(true);
        socket.once('close', () => resolve(true));
        setTimeout(() => resolve(false), ms);
      });
    return { socket, closedWithin };
  };
  // A gRPC client's connection (grpc-js shares one per address) and a second one.
  const client = new BobClient(address, 3000);
  t.teardown(() => client.close());
  await client.ping();
  const second = connect();
  t.teardown(() => second.socket.destroy());
  await new Promise((resolve) => second.socket.once('connect', resolve));
  t.notOk(await second.closedWithin(300), 'a second connection stays open');
  const third = connect();
  t.ok(await third.closedWithin(3000), 'a third connection is closed at once');
  await client.ping();
  t.pass('the gRPC client is served on');
  second.socket.destroy();
  await new Promise((resolve) => setTimeout(resolve, 100));
  const fourth = connect();
  t.teardown(() => fourth.socket.destroy());
  t.notOk(await fourth.closedWithin(300), 'once one closed, a new connection stays open');
});

t.test('calls past grpc_max_calls are refused at once; a request that stalls ends after http_request_timeout', async (t) => {
  const MAX = 64;
  const node = await startRestNode(t, {
    spec: { nodes: [{ name: 'solo' }], vdisks: 2 },
    opts: { extra: { grpc_max_calls: MAX, http_request_timeout: '3s', http_headers_timeout: '1s' } },
  });
  const address = node.files.addresses.solo;
  const pid = node.proc.child.pid!;
  const metric = async (name: string, labels: Record<string, string> = {}) => sample(await (await fetch(`${node.url}/metrics`)).text(), name, labels);
  const client = new BobClient(address, 5000);
  t.teardown(() => client.close());
  await client.ping();
  const before = peakRss(pid);
  // Unary Puts on 4 connections, each sending 30,000 bytes of a message of 60,000 and no more.
  const sessions = Array.from({ length: 4 }, () => http2.connect(`http://${address}`).on('error', () => undefined));
  t.teardown(() => sessions.forEach((s) => s.destroy()));
  const started = Date.now();
  const calls = sessions.flatMap((session) =>
    Array.from({ length: MAX / 2 }, () => {
      const stream = session.request({ ':method': 'POST', ':path': '/bob_storage.BobApi/Put', 'content-type': 'application/grpc', te: 'trailers' });
      stream.on('error', () => undefined);
      const prefix = Buffer.alloc(5);
      prefix.writeUInt32BE(60_000, 1);
      stream.write(Buffer.concat([prefix, Buffer.alloc(30_000, 1)]));
      const call = { status: null as number | null, at: 0 };
      const status = (h: http2.IncomingHttpHeaders) => {
        if (h['grpc-status'] === undefined) return;
        call.status = Number(h['grpc-status']);
        call.at = Date.now() - started;
      };
      stream.on('response', status);
      stream.on('trailers', status);
      return call;
    }),
  );
  await waitFor('the calls past the limit to be refused', () => calls.filter((c) => c.status !== null).length >= calls.length - MAX, 5000, 20);
  const refused = calls.filter((c) => c.status !== null);
  t.equal(refused.length, calls.length - MAX, `${refused.length} of ${calls.length} stalled calls refused`);
  t.ok(refused.every((c) => c.status === 8), 'with RESOURCE_EXHAUSTED');
  t.ok(refused.every((c) => c.at < 2000), `at once (the last after ${Math.max(...refused.map((c) => c.at))} ms)`);
  t.equal(await metric('oyster_grpc_open_calls'), MAX, 'oyster_grpc_open_calls');
  const err = await client.ping().then(
    () => null,
    (e: unknown) => e as { details: string },
  );
  t.equal(codeOf(err), 8, 'a new call at the limit is refused with RESOURCE_EXHAUSTED');
  t.match(err?.details, /grpc_max_calls 64.*retry later/, 'naming the limit');

  await waitFor('the stalled calls to end', () => calls.every((c) => c.status !== null), 8000, 20);
  const timedOut = calls.filter((c) => c.status === 4);
  t.equal(timedOut.length, MAX, 'the calls let in end with DEADLINE_EXCEEDED');
  const first = Math.min(...timedOut.map((c) => c.at));
  t.ok(first >= 2900 && first < 3000 + 1500, `after http_request_timeout (3 s): from ${first} ms`);
  await waitFor('no call open', async () => (await metric('oyster_grpc_open_calls')) === 0, 3000);
  t.equal(await metric('oyster_grpc_calls_refused_total', { reason: 'max_calls' }), calls.length - MAX + 1, 'counted: refused for the limit, the client\'s call too');
  t.equal(await metric('oyster_grpc_calls_refused_total', { reason: 'request_timeout' }), MAX, 'counted: ended for the timeout');
  const grew = peakRss(pid) - before;
  t.ok(grew < 48 * 1024 * 1024, `peak resident set grew ${(grew / 1024 / 1024).toFixed(0)} MiB`);

  await client.put(Buffer.alloc(8, 1), Buffer.from('after'), 7);
  t.equal((await client.get(Buffer.alloc(8, 1))).data.toString(), 'after', 'calls are served again');
});

t.test('an Exist whose keys would hold more than http_body_memory_limit is refused unread', async (t) => {
  const node = await startRestNode(t, { spec: { nodes: [{ name: 'solo' }], vdisks: 2 }, opts: { extra: { http_body_memory_limit: '16 MiB' } } });
  const client = new BobClient(node.files.addresses.solo, 60_000);
  t.teardown(() => client.close());
  const keys = (n: number) => Array.from({ length: n }, (_, i) => Buffer.from(new BigUint64Array([BigInt(i)]).buffer));
  await client.ping();
  const pid = node.proc.child.pid!;
  const before = peakRss(pid);
  // 100,000 keys: a message of 1.2 MB, which would hold about 38 MB while it runs.
  const err = await client.exist(keys(100_000)).then(
    () => null,
    (e: { code: number; details: string }) => e,
  );
  t.equal(err?.code, 8, 'RESOURCE_EXHAUSTED');
  t.match(err?.details, /an Exist of \d+ bytes would hold about \d+ bytes while it runs, more than http_body_memory_limit \(16777216\): ask for fewer keys at once/);
  const grew = peakRss(pid) - before;
  t.ok(grew < 16 * 1024 * 1024, `peak resident set grew ${(grew / 1024 / 1024).toFixed(0)} MiB`);
  const answer = await client.exist(keys(20_000));
  t.equal(answer.length, 20_000, 'an Exist of 20,000 keys is answered');
  t.ok(answer.every((e) => e === false), 'none of them is there');
});
