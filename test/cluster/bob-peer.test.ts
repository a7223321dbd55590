// An Oyster cluster as a bob node sees it when it is one of the cluster's
// nodes: the test speaks BobApi to two real oysterd processes exactly as a
// bob peer does, with authentication None and Basic.
//
// What a bob node sends its peers (qoollo/bob at 31cc454; facts, not code):
//  * every call: metadata `authorization: InterNode base64(own name)` and
//    the operation_timeout as deadline (bob-common/src/bob_client.rs,
//    set_credentials, set_timeout);
//  * Ping (its link manager: every 100 ms for a minute, then every
//    check_interval; bob/src/link_manager.rs): also `node_name: <own name>`
//    (bob_client.rs, set_node_name); a node pinged that way checks the sender
//    at once if it had no connection to it (bob/src/server.rs ping ->
//    link_manager.rs update_node_connection);
//  * to each replica of a coordinated put: Put with PutOptions
//    {remote_nodes: [], force_node: true, overwrite: false}
//    (bob/src/cluster/quorum.rs put_remote_nodes; bob-common/src/
//    operation_options.rs BobPutOptions::new_local); for a replica that
//    failed, to a support node: the same with remote_nodes: [the failed
//    node] (quorum.rs put_aliens, BobPutOptions::new_alien);
//  * coordinated get: Get {force_node: true, source: NORMAL} to the key's
//    other replicas, then {force_node: true, source: ALIEN} to every other
//    node; the first OK answer wins, any error counts as "not there", and
//    the answer's meta must be present (bob_client.rs get: `ans.meta.expect`)
//    (bob/src/cluster/operations.rs lookup_remote_nodes,
//    lookup_remote_aliens; bob-grpc/src/lib.rs GetOptions::new_local/new_alien);
//  * coordinated exist: Exist {force_node: true, source: NORMAL} to replica
//    nodes with the keys of theirs, then ALIEN to every other node with the
//    keys still missing; the answer is zipped with the keys sent
//    (operations.rs exist_on_remote_nodes/aliens, quorum.rs exist);
//    cluster_policy simple: {force_node: true, source: ALL} to the key's
//    nodes (simple.rs exist, link_manager.rs exist_on_nodes);
//  * coordinated delete: Delete {force_node: true, is_alien: false,
//    force_alien_nodes: []} to the other replicas; for a replica that failed,
//    to a support node {force_node: true, is_alien: true, force_alien_nodes:
//    [that node]}; and to every other node {force_node: true, is_alien: true,
//    force_alien_nodes: []} (quorum.rs delete_at_remote_nodes, delete_aliens);
//  * it reads a failure by the first word of the status message:
//    "KeyNotFound <key as upper-case hex, byte by byte>" is the only answer
//    taken as "absent" (bob-common/src/error.rs From<Status>, data.rs
//    BobKey Display/FromStr).
//
// The client: built here with @grpc/grpc-js + @grpc/proto-loader from bob's
// own proto, copied verbatim from bob (test/fixtures/bob-proto), with
// proto-loader's documented options (keepCase, longs: String, enums: String,
// defaults, oneofs) and no channel options — what a third party builds. Not
// test/helpers/grpc-client.ts: that derives its proto from Oyster's
// src/grpc/bob.proto (so it would follow a mistake there), uses Number enums
// and unlimited message sizes, and sends no metadata on its typed calls.
//
// The cluster: n1 and n2 are oysterd; `bob` is this test (its client calls
// as node `bob`; a stand-in bob node answering at bob's address records what
// the Oyster nodes send it); n3 is in cluster.yaml but never runs (a replica
// that is down, whose copies are aliens). Key size 8 (bob's u64 keys), quorum 1:
//   v0 [n1, n2]   v1 [n2, n1]   v2 [n2]   v3 [n3, n1]
// Anti-entropy is off, so that what one force_node request stored stays where
// it was put; n3 never answers, so alien copies held for it stay aliens.
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import t, { Test } from 'tap';
import { TestCluster, keyOn, waitFor } from './lib';
import { writeUsers } from '../auth/lib';

const BOB_PROTO = path.resolve(__dirname, '..', '..', '..', 'test', 'fixtures', 'bob-proto', 'bob.proto');
const definition = protoLoader.loadSync(BOB_PROTO, { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true });
const BobApi = (grpc.loadPackageDefinition(definition) as unknown as { bob_storage: { BobApi: grpc.ServiceClientConstructor } }).bob_storage
  .BobApi;

