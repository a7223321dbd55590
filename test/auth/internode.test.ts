// Inter-node authentication in a 2-node cluster with
// authentication_type Basic: each node calls the other with "InterNode
// base64(own name)", accepted because the call comes from the address
// cluster.yaml gives that node, so writes replicate. The same header sent
// from another source address (127.0.0.2, over a raw HTTP/2 connection
// bound to it) is refused.
import http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import { keyBytes, pb, Status } from '../helpers/grpc-client';
import { TestCluster } from '../cluster/lib';
import { sample } from '../rest/lib/metrics';
import { call } from '../rest/lib/node';
import { basic, interNode, writeUsers } from './lib';
import { hello, RawLink } from '../helpers/link-client';
import { newOperation } from '../../src/grpc/operation-codec';
import { OperationKind } from '../../src/grpc/proto';

const KEY_SIZE = 8;

interface RawReply {
  code: number;
  message: string;
  /** The response message bytes (without the gRPC frame header). */
  data: Buffer;
}

/** One unary gRPC call over a plain HTTP/2 connection from `localAddress`. */
function rawGrpc(address: string, method: string, message: Buffer, headers: Record<string, string>, localAddress: string): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://${address}`, { localAddress } as http2.SecureClientSessionOptions);
    session.on('error', reject);
    const frame = Buffer.alloc(5);
    frame.writeUInt32BE(message.length, 1);
    const req = session.request({ ':method': 'POST', ':path': method, 'content-type': 'application/grpc', te: 'trailers', ...headers });
    const chunks: Buffer[] = [];
    let head: http2.IncomingHttpHeaders = {};
    req.on('response', (h) => (head = h));
    req.on('data', (c: Buffer) => chunks.push(c));
    let trailers: http2.IncomingHttpHeaders = {};
    req.on('trailers', (h) => (trailers = h));
    req.on('error', reject);
    req.on('end', () => {
      session.close();
      const status = trailers['grpc-status'] ?? head['grpc-status'];
      const msg = trailers['grpc-message'] ?? head['grpc-message'];
      const body = Buffer.concat(chunks);
      resolve({ code: Number(status), message: decodeURIComponent(String(msg ?? '')), data: body.subarray(5) });
    });
    req.end(Buffer.concat([frame, message]));
  });
}

