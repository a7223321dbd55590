// The gRPC port's limits: a connection has at most 256 calls open at once
// (HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS), so a client that makes
// thousands of calls at once has them queued on its side instead of held
// by the node; connections past grpc_max_connections are closed while the
// others are served; an Exist whose keys would hold more than the memory
// for values in flight is refused unread. A real oysterd.
import http2 from 'node:http2';
import net from 'node:net';
import t from 'tap';
import { BobClient } from '../helpers/grpc-client';
import { startRestNode } from '../rest/lib/node';
import { peakRss } from '../helpers/memory';

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