const VDISKS = 4;
const REPLICAS = [['n1', 'n2'], ['n2', 'n1'], ['n2'], ['n3', 'n1']];
const OYSTER = ['n1', 'n2'];
const KEY_SIZE = 8;
const TS = 1_700_000_000; // bob's timestamps: seconds since the epoch
const OPERATION_TIMEOUT_MS = 5000;

const Code = grpc.status;
/** A key of the vdisk as bob sends it: a u64, little-endian (bob-common/src/data.rs From<u64>). */
function k(vdisk: number, i: number): Buffer {
  const key = Buffer.alloc(KEY_SIZE);
  key.writeBigUInt64LE(BigInt(keyOn(vdisk, VDISKS, i)));
  return key;
}
const hex = (key: Buffer) => key.toString('hex').toUpperCase();

// ------------------------------------------------------ bob's messages

type Source = 'ALL' | 'NORMAL' | 'ALIEN';
interface PutOptions {
  remote_nodes: string[];
  force_node: boolean;
  overwrite: boolean;
}
interface GetOptions {
  force_node: boolean;
  source: Source;
}
interface DeleteOptions {
  force_alien_nodes: string[];
  force_node: boolean;
  is_alien: boolean;
}
interface Blob {
  data: Buffer;
  meta: { timestamp: string } | null;
}

// The options a bob node builds (bob-grpc/src/lib.rs, bob-common/src/operation_options.rs).
const putLocal: PutOptions = { remote_nodes: [], force_node: true, overwrite: false };
const putAlien = (owners: string[]): PutOptions => ({ remote_nodes: owners, force_node: true, overwrite: false });
const getLocal: GetOptions = { force_node: true, source: 'NORMAL' };
const getAlien: GetOptions = { force_node: true, source: 'ALIEN' };
const getAll: GetOptions = { force_node: true, source: 'ALL' };
const delLocal: DeleteOptions = { force_alien_nodes: [], force_node: true, is_alien: false };
const delAlien = (force: string[]): DeleteOptions => ({ force_alien_nodes: force, force_node: true, is_alien: true });
// What bob's own client library sends for a client's request (force_node false: the node coordinates).
const putClient: PutOptions = { remote_nodes: [], force_node: false, overwrite: false };
const getClient: GetOptions = { force_node: false, source: 'ALL' };
const delClient: DeleteOptions = { force_alien_nodes: [], force_node: false, is_alien: false };

/** How a bob node reads a failed call (bob-common/src/error.rs From<Status>): the kind, and for KeyNotFound the key. */
function bobReads(err: grpc.ServiceError): { kind: string; key?: string } {
  const words = err.details.split(/\s+/).filter(Boolean);
  const known = ['KeyNotFound', 'DuplicateKey', 'Timeout', 'VDiskNotFound', 'Storage', 'VDiskIsNotReady', 'Failed', 'Internal', 'PearlChangeState', 'Unauthorized', 'HolderTemporaryUnavailable'];
  if (words[0] !== 'KeyNotFound') return { kind: known.includes(words[0]) ? words[0] : 'Failed (unparsed)' };
  // BobKey::from_str: two hex digits per byte into a key of BOB_KEY_SIZE bytes; a longer or odd string panics.
  const s = words[1] ?? '';
  if (s.length % 2 !== 0 || s.length / 2 > KEY_SIZE) return { kind: 'panic' };
  const key = Buffer.alloc(KEY_SIZE);
  for (let i = 0; i < s.length; i += 2) {
    const n = parseInt(s.slice(i, i + 2), 16);
    if (!Number.isNaN(n)) key[i / 2] = n;
  }
  return { kind: 'KeyNotFound', key: hex(key) };
}

type Unary = (req: object, md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: unknown) => void) => void;

/** A bob node's client of one peer (bob-common/src/bob_client.rs, as facts). */
class BobPeerClient {
  private readonly client: grpc.Client & Record<string, Unary>;

  constructor(
    readonly self: string,
    address: string,
    /** false: no authorization header (a client, not a node). */
    private readonly credentials = true,
  ) {
    this.client = new BobApi(address, grpc.credentials.createInsecure()) as grpc.Client & Record<string, Unary>;
  }

  close(): void {
    this.client.close();
  }

  private metadata(): grpc.Metadata {
    const md = new grpc.Metadata();
    if (this.credentials) md.set('authorization', `InterNode ${Buffer.from(this.self).toString('base64')}`);
    return md;
  }