t.test('Basic authentication in a 2-node cluster', async (t) => {
  // Both vdisks on both nodes, quorum 2: a write succeeds only if the peer accepted it.
  const c = await TestCluster.start(
    t,
    {
      nodes: ['n1', 'n2'],
      replicas: [
        ['n1', 'n2'],
        ['n2', 'n1'],
      ],
      keySize: KEY_SIZE,
      opts: { quorum: 2, extra: { authentication_type: 'Basic', users_config: 'users.yaml' } },
    },
    [],
  );
  writeUsers(c.files.dir);
  await Promise.all(['n1', 'n2'].map((n) => c.startNode(n)));
  await c.waitLinks();
  const admin = { authorization: basic('admin', 'admin-pw') };

  t.test('a write through one node reaches the replica on the other', async (t) => {
    for (const key of [10, 11]) {
      const r = await call(c.url('n1'), 'POST', `/data/${key}`, `value ${key}`, admin);
      t.equal(r.status, 201, `POST /data/${key} through n1 with quorum 2: ${r.text}`);
    }
    const client = c.grpc('n2');
    const md = new grpc.Metadata();
    md.set('authorization', admin.authorization);
    for (const key of [10, 11]) {
      const got = (await client.call<{ data: Buffer }>('Get', { key: { key: keyBytes(key, KEY_SIZE) }, options: { force_node: true, source: 1 } }, md)).data;
      t.equal(got.toString(), `value ${key}`, `key ${key} is in n2's own replica`);
    }
    const m1 = (await call(c.url('n1'), 'GET', '/metrics')).text;
    const m2 = (await call(c.url('n2'), 'GET', '/metrics')).text;
    t.ok(sample(m1, 'oyster_peer_requests_total', { peer: 'n2', operation: 'put', outcome: 'ok' }) >= 2, 'n1 counts its accepted puts to n2');
    t.ok(sample(m2, 'oyster_requests_total', { interface: 'grpc', operation: 'put', path: 'local', outcome: 'ok' }) >= 2, 'n2 served them locally');

    const del = await call(c.url('n2'), 'DELETE', '/data/10', undefined, { authorization: basic('data', 'data-pw') });
    t.equal(del.status, 200, 'a delete through n2');
    t.equal((await call(c.url('n1'), 'GET', '/data/10', undefined, admin)).status, 404, 'is seen through n1');
    t.equal((await call(c.url('n1'), 'GET', '/data/11', undefined, { authorization: basic('reader', 'reader-pw') })).text, 'value 11');
    const wrongPeers = c.procs.get('n1')!.output.concat(c.procs.get('n2')!.output).filter((l) => /Unauthorized|UNAUTHENTICATED/.test(l));
    t.same(wrongPeers, [], 'no node logged a refused inter-node call');
    t.ok(sample(m1, 'oyster_peer_links_opened_total', { peer: 'n2' }) >= 1, "n1's operations went to n2 over a link, with its InterNode credentials");
  });

  t.test('an operations link: InterNode credentials checked in its greeting as on gRPC', async (t) => {
    const address = c.address('n2');
    const wrong = await RawLink.open(address, hello(interNode('n1')), '127.0.0.2');
    t.equal(wrong.welcome?.code, Status.UNAUTHENTICATED, `InterNode n1 from 127.0.0.2 is refused: ${wrong.welcome?.details}`);
    await wrong.closed;
    const stranger = await RawLink.open(address, hello(interNode('n9')));
    t.equal(stranger.welcome?.code, Status.UNAUTHENTICATED, 'InterNode naming a node not in cluster.yaml is refused');
    await stranger.closed;
    const anonymous = await RawLink.open(address, hello(''));
    t.not(anonymous.welcome?.code ?? 0, 0, `no credentials (the user "default"): refused (${anonymous.welcome?.details})`);
    await anonymous.closed;
    const garbled = await RawLink.open(address, hello('InterNode !!!'));
    t.equal(garbled.welcome?.code, Status.INVALID_ARGUMENT, 'malformed credentials: INVALID_ARGUMENT');
    await garbled.closed;
    const right = await RawLink.open(address, hello(interNode('n1')), '127.0.0.1');
    t.teardown(() => right.close());
    t.equal(right.welcome?.code, 0, "InterNode n1 from n1's address is accepted");
    const key = keyBytes(13, KEY_SIZE);
    right.send({ ops: [Object.assign(newOperation(OperationKind.PUT, [key]), { id: 1, value: Buffer.from('linked'), timestamp: '5', tick: '0', node: 0 })] });
    const f = await right.next();
    t.same(f?.type === 'batch' && f.batch.results.map((r) => r.code ?? 0), [0], 'and may write');
    const m2 = (await call(c.url('n2'), 'GET', '/metrics')).text;
    t.ok(sample(m2, 'oyster_links_accepted_total', { outcome: 'refused' }) >= 4, 'the refusals are counted');
    t.equal((await call(c.url('n2'), 'GET', '/data/13', undefined, admin)).text, 'linked', 'the write is there');
  });

  t.test('InterNode credentials are checked against the node address', async (t) => {
    const address = c.address('n2');
    const request = pb.msg(pb.bytes(1, pb.bytes(1, keyBytes(11, KEY_SIZE))), pb.bytes(2, pb.msg(pb.uint(1, 1), pb.uint(2, 1))));
    const get = '/bob_storage.BobApi/Get';
    const fromRight = await rawGrpc(address, get, request, { authorization: interNode('n1') }, '127.0.0.1');
    t.equal(fromRight.code, Status.OK, `InterNode n1 from 127.0.0.1 (n1's address) is accepted: ${fromRight.message}`);
    t.match(fromRight.data.toString('latin1'), /value 11/, 'and gets the value');
    const fromWrong = await rawGrpc(address, get, request, { authorization: interNode('n1') }, '127.0.0.2');
    t.equal(fromWrong.code, Status.UNAUTHENTICATED, `InterNode n1 from 127.0.0.2 is refused: ${fromWrong.message}`);
    const put = '/bob_storage.BobApi/Put';
    const putRequest = pb.msg(pb.bytes(1, pb.bytes(1, keyBytes(12, KEY_SIZE))), pb.bytes(2, pb.msg(pb.bytes(1, 'forged'), pb.bytes(2, pb.uint(1, 1)))), pb.bytes(3, pb.uint(2, 1)));
    const forged = await rawGrpc(address, put, putRequest, { authorization: interNode('n1') }, '127.0.0.2');
    t.equal(forged.code, Status.UNAUTHENTICATED, 'a forged node write from 127.0.0.2 is refused');
    const stranger = await rawGrpc(address, get, request, { authorization: interNode('n9') }, '127.0.0.1');
    t.equal(stranger.code, Status.UNAUTHENTICATED, 'InterNode naming a node not in cluster.yaml is refused');
    const ping = await rawGrpc(address, '/bob_storage.BobApi/Ping', Buffer.alloc(0), { authorization: interNode('n1') }, '127.0.0.2');
    t.equal(ping.code, Status.OK, 'Ping needs no credentials, from anywhere');
    t.equal((await call(c.url('n2'), 'GET', '/data/12', undefined, admin)).status, 404, 'the forged write left nothing');
  });
});
