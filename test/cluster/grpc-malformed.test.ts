// Malformed gRPC requests never take a node down: wrong key lengths, missing key/data/meta,
// unknown GetSource values, timestamps beyond 2^53, huge repeated fields,
// undecodable protobuf, garbage on raw HTTP/2 streams and raw sockets,
// unknown methods. Message-level faults answer INVALID_ARGUMENT, unknown
// methods UNIMPLEMENTED; afterwards every node still serves with the PID it
// started with. 3 nodes, 3 vdisks × 2 replicas, quorum 2, key_size 8.
import http2 from 'node:http2';
import net from 'node:net';
import t from 'tap';
import { BobClient, GetSource, METHOD, Status, failure, keyBytes, pb } from '../helpers/grpc-client';
import { TestCluster, ring } from './lib';

const NODES = ['n0', 'n1', 'n2'];
const TS = 1_700_000_000;
const k8 = (n: number | bigint) => keyBytes(n, 8);

interface H2Result {
  httpStatus?: number;
  grpcStatus?: number;
  grpcMessage?: string;
  error?: string;
}

/** One HTTP/2 request with a raw body on a fresh session; resolves with the gRPC status, whatever happens. */
function h2(address: string, path: string, body: Buffer, headers: http2.OutgoingHttpHeaders = {}): Promise<H2Result> {
  return new Promise((resolve) => {
    const out: H2Result = {};
    const session = http2.connect(`http://${address}`);
    const done = () => {
      clearTimeout(timer);
      session.close();
      resolve(out);
    };
    const timer = setTimeout(() => {
      out.error ??= 'timeout';
      session.destroy();
      resolve(out);
    }, 5000);
    session.on('error', (e) => (out.error = e.message));
    const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...headers });
    const take = (h: http2.IncomingHttpHeaders) => {
      if (h[':status'] !== undefined) out.httpStatus = Number(h[':status']);
      if (h['grpc-status'] !== undefined) out.grpcStatus = Number(h['grpc-status']);
      if (h['grpc-message'] !== undefined) out.grpcMessage = decodeURIComponent(String(h['grpc-message']));
    };
    req.on('response', take);
    req.on('trailers', take);
    req.on('error', (e) => (out.error = e.message));
    req.on('data', () => undefined);
    req.on('close', done);
    req.end(body);
  });
}

/** A gRPC length-prefixed message. */
function frame(msg: Buffer, compressed = 0, length = msg.length): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(compressed, 0);
  head.writeUInt32BE(length, 1);
  return Buffer.concat([head, msg]);
}

/** Writes bytes on a fresh TCP connection and waits for the server to close it (or 1 s). */
function rawSocket(address: string, bytes: Buffer[]): Promise<{ received: number; closedByServer: boolean }> {
  const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))];
  return new Promise((resolve) => {
    const s = net.connect(port, host);
    let received = 0;
    let closedByServer = false;
    const timer = setTimeout(() => s.destroy(), 1000);
    s.on('data', (d: Buffer) => (received += d.length));
    s.on('end', () => (closedByServer = true));
    s.on('error', () => undefined);
    s.on('close', () => {
      clearTimeout(timer);
      resolve({ received, closedByServer });
    });
    s.on('connect', () => {
      for (const b of bytes) s.write(b);
    });
  });
}

const key = (k: Buffer) => pb.bytes(1, k); // BlobKey { bytes key = 1 }
const meta = (ts: bigint | number) => pb.uint(1, ts); // BlobMeta { uint64 timestamp = 1 }
const getOptions = (force: boolean, source: bigint | number) => pb.msg(force ? pb.uint(1, 1) : Buffer.alloc(0), pb.uint(2, source));
const putRequest = (k: Buffer, data: Buffer, ts: bigint | number, options: Buffer = Buffer.alloc(0)) =>
  pb.msg(pb.bytes(1, key(k)), pb.bytes(2, pb.msg(pb.bytes(1, data), pb.bytes(2, meta(ts)))), options.length ? pb.bytes(3, options) : Buffer.alloc(0));
const deleteRequest = (k: Buffer, ts: bigint | number, options: Buffer = Buffer.alloc(0)) =>
  pb.msg(pb.bytes(1, key(k)), pb.bytes(2, meta(ts)), options.length ? pb.bytes(3, options) : Buffer.alloc(0));