  call<T>(method: string, request: object, md = this.metadata()): Promise<T> {
    return new Promise((resolve, reject) => {
      this.client[method](request, md, { deadline: Date.now() + OPERATION_TIMEOUT_MS }, (err, res) => (err ? reject(err) : resolve(res as T)));
    });
  }

  ping(): Promise<object> {
    const md = this.metadata();
    md.set('node_name', this.self);
    return this.call('Ping', {}, md);
  }

  async put(key: Buffer, data: Buffer, timestamp: number, options: PutOptions | null): Promise<void> {
    const res = await this.call<{ error: unknown }>('Put', { key: { key }, data: { data, meta: { timestamp } }, ...(options ? { options } : {}) });
    if (res.error) throw new Error(`Put answered OK with an error: ${JSON.stringify(res.error)}`);
  }

  get(key: Buffer, options: GetOptions | null): Promise<Blob> {
    return this.call<Blob>('Get', { key: { key }, ...(options ? { options } : {}) });
  }

  async exist(keys: Buffer[], options: GetOptions | null): Promise<boolean[]> {
    return (await this.call<{ exist: boolean[] }>('Exist', { keys: keys.map((key) => ({ key })), ...(options ? { options } : {}) })).exist;
  }

  async delete(key: Buffer, timestamp: number, options: DeleteOptions | null): Promise<void> {
    const res = await this.call<{ error: unknown }>('Delete', { key: { key }, meta: { timestamp }, ...(options ? { options } : {}) });
    if (res.error) throw new Error(`Delete answered OK with an error: ${JSON.stringify(res.error)}`);
  }
}

async function failure(p: Promise<unknown>): Promise<grpc.ServiceError> {
  try {
    await p;
  } catch (err) {
    if (typeof (err as grpc.ServiceError).code === 'number') return err as grpc.ServiceError;
    throw err;
  }
  throw new Error('the call succeeded but was expected to fail');
}

// ----------------------------------------------- the stand-in bob node

interface Received {
  method: string;
  metadata: Record<string, string>;
  request: Record<string, unknown>;
}

/**
 * The bob node the cluster knows as `bob`: it holds no vdisk, answers Ping,
 * takes writes (keeping nothing: no test asks it for them), knows no key
 * (KeyNotFound, Exist false), and records every call with its metadata.
 */
async function standInBob(t: Test, address: string): Promise<Received[]> {
  const received: Received[] = [];
  const server = new grpc.Server();
  const record = (method: string, call: grpc.ServerUnaryCall<Record<string, unknown>, unknown>) => {
    const md: Record<string, string> = {};
    for (const [name, values] of Object.entries(call.metadata.getMap())) md[name] = String(values);
    received.push({ method, metadata: md, request: call.request });
  };
  server.addService(BobApi.service, {
    Ping: (call: grpc.ServerUnaryCall<Record<string, unknown>, unknown>, cb: grpc.sendUnaryData<object>) => {
      record('Ping', call);
      cb(null, {});
    },
    Put: (call: grpc.ServerUnaryCall<Record<string, unknown>, unknown>, cb: grpc.sendUnaryData<object>) => {
      record('Put', call);
      cb(null, { error: null });
    },
    Delete: (call: grpc.ServerUnaryCall<Record<string, unknown>, unknown>, cb: grpc.sendUnaryData<object>) => {
      record('Delete', call);
      cb(null, { error: null });
    },
    Get: (call: grpc.ServerUnaryCall<Record<string, unknown>, unknown>, cb: grpc.sendUnaryData<object>) => {
      record('Get', call);
      const key = (call.request.key as { key: Buffer } | null)?.key ?? Buffer.alloc(0);
      cb({ code: Code.NOT_FOUND, details: `KeyNotFound ${hex(key)}` });
    },
    Exist: (call: grpc.ServerUnaryCall<Record<string, unknown>, unknown>, cb: grpc.sendUnaryData<object>) => {
      record('Exist', call);
      cb(null, { exist: (call.request.keys as unknown[]).map(() => false) });
    },
  });
  await new Promise<number>((resolve, reject) =>
    server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err, port) => (err ? reject(err) : resolve(port))),
  );
  t.teardown(() => server.forceShutdown());
  return received;
}

// ------------------------------------------------------------- the test

