// gRPC messages within http_body_memory_limit, as REST bodies and answers
// are. Requests: bob clients putting large values at once are read one
// budget's worth at a time, and the node's resident set stays within the
// bound; a message that stalls holds its room, others then wait and are
// refused with RESOURCE_EXHAUSTED, small ones go on, and the stalled call
// ends after http_request_timeout, giving its room back. Answers: large
// values asked for at once, by clients and by a peer coordinating reads,
// are read one budget's worth at a time; an answer its client does not take
// holds its room until http_request_timeout; a value larger than the budget
// is refused. Real oysterd processes, bob-shaped clients
// (test/helpers/grpc-client.ts), a raw HTTP/2 client for the message that
// stalls and for the answer nobody reads.
import http2 from 'node:http2';
import t, { Test } from 'tap';
import { BobClient, METHOD, Status, codeOf, keyBytes, pb } from '../helpers/grpc-client';
import { OysterProcess, startNode, writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import { Rng } from '../robustness/lib';
import { peakRss } from '../helpers/memory';

const MiB = 1024 * 1024;
const VALUE = 12 * MiB;
const TS = 1_700_000_000;

async function cluster(t: Test, names: string[], requestTimeout: string): Promise<Array<{ proc: OysterProcess; address: string }>> {
  const files = await writeCluster(tempDir(t), { nodes: names.map((name) => ({ name })), vdisks: 2, keySize: 8 }, {
    httpMaxBodySize: '64 MiB',
    extra: { http_body_memory_limit: '16 MiB', http_request_timeout: requestTimeout, http_headers_timeout: '2s' },
  });
  return Promise.all(
    names.map(async (name) => {
      const proc = await startNode(files, name);
      t.teardown(async () => {
        if (proc.child.exitCode === null && proc.child.signalCode === null) await proc.stop();
      });
      return { proc, address: files.addresses[name] };
    }),
  );
}

async function node(t: Test, requestTimeout: string): Promise<{ proc: OysterProcess; address: string }> {
  return (await cluster(t, ['n1'], requestTimeout))[0];
}

/** A Put whose message announces `size` bytes and sends `sent` of them, then nothing. Resolves with the status the node ends it with. */
function stalledPut(address: string, size: number, sent: number): { status: Promise<{ code: number; details: string }>; close: () => void } {
  const session = http2.connect(`http://${address}`);
  session.on('error', () => undefined);
  const stream = session.request({ ':method': 'POST', ':path': '/bob_storage.BobApi/Put', 'content-type': 'application/grpc', te: 'trailers' });
  stream.on('error', () => undefined);
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(size, 1);
  stream.write(prefix);
  stream.write(Buffer.alloc(sent, 1));
  const status = new Promise<{ code: number; details: string }>((resolve) => {
    const take = (h: http2.IncomingHttpHeaders) => {
      if (h['grpc-status'] !== undefined) resolve({ code: Number(h['grpc-status']), details: decodeURIComponent(String(h['grpc-message'] ?? '')) });
    };
    stream.on('response', take);
    stream.on('trailers', take);
  });
  stream.resume();
  return { status, close: () => session.destroy() };
}

t.test('large gRPC Puts at once are read within http_body_memory_limit', async (t) => {
  const { proc, address } = await node(t, '60s');
  const clients = Array.from({ length: 8 }, () => new BobClient(address, 60_000));
  t.teardown(() => clients.forEach((c) => c.close()));
  const values = clients.map((_, i) => new Rng(i + 1).bytes(VALUE));
  await clients[0].put(keyBytes(1, 8), Buffer.from('warm'), TS);
  const before = peakRss(proc.child.pid!);
  await Promise.all(clients.map((c, i) => c.put(keyBytes(100 + i, 8), values[i], TS)));
  const grew = peakRss(proc.child.pid!) - before;
  // One 12 MiB message at a time fits in 16 MiB: held as grpc-js joins and
  // decodes it (about three copies), plus what the code run for the first
  // time takes, and what the collector has not freed yet (57–102 MiB,
  // the most with the other test files running). Eight read at once took
  // over 200 MiB.
  t.ok(grew < 128 * MiB, `peak resident set grew ${(grew / MiB).toFixed(0)} MiB for 8 Puts of 12 MiB`);
  for (const [i, v] of values.entries()) t.ok((await clients[0].get(keyBytes(100 + i, 8))).data.equals(v), `value ${i} byte-exact`);
});

t.test('a gRPC message that stalls holds its room until http_request_timeout', async (t) => {
  const { address } = await node(t, '7s');
  const client = new BobClient(address, 30_000);
  t.teardown(() => client.close());
  const stalled = stalledPut(address, VALUE, MiB);
  t.teardown(stalled.close);
  const started = Date.now();
  // Its 12 MiB are taken: another 12 MiB waits for room, and is refused after the budget's wait.
  const refused = await client.put(keyBytes(200, 8), new Rng(7).bytes(VALUE), TS).then(
    () => null,
    (err: unknown) => err,
  );
  t.equal(codeOf(refused), Status.RESOURCE_EXHAUSTED, 'a large Put that finds no room: RESOURCE_EXHAUSTED');
  t.match(String((refused as { details?: string }).details), /http_body_memory_limit/);
  t.ok(Date.now() - started >= 4500, 'after waiting for room');
  await client.put(keyBytes(201, 8), Buffer.from('small'), TS);
  t.equal((await client.get(keyBytes(201, 8))).data.toString(), 'small', 'small Puts go on meanwhile');
  const ended = await stalled.status;
  t.equal(ended.code, Status.DEADLINE_EXCEEDED, `the stalled call ends (${ended.details})`);
  t.match(ended.details, /http_request_timeout/);
  t.ok(Date.now() - started < 15_000, 'after http_request_timeout');
  const value = new Rng(8).bytes(VALUE);
  await client.put(keyBytes(202, 8), value, TS);
  t.ok((await client.get(keyBytes(202, 8))).data.equals(value), 'its room is back: a large Put goes through');
  t.equal(codeOf(await client.get(keyBytes(200, 8)).catch((e: unknown) => e)), Status.NOT_FOUND, 'the refused Put stored nothing');
});

/** A Get whose answer is never read: the client grants no flow-control window beyond HTTP/2's first. */
function unreadGet(address: string, key: Buffer): { ended: Promise<string>; close: () => void } {
  const session = http2.connect(`http://${address}`);
  session.on('error', () => undefined);
  const stream = session.request({ ':method': 'POST', ':path': METHOD.Get, 'content-type': 'application/grpc', te: 'trailers' });
  const message = pb.msg(pb.bytes(1, pb.bytes(1, key)));
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  stream.end(Buffer.concat([prefix, message]));
  stream.pause();
  const ended = new Promise<string>((resolve) => {
    stream.on('error', (err: Error) => resolve(err.message));
    stream.on('close', () => resolve(`closed with code ${stream.rstCode}`));
  });
  return { ended, close: () => session.destroy() };
}

async function putValues(client: BobClient, first: number, n: number, size: number): Promise<Buffer[]> {
  const values: Buffer[] = [];
  for (let i = 0; i < n; i++) {
    values.push(new Rng(first + i).bytes(size));
    // force_node: the write is refused unless this node holds the key's vdisk.
    await client.put(keyBytes(first + i, 8), values[i], TS, { force_node: true });
  }
  return values;
}

t.test('large gRPC Gets at once are answered within http_body_memory_limit', async (t) => {
  const { proc, address } = await node(t, '60s');
  const clients = Array.from({ length: 8 }, () => new BobClient(address, 60_000));
  t.teardown(() => clients.forEach((c) => c.close()));
  const values = await putValues(clients[0], 300, 8, VALUE);
  const before = peakRss(proc.child.pid!);
  // Half coordinated, half served from the node's own storage (force_node, as a bob peer asks).
  const got = await Promise.all(clients.map((c, i) => c.get(keyBytes(300 + i, 8), i % 2 === 0 ? undefined : { force_node: true })));
  const grew = peakRss(proc.child.pid!) - before;
  // One 12 MiB value at a time: read, then framed by grpc-js (grew 48 MiB). Eight at once took about 200 MiB.
  t.ok(grew < 96 * MiB, `peak resident set grew ${(grew / MiB).toFixed(0)} MiB for 8 Gets of 12 MiB`);
  for (const [i, v] of values.entries()) t.ok(got[i].data.equals(v), `value ${i} byte-exact`);
});

t.test('a peer coordinating large reads is answered within http_body_memory_limit', async (t) => {
  const [n1, n2] = await cluster(t, ['n1', 'n2'], '60s');
  const writer = new BobClient(n1.address, 60_000);
  const readers = Array.from({ length: 8 }, () => new BobClient(n2.address, 60_000));
  t.teardown(() => [writer, ...readers].forEach((c) => c.close()));
  // Even keys are in vdisk 0, which n1 holds: n2 asks n1 for them.
  const keys = Array.from({ length: 8 }, (_, i) => 400 + 2 * i);
  const values: Buffer[] = [];
  for (const k of keys) {
    values.push(new Rng(k).bytes(VALUE));
    await writer.put(keyBytes(k, 8), values[values.length - 1], TS, { force_node: true });
  }
  const before = peakRss(n1.proc.child.pid!);
  const got = await Promise.all(readers.map((c, i) => c.get(keyBytes(keys[i], 8))));
  const grew = peakRss(n1.proc.child.pid!) - before;
  // Eight at once took 130 MiB more than the writes before them.
  t.ok(grew < 64 * MiB, `n1's peak resident set grew ${(grew / MiB).toFixed(0)} MiB answering 8 reads of 12 MiB at once`);
  for (const [i, v] of values.entries()) t.ok(got[i].data.equals(v), `value ${i} byte-exact through n2`);
});

t.test('a gRPC answer its client does not take holds its room until http_request_timeout', async (t) => {
  const { address } = await node(t, '7s');
  const client = new BobClient(address, 30_000);
  t.teardown(() => client.close());
  const values = await putValues(client, 500, 2, VALUE);
  await client.put(keyBytes(502, 8), Buffer.from('small'), TS);
  const started = Date.now();
  const unread = unreadGet(address, keyBytes(500, 8));
  t.teardown(unread.close);
  await new Promise((resolve) => setTimeout(resolve, 300));
  const refused = await client.get(keyBytes(501, 8)).then(
    () => null,
    (err: unknown) => err,
  );
  t.equal(codeOf(refused), Status.RESOURCE_EXHAUSTED, 'a large Get that finds no room: RESOURCE_EXHAUSTED');
  t.match(String((refused as { details?: string }).details), /http_body_memory_limit/);
  t.ok(Date.now() - started >= 4500, 'after waiting for room');
  t.equal((await client.get(keyBytes(502, 8))).data.toString(), 'small', 'small Gets go on meanwhile');
  const ended = await unread.ended;
  t.ok(Date.now() - started < 15_000, `the unread answer's stream is reset after http_request_timeout (${ended})`);
  t.ok((await client.get(keyBytes(501, 8))).data.equals(values[1]), 'its room is back: a large Get goes through');
});

t.test('a value larger than http_body_memory_limit is refused over gRPC, unread', async (t) => {
  const { proc, address } = await node(t, '60s');
  const client = new BobClient(address, 30_000);
  t.teardown(() => client.close());
  // Written over REST in parts (its vdisk is on this node), and read back over REST in parts.
  const value = new Rng(9).bytes(20 * MiB);
  const post = await fetch(`${proc.url}/data/600`, { method: 'POST', body: value });
  t.equal(post.status, 201);
  const refused = await client.get(keyBytes(600, 8)).then(
    () => null,
    (err: unknown) => err,
  );
  t.equal(codeOf(refused), Status.RESOURCE_EXHAUSTED, 'a Get of 20 MiB with 16 MiB for values in flight: RESOURCE_EXHAUSTED');
  t.match(String((refused as { details?: string }).details), /larger than http_body_memory_limit.*REST/);
  t.ok(Buffer.from(await (await fetch(`${proc.url}/data/600`)).arrayBuffer()).equals(value), 'REST reads it');
  t.equal((await client.exist([keyBytes(600, 8)]))[0], true, 'it is there for gRPC too');
});