t.test('malformed gRPC requests', async (t) => {
  const c = await TestCluster.start(t, { nodes: NODES, replicas: ring(NODES, 3, 2), keySize: 8, opts: { quorum: 2 } });
  await c.waitLinks();
  const pids = new Map(NODES.map((n) => [n, c.proc(n).child.pid]));
  const stored = k8(3 * 1000); // vdisk 0: n0, n1
  await c.grpc('n2').put(stored, Buffer.from('kept'), TS);

  const expectCode = async (what: string, p: Promise<unknown>, code: number) => {
    const err = await failure(p);
    t.equal(err.code, code, `${what}: ${Status[code]} (${err.details})`);
    return err;
  };

  for (const n of NODES) {
    await t.test(`field-level faults through ${n}`, async (t) => {
      const g = c.grpc(n);
      const INVALID = Status.INVALID_ARGUMENT;
      const long = Buffer.concat([stored, Buffer.from([0, 0, 7])]);
      for (const force of [false, true]) {
        const f = force ? 'force_node ' : '';
        await expectCode(`${f}Put with an 11-byte key`, g.put(long, Buffer.from('x'), TS, { force_node: force }), INVALID);
        await expectCode(`${f}Get with an 11-byte key`, g.get(long, { force_node: force }), INVALID);
        await expectCode(`${f}Exist with an 11-byte key among good ones`, g.exist([stored, long, stored], { force_node: force }), INVALID);
        await expectCode(`${f}Delete with an 11-byte key`, g.delete(long, TS, { force_node: force }), INVALID);
        await expectCode(`${f}Put with a 1 MiB key`, g.put(Buffer.alloc(1 << 20, 1), Buffer.from('x'), TS, { force_node: force }), INVALID);
        const options = { force_node: force };
        const e1 = await expectCode(`${f}Put without anything`, g.call('Put', { options }), INVALID);
        t.equal(e1.details, 'Key, data and timestamp in data.meta is mandatory', "bob's message");
        await expectCode(`${f}Put without data`, g.call('Put', { key: { key: stored }, options }), INVALID);
        await expectCode(`${f}Put without data.meta`, g.call('Put', { key: { key: stored }, data: { data: Buffer.from('x') }, options }), INVALID);
        await expectCode(`${f}Put without key`, g.call('Put', { data: { data: Buffer.from('x'), meta: { timestamp: '1' } }, options }), INVALID);
        t.equal((await failure(g.call('Get', { options }))).details, 'Key is mandatory', `${f}Get without key: "Key is mandatory"`);
        t.equal((await failure(g.call('Delete', { key: { key: stored }, options }))).details, 'Key and meta are mandatory', `${f}Delete without meta`);
        await expectCode(`${f}Delete without key`, g.call('Delete', { meta: { timestamp: '1' }, options }), INVALID);
        for (const ts of [2n ** 53n, 2n ** 63n, 2n ** 64n - 1n]) {
          await expectCode(`${f}Put with timestamp ${ts}`, g.put(stored, Buffer.from('x'), ts, { force_node: force }), INVALID);
          await expectCode(`${f}Delete with timestamp ${ts}`, g.delete(stored, ts, { force_node: force }), INVALID);
          const opts = force ? pb.uint(2, 1) : Buffer.alloc(0); // PutOptions / DeleteOptions force_node = 2
          await expectCode(`${f}raw Put with timestamp ${ts}`, g.callRaw(METHOD.Put, putRequest(stored, Buffer.from('x'), ts, opts)), INVALID);
          await expectCode(`${f}raw Delete with timestamp ${ts}`, g.callRaw(METHOD.Delete, deleteRequest(stored, ts, opts)), INVALID);
        }
        for (const source of [3, 7, 2 ** 31 - 1, -1]) {
          await expectCode(`${f}Get with GetSource ${source}`, g.callRaw(METHOD.Get, pb.msg(pb.bytes(1, key(stored)), pb.bytes(2, getOptions(force, source)))), INVALID);
          await expectCode(`${f}Exist with GetSource ${source}`, g.callRaw(METHOD.Exist, pb.msg(pb.bytes(1, key(stored)), pb.bytes(2, getOptions(force, source)))), INVALID);
        }
      }
      t.equal((await g.get(stored)).data.toString(), 'kept', 'the stored value is untouched');
      await expectCode('Exist with an empty BlobKey', g.exist([Buffer.alloc(0)]), INVALID);
      const unknownField = pb.msg(pb.bytes(1, key(stored)), pb.bytes(99, 'ignored'), pb.uint(100, 5));
      const blob = await g.callRaw(METHOD.Get, unknownField);
      t.ok(blob.includes(Buffer.from('kept')), 'unknown fields are ignored (protobuf rules)');
    });
  }

  await t.test('undecodable protobuf: INVALID_ARGUMENT', async (t) => {
    const g = c.grpc('n0');
    const cases: Array<[string, string, Buffer]> = [
      ['varint longer than 10 bytes', METHOD.Put, Buffer.concat([Buffer.from([0x08]), Buffer.alloc(11, 0xff), Buffer.from([0x01])])],
      ['length beyond the message', METHOD.Get, Buffer.from([0x0a, 0x7f, 0x01, 0x02])],
      ['truncated embedded key', METHOD.Delete, pb.msg(pb.bytes(1, Buffer.from([0x0a, 0x20, 1, 2, 3])), pb.bytes(2, meta(1)))],
      ['invalid wire type 7', METHOD.Exist, Buffer.from([0x0f, 0x01])],
      ['random bytes', METHOD.Put, Buffer.from('a7f3e1c24b5d6e8f90112233445566778899aabbccddeeff00', 'hex')],
    ];
    for (const [what, method, bytes] of cases) {
      const err = await failure(g.callRaw(method, bytes));
      t.equal(err.code, Status.INVALID_ARGUMENT, `${what} to ${method}: INVALID_ARGUMENT (${err.details})`);
    }
  });

  await t.test('huge repeated fields', async (t) => {
    const present = Array.from({ length: 30 }, (_, i) => k8(5000 + i));
    for (const [i, k] of present.entries()) await c.grpc(NODES[i % 3]).put(k, Buffer.from('p'), TS);
    const absent = Array.from({ length: 60_000 }, (_, i) => k8(1_000_000 + i));
    const keys = [...present, ...absent, ...present];
    for (const n of NODES) {
      const started = Date.now();
      const res = await c.grpc(n).exist(keys);
      t.equal(res.length, keys.length, `coordinated Exist of ${keys.length} keys through ${n}: one bool per key (${Date.now() - started} ms)`);
      t.equal(res.filter(Boolean).length, 2 * present.length, 'exactly the stored keys exist');
      t.ok(res.slice(0, present.length).every(Boolean) && res.slice(-present.length).every(Boolean), 'in request order');
    }
    const v0 = keys.filter((k) => Number(k.readBigUInt64LE() % 3n) === 0);
    const forced = await c.grpc('n0').exist(v0, { force_node: true, source: GetSource.NORMAL });
    t.equal(forced.filter(Boolean).length, 2 * present.filter((k) => Number(k.readBigUInt64LE() % 3n) === 0).length, `force_node Exist of ${v0.length} keys`);

    await expectCode(
      'remote_nodes with 100,000 unknown names',
      c.grpc('n2').put(stored, Buffer.from('x'), TS, { force_node: true, remote_nodes: Array.from({ length: 100_000 }, (_, i) => `ghost${i}`) }),
      Status.INVALID_ARGUMENT,
    );
    const started = Date.now();
    await c.grpc('n2').put(k8(3 * 1001), Buffer.from('once'), TS, { force_node: true, remote_nodes: Array(50_000).fill('n0') });
    t.ok(Date.now() - started < 5000, `remote_nodes naming one node 50,000 times is one alien copy (${Date.now() - started} ms)`);
    await c.grpc('n0').delete(k8(3 * 1002), TS, { force_node: true, is_alien: true, force_alien_nodes: Array.from({ length: 100_000 }, (_, i) => `n${i % 5}`) });
    t.pass('force_alien_nodes with 100,000 entries');
  });

  await t.test('raw HTTP/2 streams', async (t) => {
    const addr = c.address('n1');
    const goodGet = pb.msg(pb.bytes(1, key(stored)));
    const cases: Array<[string, string, Buffer, http2.OutgoingHttpHeaders]> = [
      ['undecodable message', METHOD.Put, frame(Buffer.from([0xff, 0xff, 0xff])), {}],
      ['empty Put message', METHOD.Put, frame(Buffer.alloc(0)), {}],
      ['length prefix beyond the stream', METHOD.Get, frame(goodGet, 0, 1 << 30), {}],
      ['no message at all', METHOD.Get, Buffer.alloc(0), {}],
      ['half a length prefix', METHOD.Get, Buffer.from([0, 0, 0]), {}],
      ['two messages for a unary method', METHOD.Get, Buffer.concat([frame(goodGet), frame(goodGet)]), {}],
      ['compressed flag with gzip garbage', METHOD.Get, frame(Buffer.from('not gzip'), 1), { 'grpc-encoding': 'gzip' }],
      ['unknown grpc-encoding', METHOD.Get, frame(goodGet, 1), { 'grpc-encoding': 'zstd-ish' }],
      ['garbage grpc-timeout', METHOD.Get, frame(goodGet), { 'grpc-timeout': 'soon' }],
      ['content-type text/plain', METHOD.Get, frame(goodGet), { 'content-type': 'text/plain' }],
      ['GET instead of POST', METHOD.Get, Buffer.alloc(0), { ':method': 'GET' }],
      ['unknown method', '/bob_storage.BobApi/Erase', frame(goodGet), {}],
      ['path without a service', '/', frame(goodGet), {}],
    ];
    for (const [what, p, body, headers] of cases) {
      const r = await h2(addr, p, body, headers);
      t.ok(r.grpcStatus !== 0, `${what}: refused (HTTP ${r.httpStatus ?? '-'}, grpc-status ${r.grpcStatus ?? '-'} ${r.grpcMessage ?? ''}${r.error ? `, ${r.error}` : ''})`);
      if (what === 'undecodable message' || what === 'empty Put message') t.equal(r.grpcStatus, Status.INVALID_ARGUMENT, `${what}: INVALID_ARGUMENT`);
      if (what === 'unknown method') t.equal(r.grpcStatus, Status.UNIMPLEMENTED, `${what}: UNIMPLEMENTED`);
    }
    const ok = await h2(addr, METHOD.Get, frame(goodGet));
    t.equal(ok.grpcStatus, 0, 'a well-formed raw request still works');
  });

  await t.test('raw TCP garbage on the gRPC port', async (t) => {
    const preface = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
    const settings = Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]);
    const random = Buffer.alloc(64 * 1024);
    for (let i = 0; i < random.length; i++) random[i] = (i * 2654435761) >>> 24;
    const cases: Array<[string, Buffer[]]> = [
      ['random bytes', [random]],
      ['an HTTP/1.1 request', [Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n')]],
      ['preface then garbage frames', [preface, settings, random.subarray(0, 4096)]],
      ['HEADERS with a broken HPACK block', [preface, settings, Buffer.from([0, 0, 4, 1, 5, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff])]],
      ['a frame claiming 16 MiB', [preface, settings, Buffer.from([0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 1])]],
    ];
    for (const n of NODES) {
      for (const [what, bytes] of cases) {
        const r = await rawSocket(c.address(n), bytes);
        t.ok(r.closedByServer || r.received >= 0, `${n}: ${what}: connection ended (${r.received} bytes back, closed by server: ${r.closedByServer})`);
      }
    }
  });

  await t.test('unknown methods: UNIMPLEMENTED', async () => {
    for (const n of NODES) {
      await expectCode(`${n}: /bob_storage.BobApi/Erase`, c.grpc(n).callRaw('/bob_storage.BobApi/Erase', Buffer.alloc(0)), Status.UNIMPLEMENTED);
      await expectCode(`${n}: /other.Service/Put`, c.grpc(n).callRaw('/other.Service/Put', Buffer.alloc(0)), Status.UNIMPLEMENTED);
    }
  });

  await t.test('every node still serves, with the same PID', async (t) => {
    for (const n of NODES) {
      t.ok(c.isRunning(n), `${n} is running`);
      t.equal(c.proc(n).child.pid, pids.get(n), `${n} has its PID ${pids.get(n)}`);
      const fresh = new BobClient(c.address(n));
      await fresh.ping();
      const k = k8(3 * 2000 + NODES.indexOf(n));
      await fresh.put(k, Buffer.from(`after ${n}`), TS);
      t.equal((await fresh.get(k)).data.toString(), `after ${n}`, `${n}: Put and Get over a new channel`);
      fresh.close();
      t.equal((await c.rest(n, 'GET', '/status')).status, 200, `${n}: REST GET /status`);
      t.equal((await c.get(n, 3 * 2000 + NODES.indexOf(n)))?.toString(), `after ${n}`, `${n}: REST GET /data`);
    }
  });
});