for (const auth of ['None', 'Basic'] as const) {
  t.test(`a bob peer in a cluster with two Oyster nodes, authentication ${auth}`, async (t) => {
    const started = Date.now();
    const extra: Record<string, unknown> = { anti_entropy: { enabled: false } };
    if (auth === 'Basic') Object.assign(extra, { authentication_type: 'Basic', users_config: 'users.yaml' });
    const c = await TestCluster.start(
      t,
      { nodes: ['n1', 'n2', 'bob', 'n3'], replicas: REPLICAS, keySize: KEY_SIZE, opts: { quorum: 1, checkInterval: '1s', extra } },
      [],
    );
    if (auth === 'Basic') writeUsers(c.files.dir);
    const atBob = await standInBob(t, c.address('bob'));
    await Promise.all(OYSTER.map((n) => c.startNode(n)));
    const peer: Record<string, BobPeerClient> = {};
    for (const n of OYSTER) peer[n] = new BobPeerClient('bob', c.address(n));
    t.teardown(() => Object.values(peer).forEach((p) => p.close()));
    await waitFor('n1 and n2 to see each other and bob up', () => OYSTER.every((a) => OYSTER.every((b) => a === b || c.sees(a, b)) && c.sees(a, 'bob')), 15_000);

    /** A Get answered OK: bob needs meta; returns data and timestamp. */
    const got = async (via: string, key: Buffer, options: GetOptions | null) => {
      const b = await peer[via].get(key, options);
      if (b.meta === null) throw new Error(`Get of ${hex(key)} via ${via} answered without meta (a bob node panics on that)`);
      return { data: b.data.toString(), timestamp: String(b.meta.timestamp) };
    };
    /** A Get that must fail as bob's "not found": NOT_FOUND, and bob parses KeyNotFound with this key. */
    const notFound = async (t: Test, via: string, key: Buffer, options: GetOptions | null, what: string) => {
      const err = await failure(peer[via].get(key, options));
      t.equal(err.code, Code.NOT_FOUND, `${what}: NOT_FOUND (${err.details})`);
      t.same(bobReads(err), { kind: 'KeyNotFound', key: hex(key) }, `${what}: a bob node reads KeyNotFound ${hex(key)}`);
    };

    await t.test('Ping with node_name, as bob\'s link manager sends it', async (t) => {
      for (const n of OYSTER) {
        t.same(await peer[n].ping(), {}, `${n} answers Ping with Null`);
        t.ok(c.sees(n, 'bob'), `${n} considers bob up`);
      }
      // Without credentials or node_name (Ping needs none); naming a node that is down, or none of the cluster.
      const bare = new BobPeerClient('bob', c.address('n1'), false);
      t.same(await bare.call('Ping', {}), {}, 'Ping without metadata: OK');
      bare.close();
      for (const name of ['n3', 'nobody']) {
        const other = new BobPeerClient(name, c.address('n1'));
        t.same(await other.ping(), {}, `Ping with node_name ${name}: OK`);
        other.close();
      }
      t.notOk(c.sees('n1', 'n3'), 'n1 still takes n3 (not listening) as down');
      // The other way round: what the Oyster nodes' own pings of bob carry.
      for (const n of OYSTER) {
        const ping = atBob.find((r) => r.method === 'Ping' && r.metadata.node_name === n);
        t.ok(ping, `${n} pinged bob with node_name ${n}`);
        t.equal(ping?.metadata.authorization, `InterNode ${Buffer.from(n).toString('base64')}`, `${n}'s Ping carries InterNode credentials`);
      }
    });

    if (auth === 'Basic') {
      await t.test('Basic: the bob peer\'s InterNode credentials are what lets it write', async (t) => {
        const anonymous = new BobPeerClient('bob', c.address('n1'), false);
        const err = await failure(anonymous.put(k(0, 1), Buffer.from('anonymous'), TS, putLocal));
        t.ok([Code.UNAUTHENTICATED, Code.PERMISSION_DENIED].includes(err.code), `a force_node Put without credentials is refused (${Code[err.code]}: ${err.details})`);
        anonymous.close();
        await notFound(t, 'n1', k(0, 1), getLocal, 'and stored nothing');
      });
    }

    await t.test('force_node: a bob coordinator writing to, reading from and deleting on its replicas', async (t) => {
      const key = k(0, 10); // v0: n1, n2
      const missing = k(0, 11);
      const other = k(1, 10); // v1: n2, n1
      const v3key = k(3, 10); // v3: n3, n1
      // bob's quorum put: both replicas with force_node (and no remote_nodes).
      for (const n of OYSTER) await peer[n].put(key, Buffer.from('ten'), TS, putLocal);
      await peer.n1.put(other, Buffer.from('other'), TS + 3, putLocal);
      await peer.n1.put(v3key, Buffer.from('v3 on n1'), TS + 4, putLocal);
      for (const n of OYSTER) {
        t.same(await got(n, key, getLocal), { data: 'ten', timestamp: String(TS) }, `${n}, NORMAL: the value and the timestamp bob sent`);
        t.same(await got(n, key, getAll), { data: 'ten', timestamp: String(TS) }, `${n}, ALL: the same`);
        await notFound(t, n, key, getAlien, `${n}, ALIEN (no alien copy)`);
        await notFound(t, n, missing, getLocal, `${n}, NORMAL, never written`);
        await notFound(t, n, missing, getAll, `${n}, ALL, never written`);
      }
      t.same(await got('n1', other, getLocal), { data: 'other', timestamp: String(TS + 3) }, 'vdisk 1 on n1');
      await notFound(t, 'n2', other, getLocal, 'force_node Put to n1 only: not coordinated, n2 has nothing');
      t.same(await got('n1', v3key, getLocal), { data: 'v3 on n1', timestamp: String(TS + 4) }, 'vdisk 3 (n1 and the absent n3) on n1');

      // Exist: the keys of the node's vdisks, in request order, repeated keys included.
      t.same(await peer.n1.exist([key, missing, other, v3key, key], getLocal), [true, false, true, true, true], 'n1, Exist NORMAL: one bool per key, in order');
      t.same(await peer.n2.exist([key, missing, other], getLocal), [true, false, false], 'n2, Exist NORMAL');
      t.same(await peer.n1.exist([key, other], getAlien), [false, false], 'n1, Exist ALIEN: no alien copies');
      t.same(await peer.n1.exist([key, missing, other], getAll), [true, false, true], 'n1, Exist ALL');
      t.same(await peer.n1.exist([], getLocal), [], 'Exist of no keys');

      // bob's delete on the replicas; a newer timestamp hides the value.
      for (const n of OYSTER) await peer[n].delete(key, TS + 1, delLocal);
      for (const n of OYSTER) {
        for (const [name, o] of [['NORMAL', getLocal], ['ALL', getAll]] as const) await notFound(t, n, key, o, `${n}, ${name}, after the delete`);
        t.same(await peer[n].exist([key, missing], getLocal), [false, false], `${n}, Exist NORMAL after the delete: false`);
        t.same(await peer[n].exist([key], getAll), [false], `${n}, Exist ALL after the delete: false`);
      }
      // Writes of the deleted value that are not newer do not bring it back.
      for (const n of OYSTER) await peer[n].put(key, Buffer.from('older'), TS, putLocal);
      for (const n of OYSTER) await notFound(t, n, key, getLocal, `${n}, a Put older than the delete does not resurrect the key`);
      for (const n of OYSTER) await peer[n].put(key, Buffer.from('as old'), TS + 1, putLocal);
      for (const n of OYSTER) await notFound(t, n, key, getLocal, `${n}, nor a Put as old as the delete (the tombstone wins the tie)`);
      t.same(await peer.n1.exist([key], getLocal), [false], 'Exist stays false');
      // A newer Put does.
      for (const n of OYSTER) await peer[n].put(key, Buffer.from('back'), TS + 2, putLocal);
      for (const n of OYSTER) t.same(await got(n, key, getLocal), { data: 'back', timestamp: String(TS + 2) }, `${n}, a newer Put makes the key readable again`);
      t.same(await peer.n2.exist([key], getLocal), [true], 'and Exist true');
      // An older delete changes nothing.
      await peer.n1.delete(key, TS + 1, delLocal);
      t.same(await got('n1', key, getLocal), { data: 'back', timestamp: String(TS + 2) }, 'a Delete older than the value leaves it');

      // Values proto3 sends as nothing: an empty value, timestamp 0 (meta then crosses as an empty message).
      const empty = k(0, 12);
      await peer.n1.put(empty, Buffer.alloc(0), 0, putLocal);
      t.same(await got('n1', empty, getLocal), { data: '', timestamp: '0' }, 'an empty value at timestamp 0: found, with its meta');
      t.same(await peer.n1.exist([empty], getLocal), [true], 'and it exists');
      await peer.n1.delete(empty, 0, delLocal);
      await notFound(t, 'n1', empty, getLocal, 'a Delete at timestamp 0 (as new as the value) removes it');
    });

    await t.test('force_node on a vdisk held by the other node only', async (t) => {
      const key = k(2, 20); // v2: n2 only
      await peer.n2.put(key, Buffer.from('only on n2'), TS, putLocal);
      t.same(await got('n2', key, getLocal), { data: 'only on n2', timestamp: String(TS) }, 'n2 (the only replica), NORMAL');
      t.same(await peer.n2.exist([key, k(2, 21)], getLocal), [true, false], 'n2, Exist NORMAL');
      // n1 holds no replica of vdisk 2: documented FAILED_PRECONDITION for reads and writes, Exist false.
      const get = await failure(peer.n1.get(key, getLocal));
      t.equal(get.code, Code.FAILED_PRECONDITION, `n1, NORMAL: FAILED_PRECONDITION (${get.details})`);
      await notFound(t, 'n1', key, getAll, 'n1, ALL (no replica, no alien copy)');
      t.same(await peer.n1.exist([key], getLocal), [false], 'n1, Exist NORMAL without a replica: false, as bob answers');
      const put = await failure(peer.n1.put(k(2, 22), Buffer.from('x'), TS, putLocal));
      t.equal(put.code, Code.FAILED_PRECONDITION, `n1, force_node Put: FAILED_PRECONDITION (${put.details})`);
      const del = await failure(peer.n1.delete(key, TS + 1, delLocal));
      t.equal(del.code, Code.FAILED_PRECONDITION, `n1, force_node Delete: FAILED_PRECONDITION (${del.details})`);
      t.same(await got('n2', key, getLocal), { data: 'only on n2', timestamp: String(TS) }, 'which changed nothing on n2');
      await peer.n2.delete(key, TS + 1, delLocal);
      await notFound(t, 'n2', key, getLocal, 'n2, after its force_node Delete');
      t.same(await peer.n2.exist([key], getLocal), [false], 'n2, Exist false');
    });

    await t.test('without force_node: the Oyster node coordinates', async (t) => {
      for (const [label, opts] of [['options left out', null], ['options with force_node false', 'explicit']] as const) {
        const put = opts ? putClient : null;
        const get = opts ? getClient : null;
        const del = opts ? delClient : null;
        const i = opts ? 31 : 30;
        const rep = k(0, i); // v0: n1, n2
        const far = k(2, i); // v2: n2 only
        await peer.n1.put(rep, Buffer.from(`rep ${label}`), TS, put);
        await peer.n1.put(far, Buffer.from(`far ${label}`), TS, put);
        for (const n of OYSTER) {
          t.same(await got(n, rep, get), { data: `rep ${label}`, timestamp: String(TS) }, `${label}: replicated vdisk, written through n1, read through ${n}`);
          t.same(await got(n, far, get), { data: `far ${label}`, timestamp: String(TS) }, `${label}: vdisk only on n2, written through n1, read through ${n}`);
          t.same(await peer[n].exist([rep, far, k(0, 99), k(2, 99), rep], get), [true, true, false, false, true], `${label}: Exist through ${n}`);
          await notFound(t, n, k(2, 99), get, `${label}: never written, through ${n}`);
        }
        // Where the coordinator put them (quorum 1: the second replica may follow a moment later).
        t.same(await got('n2', far, getLocal), { data: `far ${label}`, timestamp: String(TS) }, `${label}: n2 holds the vdisk-2 key`);
        await waitFor('both replicas to hold the write', async () => (await Promise.all(OYSTER.map((n) => got(n, rep, getLocal).catch(() => null)))).every(Boolean), 5000);
        t.pass(`${label}: both replicas of vdisk 0 hold the write`);

        // Deleted through the other node, with a newer timestamp.
        await peer.n2.delete(rep, TS + 1, del);
        await peer.n2.delete(far, TS + 1, del);
        for (const n of OYSTER) {
          await notFound(t, n, rep, get, `${label}: replicated key deleted through n2, through ${n}`);
          await notFound(t, n, far, get, `${label}: vdisk-2 key deleted through n2, through ${n}`);
          t.same(await peer[n].exist([rep, far], get), [false, false], `${label}: Exist false through ${n}`);
        }
        await notFound(t, 'n2', far, getLocal, `${label}: n2's replica holds the delete`);
        // An older write after the delete does not bring the value back; a newer one does.
        await peer.n1.put(rep, Buffer.from('older'), TS, put);
        await notFound(t, 'n2', rep, get, `${label}: an older Put after the delete`);
        await peer.n1.put(far, Buffer.from(`far again ${label}`), TS + 2, put);
        t.same(await got('n1', far, get), { data: `far again ${label}`, timestamp: String(TS + 2) }, `${label}: a newer Put after the delete`);
        t.same(await got('n2', far, getLocal), { data: `far again ${label}`, timestamp: String(TS + 2) }, `${label}: in n2's replica`);
      }
    });

    await t.test('aliens: a bob coordinator whose replica n3 is down', async (t) => {
      const key = k(3, 40); // v3: n3 (down), n1
      // bob's put_aliens: the copy for n3 goes to a support node (n2, which holds no replica of v3).
      await peer.n2.put(key, Buffer.from('for n3'), TS, putAlien(['n3']));
      t.same(await got('n2', key, getAlien), { data: 'for n3', timestamp: String(TS) }, 'n2, ALIEN: the copy held for n3');
      t.same(await got('n2', key, getAll), { data: 'for n3', timestamp: String(TS) }, 'n2, ALL: the same');
      const normal = await failure(peer.n2.get(key, getLocal));
      t.equal(normal.code, Code.FAILED_PRECONDITION, `n2, NORMAL: no replica of vdisk 3 (${normal.details})`);
      t.same(await peer.n2.exist([key, k(3, 41)], getAlien), [true, false], 'n2, Exist ALIEN');
      t.same(await peer.n2.exist([key], getAll), [true], 'n2, Exist ALL');
      t.same(await peer.n2.exist([key], getLocal), [false], 'n2, Exist NORMAL: not a replica copy');

      // A copy for n3 on n1, which holds its own replica of v3: an alien copy, not a replica write.
      await peer.n1.put(key, Buffer.from('for n3 on n1'), TS + 1, putAlien(['n3']));
      t.same(await got('n1', key, getAlien), { data: 'for n3 on n1', timestamp: String(TS + 1) }, 'n1, ALIEN: the copy');
      await notFound(t, 'n1', key, getLocal, 'n1, NORMAL: its replica was not written, and the copy is for n3, not for n1');
      t.same(await got('n1', key, getAll), { data: 'for n3 on n1', timestamp: String(TS + 1) }, 'n1, ALL: the copy');
      t.same(await peer.n1.exist([key], getLocal), [false], 'n1, Exist NORMAL: false');
      t.same(await peer.n1.exist([key], getAlien), [true], 'n1, Exist ALIEN: true');

      // A copy bob keeps for the node itself (alien/<self>, as bob's put_local_all does for a failed local disk) is part of NORMAL.
      const own = k(0, 42); // v0: n1, n2
      await peer.n1.put(own, Buffer.from('for n1 itself'), TS, putAlien(['n1']));
      t.same(await got('n1', own, getLocal), { data: 'for n1 itself', timestamp: String(TS) }, 'n1, NORMAL: the copy held for n1 itself');

      // bob's delete_aliens: the support node with force_alien_nodes [n3], every other node with none.
      await peer.n2.delete(key, TS + 2, delAlien(['n3']));
      await peer.n1.delete(key, TS + 2, delAlien([]));
      for (const n of OYSTER) {
        await notFound(t, n, key, getAlien, `${n}, ALIEN after bob's alien delete`);
        t.same(await peer[n].exist([key], getAlien), [false], `${n}, Exist ALIEN false`);
      }
      await notFound(t, 'n1', key, getAll, 'n1, ALL after the alien delete');
      t.same(await got('n1', k(3, 10), getLocal), { data: 'v3 on n1', timestamp: String(TS + 4) }, "is_alien does not touch n1's replica of vdisk 3");
      await peer.n2.put(key, Buffer.from('older copy'), TS + 1, putAlien(['n3']));
      await notFound(t, 'n2', key, getAlien, 'an older alien copy after the alien delete does not resurrect the key');

      // force_alien_nodes: the tombstone is written even where no copy was held.
      const forced = k(3, 43);
      await peer.n2.delete(forced, TS + 5, delAlien(['n3']));
      await peer.n2.put(forced, Buffer.from('late copy'), TS, putAlien(['n3']));
      await notFound(t, 'n2', forced, getAlien, 'a forced alien tombstone hides an older copy that arrives later');
      // Without force, no tombstone where no copy was held: a later, older copy is readable.
      const unforced = k(3, 44);
      await peer.n1.delete(unforced, TS + 5, delAlien([]));
      await peer.n1.put(unforced, Buffer.from('late copy'), TS, putAlien(['n3']));
      t.same(await got('n1', unforced, getAlien), { data: 'late copy', timestamp: String(TS) }, 'an unforced alien delete leaves no tombstone where no copy was');

      // A coordinated read finds alien copies when no replica has the key
      // (and read repair may then write it into n1's replica: last, on a key of its own).
      const seen = k(3, 46);
      await peer.n2.put(seen, Buffer.from('only an alien copy'), TS, putAlien(['n3']));
      for (const n of OYSTER) t.same(await got(n, seen, null), { data: 'only an alien copy', timestamp: String(TS) }, `coordinated Get through ${n}: the alien copy`);
      for (const n of OYSTER) t.same(await peer[n].exist([seen, k(3, 47)], null), [true, false], `coordinated Exist through ${n}`);

      // remote_nodes must name nodes of the cluster.
      const stranger = await failure(peer.n1.put(k(3, 45), Buffer.from('x'), TS, putAlien(['nobody'])));
      t.equal(stranger.code, Code.INVALID_ARGUMENT, `remote_nodes naming a node outside the cluster: INVALID_ARGUMENT (${stranger.details})`);
      await notFound(t, 'n1', k(3, 45), getAll, 'and nothing was stored');
    });

    await t.test('malformed bob requests: INVALID_ARGUMENT, and nothing changes', async (t) => {
      const key = k(0, 50);
      const zero = Buffer.alloc(KEY_SIZE); // what an empty key padded would be
      for (const n of OYSTER) await peer[n].put(key, Buffer.from('kept'), TS, putLocal);
      const cases: Array<[string, string, object]> = [];
      for (const [mode, put, get, del] of [
        ['force_node', putLocal, getLocal, delLocal],
        ['coordinated', putClient, getClient, delClient],
      ] as const) {
        cases.push(
          [`${mode} Put with an empty key`, 'Put', { key: { key: Buffer.alloc(0) }, data: { data: Buffer.from('x'), meta: { timestamp: TS + 9 } }, options: put }],
          [`${mode} Put without a key`, 'Put', { data: { data: Buffer.from('x'), meta: { timestamp: TS + 9 } }, options: put }],
          [`${mode} Put of a 16-byte key`, 'Put', { key: { key: Buffer.concat([key, key]) }, data: { data: Buffer.from('x'), meta: { timestamp: TS + 9 } }, options: put }],
          [`${mode} Put without meta`, 'Put', { key: { key }, data: { data: Buffer.from('overwritten') }, options: put }],
          [`${mode} Put without data`, 'Put', { key: { key }, options: put }],
          [`${mode} Get with an empty key`, 'Get', { key: { key: Buffer.alloc(0) }, options: get }],
          [`${mode} Get without a key`, 'Get', { options: get }],
          [`${mode} Exist with an empty key among others`, 'Exist', { keys: [{ key }, { key: Buffer.alloc(0) }], options: get }],
          [`${mode} Delete without meta`, 'Delete', { key: { key }, options: del }],
          [`${mode} Delete with an empty key`, 'Delete', { key: { key: Buffer.alloc(0) }, meta: { timestamp: TS + 9 }, options: del }],
          [`${mode} Delete without a key`, 'Delete', { meta: { timestamp: TS + 9 }, options: del }],
        );
      }
      for (const n of OYSTER) {
        for (const [what, method, request] of cases) {
          const err = await failure(peer[n].call(method, request));
          t.equal(err.code, Code.INVALID_ARGUMENT, `${n}: ${what}: INVALID_ARGUMENT (${err.details})`);
        }
      }
      for (const n of OYSTER) {
        t.same(await got(n, key, getLocal), { data: 'kept', timestamp: String(TS) }, `${n}: the key the malformed writes named is unchanged`);
        await notFound(t, n, zero, getAll, `${n}: the all-zero key was not written`);
        t.same(await peer[n].exist([zero, k(0, 51)], getAll), [false, false], `${n}: nothing else appeared`);
      }
      t.same(await peer.n1.exist([key], null), [true], 'and the cluster still serves the bob peer');
    });

    t.comment(`authentication ${auth}: ${Date.now() - started} ms`);
  });
}
