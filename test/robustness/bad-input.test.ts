// A sweep of hostile requests against one real oysterd: malformed paths and
// parameters in every route, odd and made-up methods, odd headers and bodies,
// requests Node's HTTP parser refuses, truncated requests and connections
// reset mid-body — interleaved with valid data requests whose answers are
// checked against a model every time. Every answer must be a well-formed
// HTTP response: a 4xx with a StatusExt body for bad input, the right 2xx for
// valid input, never a 5xx; the process keeps its PID and logs no error; the
// data written before and during the sweep reads back byte-exact, also after
// a restart. Set OYSTER_TEST_SEED to replay a run, OYSTER_TEST_DUMP=<file>
// to get every failure written there.
import fs from 'node:fs';
import http from 'node:http';
import t from 'tap';
import { startNode, writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import {
  badLogLines,
  Client,
  decodeParam,
  oracleKey,
  rawExchange,
  RawResult,
  RawStep,
  Res,
  Rng,
  seedFromEnv,
  statusExtProblem,
} from './lib';

const KEY_SIZE = 16;
const VDISKS = 4;
const LIMIT = 256 * 1024; // http_max_body_size
const U32_MAX = 4294967295n;
const U64_MAX = 18446744073709551615n;
const DAY = 86_400;

interface Expect {
  /** Acceptable statuses. */
  status: number[];
  /** GET: the exact body of a 200. */
  value?: Buffer;
  /** GET: the exact body of a 206. */
  part?: Buffer;
  /** A 2xx body must be JSON. */
  json?: boolean;
  /** Model update once the status is known. */
  apply?: (status: number) => void;
}

interface Built {
  path: string;
  body?: Buffer | string;
  expect: Expect;
}

interface Case {
  name: string;
  method: string;
  headers?: http.OutgoingHttpHeaders;
  /** Made when the request is sent, as the model changes; null skips the case. */
  build: () => Built | null;
}

// ------------------------------------------------------------ hostile values

// Path segments as they go on the wire (printable ASCII; '?', '#', '/' and
// spaces only percent-encoded).
const NUMERIC = [
  '0', '00', '1', '3', '4', '007', '-1', '-0', '+1', '1.5', '1.', '.5', '1e3', '1e400', '1E400', '-1e400', '0.0',
  'NaN', 'Infinity', '-Infinity', '4294967295', '4294967296', '18446744073709551615', '18446744073709551616',
  '99999999999999999999999999', '340282366920938463463374607431768211455', '340282366920938463463374607431768211456',
  `${'0'.repeat(100)}1`, `${'0'.repeat(100)}4294967296`, '9'.repeat(200), '9'.repeat(5000), '1'.repeat(15000),
  '0x10', '0b1', '0o7', '1_000', '1,000', '%D9%A1%D9%A2%D9%A3', '%D9%A1', '%EF%BC%91', '%E0%A5%A7', '%31', '%30', '%2D1', '%2B1', '%201', '1%20',
];
const GENERIC = [
  'null', 'undefined', 'true', 'false', '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf',
  '%20', '%00', '1%00', '%0a', '%0d%0a', '%09', '%7f', '%ff', '%fe%ff', '%', '%%', '%zz', '%1', '%c0%ae', '%c0%b1', '%e2%80%ae1',
  '%F0%9F%98%80', '%ED%A0%80', '%2e', '%2e%2e', '..', '.', '...', '%2F', '1%2F2', '..%2F..%2Fetc%2Fpasswd', '%5C', '%3F', '%23',
  '~', '*', '$', '!', "'", '(', ')', ',', ';', '=', '@', ':', '[]', '|', '^', '`', '"', '<script>', '%3Cscript%3E', '\\', '{}', '{', '}',
  '%25', '%2531', '%%31', 'a'.repeat(10000), '%41'.repeat(4000), 'x'.repeat(255), 'disk1%00', 'DISK1', 'disk1%20',
];
const KEY_SPECIFIC = [
  '0x', '0X1', '0x0', '0x00', '0x1', '0x123', '0xABCdef', '0xzz', '0x1g', '0xg1', '0x-1', '0x+1', '0x%201', '0x1%00', '0x0x1', 'x1',
  '0xx', '0x.', `0x${'f'.repeat(31)}`, `0x${'f'.repeat(32)}`, `0x${'f'.repeat(33)}`, `0x${'ff'.repeat(16)}00`, `0x${'ff'.repeat(16)}0000`,
  `0x${'ff'.repeat(17)}`, `0x${'0'.repeat(400)}`, `0x${'0'.repeat(400)}1`, `0x${'f'.repeat(10000)}`, `0x${'1'.repeat(40)}`, '%30x1', '%30%78%31',
  '01000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff', 'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF',
  '{01000000-0000-0000-0000-000000000000}', '%7B01000000-0000-0000-0000-000000000000%7D', '{01000000000000000000000000000000}',
  `{${'f'.repeat(32)}}`, `{${'f'.repeat(31)}}`, `{${'f'.repeat(33)}}`, '01000000000000000000000000000000', `1${'0'.repeat(39)}`,
  'g1000000-0000-0000-0000-000000000000', '01000000-0000-0000-0000-00000000000g', '0100000-00000-0000-0000-000000000000',
  '01000000-0000-0000-0000-00000000000', '01000000-0000-0000-0000-0000000000000', '01000000-0000-0000-0000',
  '01000000-0000-0000-0000-000000000000-', '-01000000-0000-0000-0000-000000000000', '01000000--0000-0000-0000-000000000000',
  '0100000000-00-0000-0000-000000000000', '{01000000-0000-0000-0000-000000000000', '01000000-0000-0000-0000-000000000000}',
  '{{01000000-0000-0000-0000-000000000000}}', '{1}', '{-}', '-', '--', '1-2', 'abc-def', 'urn:uuid:01000000-0000-0000-0000-000000000000',
  '0x01000000-0000-0000-0000-000000000000', '%2001000000-0000-0000-0000-000000000000', '01000000_0000_0000_0000_000000000000',
  '%E2%80%9001000000-0000-0000-0000-000000000000',
];
const TIMESTAMPS = [...NUMERIC, '1700000000', '86400', '253402300800', '9007199254740991', '9007199254740992', '18446744073709551615'];
const ACTIONS = ['attach', 'detach', 'ATTACH', 'Attach', 'attach%00', 'attac', 'attachh', 'detach%20', '%61ttach', 'remount', 'delete', 'stop', ''];
const DISK_NAMES = [...GENERIC, 'disk2', 'alien', 'alien_disk', 'disk', '%64isk2'];
const PARTITIONS = [...GENERIC, ...NUMERIC.slice(0, 20), '0_', '_', '1_abc', '00000000000_x'];
const METHODS = http.METHODS.filter((m) => m !== 'CONNECT');

function vdiskParam(raw: string): number | 'bad' | 'missing' {
  const d = decodeParam(raw);
  if (!/^\d+$/.test(d) || BigInt(d) > U32_MAX) return 'bad';
  const id = Number(BigInt(d));
  return id < VDISKS ? id : 'missing';
}

function tsParam(raw: string): number | 'bad' | 'huge' {
  const d = decodeParam(raw);
  if (!/^\d+$/.test(d) || BigInt(d) > U64_MAX) return 'bad';
  return BigInt(d) > BigInt(Number.MAX_SAFE_INTEGER) ? 'huge' : Number(BigInt(d));
}

/** The REST forms of a key, for valid requests. */
function keyForms(key: Buffer): string[] {
  let n = 0n;
  for (let i = key.length - 1; i >= 0; i--) n = (n << 8n) | BigInt(key[i]);
  const dec = n.toString();
  let used = key.length;
  while (used > 0 && key[used - 1] === 0) used--;
  const hex = key.toString('hex');
  const trimmed = key.subarray(0, used).toString('hex');
  const guid = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  const pct = (s: string) => [...s].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('');
  const forms = [dec, `000${dec}`, `0x${hex}`, `0x${hex.toUpperCase()}`, `0x${trimmed}`, guid, guid.toUpperCase(), `{${guid}}`, `%7B${guid}%7D`, `{${hex}}`, pct(dec), pct(guid)];
  if (trimmed.startsWith('0')) forms.push(`0x${trimmed.slice(1)}`); // odd length: the leading nibble is the first byte
  return forms;
}

t.test('hostile requests get 4xx StatusExt answers and change nothing', async (t) => {
  const seed = seedFromEnv();
  t.comment(`seed ${seed}`);
  const rng = new Rng(seed);
  const dir = tempDir(t);
  const files = await writeCluster(dir, { nodes: [{ name: 'n1' }], vdisks: VDISKS, keySize: KEY_SIZE }, { httpMaxBodySize: LIMIT });
  let node = await startNode(files, 'n1');
  t.teardown(async () => {
    if (node.child.exitCode === null && node.child.signalCode === null) await node.kill();
  });
  const pid = node.child.pid;
  const port = Number(new URL(node.url).port);
  const client = new Client(node.url, 8);
  t.teardown(() => client.close());

  // key (hex) -> value, or null once deleted
  const model = new Map<string, Buffer | null>();
  const owned: Buffer[] = []; // keys the valid traffic uses
  const failures: string[] = [];
  const statuses = new Map<number, number>();
  let requests = 0;
  let last = '';
  const fail = (name: string, what: string) => failures.push(`${name}: ${what}`.slice(0, 600) + ` [after ${last.slice(0, 100)}]`);

  const check = (name: string, method: string, res: Res, exp: Expect) => {
    requests++;
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    const brief = () => JSON.stringify(res.body.subarray(0, 160).toString('latin1'));
    if (res.status >= 500) fail(name, `${res.status} for ${method}: ${brief()}`);
    else if (!exp.status.includes(res.status)) fail(name, `${method} answered ${res.status}, expected ${exp.status.join('|')}: ${brief()}`);
    if (res.status >= 400 && method !== 'HEAD') {
      const p = statusExtProblem(res);
      if (p) fail(name, `${res.status} without a StatusExt body: ${p}`);
    }
    if (method === 'HEAD' && res.body.length > 0) fail(name, 'HEAD answer with a body');
    if (method === 'GET' && res.status === 200 && exp.value !== undefined && !res.body.equals(exp.value)) {
      fail(name, `GET returned ${res.body.length} bytes, expected ${exp.value.length} (${exp.value.equals(res.body.subarray(0, exp.value.length)) ? 'prefix' : 'different'})`);
    }
    if (method === 'GET' && res.status === 206 && exp.part !== undefined && !res.body.equals(exp.part)) fail(name, `GET returned a range of ${res.body.length} bytes, expected ${exp.part.length}`);
    if (exp.json && res.status >= 200 && res.status < 300 && method !== 'HEAD') {
      try {
        JSON.parse(res.body.toString('utf8'));
      } catch {
        fail(name, `2xx body is not JSON: ${brief()}`);
      }
    }
    exp.apply?.(res.status);
  };

  const send = async (c: Case) => {
    const b = c.build();
    if (!b) return;
    let res: Res;
    try {
      res = await client.request(c.method, b.path, b.body, c.headers);
    } catch (err) {
      fail(c.name, `no answer to ${c.method}: ${(err as Error).message}`);
      return;
    }
    check(c.name, c.method, res, b.expect);
    last = `${c.name} ${res.status}`;
  };
  /** A request whose path and body are fixed; its expectation is computed when it is sent. */
  const fixed = (name: string, method: string, path: string, body: Buffer | string | undefined, expect: () => Expect | null, headers?: http.OutgoingHttpHeaders): Case => ({
    name,
    method,
    headers,
    build: () => {
      const e = expect();
      return e && { path, body, expect: e };
    },
  });

  // ------------------------------------------------------- expectations

  // `headers`: the ones of the header sets below that change the answer (a
  // range, If-None-Match: *); the others must not.
  const dataExpect = (method: string, raw: string, body?: Buffer | string, headers: http.OutgoingHttpHeaders = {}): Expect => {
    if (method === 'OPTIONS') return { status: [200] };
    if (!['GET', 'HEAD', 'POST', 'DELETE'].includes(method)) return { status: [405] };
    const key = oracleKey(decodeParam(raw), KEY_SIZE);
    if (!key) return { status: [400] };
    const hex = key.toString('hex');
    const value = model.get(hex);
    const read = method === 'GET' || method === 'HEAD';
    if (value && headers['If-None-Match'] === '*' && method !== 'DELETE') return { status: [read ? 304 : 412] };
    if (value && read && headers.Range === 'bytes=0-1') return value.length === 0 ? { status: [416] } : { status: [206], part: value.subarray(0, 2) };
    switch (method) {
      case 'GET':
        return value ? { status: [200], value } : { status: [404] };
      case 'HEAD':
        return { status: [value ? 200 : 404] };
      case 'POST': {
        const b = Buffer.from(body ?? '');
        if (b.length > LIMIT) return { status: [413] };
        return { status: [201], apply: (s) => s === 201 && model.set(hex, b) };
      }
      default:
        return { status: [200], apply: (s) => s === 200 && model.set(hex, null) };
    }
  };

  // The partition every vdisk has (all were written today); null near midnight, when it may change.
  const currentPartition = (): number | null => {
    const now = Date.now() / 1000;
    const start = Math.floor(now / DAY) * DAY;
    return now - start < 30 || start + DAY - now < 30 ? null : start;
  };

  const union = (...sets: number[][]) => [...new Set(sets.flat())];

  // Statuses owed to each malformed parameter: the route may check them in any order.
  const vdiskRoute = (method: string, allowed: string[], rawId: string, more: number[] = [], success?: () => Expect): Expect | null => {
    if (method === 'OPTIONS') return { status: [200] };
    if (!allowed.includes(method) && !(method === 'HEAD' && allowed.includes('GET'))) return { status: [405] };
    const id = vdiskParam(rawId);
    const errs = [...(id === 'bad' ? [400] : id === 'missing' ? [404] : []), ...more];
    if (errs.length > 0) return { status: union(errs) };
    return success ? success() : { status: [200], json: true };
  };

  // --------------------------------------------------------------- setup

  const putValid = async (key: Buffer, value: Buffer, name: string) => {
    const form = rng.pick(keyForms(key));
    await send(fixed(name, 'POST', `/data/${form}`, value, () => dataExpect('POST', form, value)));
  };
  const sizes = [0, 0, 1, 2, 15, 100, 1000, 4096, 20000, 65536];
  const randomValue = () => {
    const n = rng.next() < 0.8 ? rng.pick(sizes) : rng.int(60000);
    return rng.bytes(n);
  };
  for (let i = 0; i < 240; i++) {
    const key = Buffer.alloc(KEY_SIZE);
    if (i % 3 === 0) key.writeUInt32LE(1_000_000 + i); // small integer: trailing zero bytes
    else if (i % 3 === 1) rng.bytes(8).copy(key);
    else rng.bytes(KEY_SIZE).copy(key);
    owned.push(key);
    await putValid(key, randomValue(), 'preload');
  }
  const partitions = JSON.parse((await client.request('GET', '/vdisks/0/partitions')).body.toString()) as { partitions: string[] };
  t.equal(partitions.partitions.length, 1, 'vdisk 0 has one partition after the preload');
  const realPartition = partitions.partitions[0];

  /** One valid data request on an owned key, checked against the model. */
  const validOp = async (label: string) => {
    const key = rng.pick(owned);
    const form = rng.pick(keyForms(key));
    const r = rng.next();
    if (r < 0.55) await send(fixed(`${label} GET ${form}`, 'GET', `/data/${form}`, undefined, () => dataExpect('GET', form)));
    else if (r < 0.65) await send(fixed(`${label} HEAD ${form}`, 'HEAD', `/data/${form}`, undefined, () => dataExpect('HEAD', form)));
    else if (r < 0.9) await putValid(key, randomValue(), `${label} POST ${form}`);
    else await send(fixed(`${label} DELETE ${form}`, 'DELETE', `/data/${form}`, undefined, () => dataExpect('DELETE', form)));
  };

  // ---------------------------------------------------------- the cases

  const cases: Case[] = [];
  const add = (c: { name: string; method: string; path: string; body?: Buffer | string; headers?: http.OutgoingHttpHeaders; expect: () => Expect | null }) =>
    cases.push(fixed(c.name, c.method, c.path, c.body, c.expect, c.headers));
  /** A request on an owned key in a random REST form, made when it is sent. */
  const onOwnedKey = (name: string, method: string, headers: http.OutgoingHttpHeaders | undefined, make: (form: string) => { body?: Buffer | string; expect: Expect }) =>
    cases.push({
      name,
      method,
      headers,
      build: () => {
        const form = rng.pick(keyForms(rng.pick(owned)));
        return { path: `/data/${form}`, ...make(form) };
      },
    });

  // /data/{key}: every hostile form with the data methods, and every other method on a few.
  const keyParams = [...NUMERIC, ...GENERIC, ...KEY_SPECIFIC];
  for (const raw of keyParams) {
    for (const method of ['GET', 'HEAD', 'POST', 'DELETE']) {
      const body = method === 'POST' ? rng.bytes(rng.int(64)) : undefined;
      add({ name: `${method} /data/${raw.slice(0, 80)}`, method, path: `/data/${raw}`, body, expect: () => dataExpect(method, raw, body) });
    }
  }
  for (const method of METHODS) {
    for (const raw of ['1', '0x01', 'abc', '9'.repeat(60), '%ff']) {
      const body = method === 'POST' ? 'x' : undefined;
      add({ name: `${method} /data/${raw}`, method, path: `/data/${raw}`, body, expect: () => dataExpect(method, raw, body) });
    }
  }

  // /vdisks/{id}/...
  const idParams = [...NUMERIC, ...GENERIC];
  for (const raw of idParams) {
    const routes: Array<[string, string, string[], (() => Expect) | undefined]> = [
      ['GET', `/vdisks/${raw}`, ['GET'], undefined],
      ['GET', `/vdisks/${raw}/records/count`, ['GET'], undefined],
      ['GET', `/vdisks/${raw}/partitions`, ['GET'], undefined],
      ['GET', `/vdisks/${raw}/replicas/local/dirs`, ['GET'], undefined],
      ['POST', `/vdisks/${raw}/remount`, ['POST'], () => ({ status: [200], json: true })],
      ['PATCH', `/vdisks/${raw}/remount`, ['POST'], undefined],
      ['HEAD', `/vdisks/${raw}`, ['GET'], undefined],
    ];
    for (const [method, path, allowed, success] of routes) {
      add({ name: `${method} ${path.slice(0, 100)}`, method, path, expect: () => vdiskRoute(method, allowed, raw, [], success) });
    }
  }
  for (const rawId of ['0', '3', '4', '-1', '4294967296', 'x']) {
    for (const rawP of [...PARTITIONS, realPartition, `${realPartition}x`, `${realPartition}%00`]) {
      const path = `/vdisks/${rawId}/partitions/${rawP}`;
      add({
        name: `GET ${path.slice(0, 100)}`,
        method: 'GET',
        path,
        expect: () => vdiskRoute('GET', ['GET'], rawId, [], () => (decodeParam(rawP) === realPartition ? { status: [200], json: true } : { status: [404] })),
      });
    }
  }
  // attach / detach / delete by timestamp: never a partition that could be changed.
  const tsExpect = (method: string, allowed: string[], rawId: string, rawTs: string, rawAction?: string): Expect | null => {
    const ts = tsParam(rawTs);
    const more: number[] = [];
    if (ts === 'bad') more.push(400);
    if (rawAction !== undefined && !['attach', 'detach'].includes(decodeParam(rawAction))) more.push(400);
    const current = currentPartition();
    if (current === null) return null;
    return vdiskRoute(method, allowed, rawId, more, () => ({ status: [ts === current ? 409 : 404] }));
  };
  for (const rawTs of TIMESTAMPS) {
    for (const rawId of ['0', '2', '9', 'x']) {
      for (const method of ['POST', 'PUT']) {
        for (const action of ['attach', 'detach']) {
          const path = `/vdisks/${rawId}/partitions/by_timestamp/${rawTs}/${action}`;
          add({ name: `${method} ${path.slice(0, 100)}`, method, path, expect: () => tsExpect(method, ['POST', 'PUT'], rawId, rawTs, action) });
        }
      }
      const path = `/vdisks/${rawId}/partitions/by_timestamp/${rawTs}`;
      add({ name: `DELETE ${path.slice(0, 100)}`, method: 'DELETE', path, expect: () => tsExpect('DELETE', ['DELETE'], rawId, rawTs) });
    }
  }
  for (const action of [...ACTIONS.filter((a) => a !== ''), ...GENERIC.slice(0, 30)]) {
    const path = `/vdisks/1/partitions/by_timestamp/123/${action}`;
    add({ name: `POST ${path.slice(0, 100)}`, method: 'POST', path, expect: () => tsExpect('POST', ['POST', 'PUT'], '1', '123', action) });
  }
  // The current partition: a conflict, never a change.
  for (const method of ['POST', 'PUT', 'DELETE']) {
    for (const action of method === 'DELETE' ? [''] : ['attach', 'detach']) {
      cases.push({
        name: `${method} current partition ${action}`,
        method,
        build: () => {
          const current = currentPartition();
          return current === null ? null : { path: `/vdisks/0/partitions/by_timestamp/${current}${action ? `/${action}` : ''}`, expect: { status: [409] } };
        },
      });
    }
  }

  // /disks/{name}/stop|start: never a real disk for stop.
  for (const raw of DISK_NAMES) {
    for (const action of ['stop', 'start']) {
      const path = `/disks/${raw}/${action}`;
      add({ name: `POST ${path.slice(0, 100)}`, method: 'POST', path, expect: () => ({ status: [404] }) });
    }
    add({ name: `GET /disks/${raw.slice(0, 80)}/stop`, method: 'GET', path: `/disks/${raw}/stop`, expect: () => ({ status: [405] }) });
  }
  add({ name: 'start a running disk', method: 'POST', path: '/disks/%64isk1/start', expect: () => ({ status: [200], json: true }) });

  // Fixed routes with every method.
  const fixedRoutes: Array<[string, string[]]> = [
    ['/status', ['GET']],
    ['/nodes', ['GET']],
    ['/metadata/distrfunc', ['GET']],
    ['/version', ['GET']],
    ['/configuration', ['GET']],
    ['/status/space', ['GET']],
    ['/disks/list', ['GET']],
    ['/vdisks', ['GET']],
    ['/alien', ['GET']],
    ['/alien/dir', ['GET']],
    ['/alien/detach', ['POST']],
    ['/blobs/outdated', ['DELETE']],
    ['/metrics', ['GET']],
  ];
  for (const [path, allowed] of fixedRoutes) {
    for (const method of METHODS) {
      const ok = allowed.includes(method) || (method === 'HEAD' && allowed.includes('GET')) || method === 'OPTIONS';
      add({ name: `${method} ${path}`, method, path, expect: () => ({ status: [ok ? 200 : 405] }) });
    }
    add({ name: `GET ${path}?junk`, method: allowed[0], path: `${path}?a=%ff&b=${'c'.repeat(2000)}&&=&%00`, expect: () => ({ status: [200] }) });
  }

  // Paths that name no route.
  const shapes = [
    '/', '//', '/data', '/data/', '/data//', '//data/1', '/data//1', '/data/1/2', '/data/1//', '/datax/1', '/dat/1', '/data%2F1', '/%64ata/1',
    '/vdisks/0/nope', '/vdisks/0/partitions/by_timestamp/1/attach/x', '/vdisks//partitions', '/vdisks/0/remount/x', '/disks', '/disks/',
    '/disks/list/x', '/alien/x', '/metrics/x', '/status/space/x', `/${'a'.repeat(10000)}`, '/../data/1', '/./data/1', '/data/./1', '/data/../data/1',
    '*', '/%00', '/%2e%2e/%2e%2e/etc/passwd', '/s3/default/1', '/api/v1/data/1', '/data;/1', `/${'/'.repeat(3000)}`, `/${'x/'.repeat(3000)}`,
  ];
  for (const path of shapes) {
    for (const method of ['GET', 'POST', 'DELETE', 'PUT']) {
      add({ name: `${method} ${path.slice(0, 80)}`, method, path, body: method === 'POST' ? 'x' : undefined, expect: () => ({ status: [404, 405] }) });
    }
  }

  // Odd headers and bodies on valid data requests.
  const headerSets: Array<[string, http.OutgoingHttpHeaders]> = [
    ['json', { 'Content-Type': 'application/json' }],
    ['form', { 'Content-Type': 'application/x-www-form-urlencoded' }],
    ['multipart', { 'Content-Type': 'multipart/form-data; boundary=zz' }],
    ['bad content type', { 'Content-Type': '\u00ff;;;=' }],
    ['utf-16', { 'Content-Type': 'text/plain; charset=utf-16' }],
    ['gzip', { 'Content-Encoding': 'gzip' }],
    ['br', { 'Content-Encoding': 'br, gzip, deflate' }],
    ['range', { Range: 'bytes=0-1' }],
    ['bad range', { Range: 'bytes=zzz' }],
    ['if-none-match', { 'If-None-Match': '*' }],
    ['if-modified-since', { 'If-Modified-Since': 'yesterday' }],
    ['accept', { Accept: 'text/html' }],
    ['accept-encoding', { 'Accept-Encoding': 'gzip, br' }],
    ['cookie', { Cookie: `a=${'b'.repeat(8000)}` }],
    ['x-forwarded', { 'X-Forwarded-For': 'garbage, , 999.1.1.1', 'X-Forwarded-Proto': 'gopher' }],
    ['expect 100-continue', { Expect: '100-continue' }],
    ['connection close', { Connection: 'close' }],
    ['many headers', Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`x-h${i}`, 'v']))],
    ['content-md5', { 'Content-MD5': 'not base64!' }],
  ];
  for (const [label, headers] of headerSets) {
    onOwnedKey(`POST with ${label}`, 'POST', headers, (form) => {
      const body = label === 'json' ? '{"not": "parsed"' : label === 'form' ? 'a=b&c' : randomValue();
      return { body, expect: dataExpect('POST', form, body, headers) };
    });
    for (const method of ['GET', 'HEAD']) onOwnedKey(`${method} with ${label}`, method, headers, (form) => ({ expect: dataExpect(method, form, undefined, headers) }));
  }
  for (const auth of ['Basic !!!', 'Basic', 'Bearer x', 'Basic dXNlcg==', `Basic ${'A'.repeat(4000)}`]) {
    onOwnedKey(`GET with Authorization ${auth.slice(0, 20)}`, 'GET', { Authorization: auth }, (form) => {
      const e = dataExpect('GET', form);
      return { expect: { ...e, status: [...e.status, 400, 401, 403] } };
    });
  }
  // Bodies where none is expected, and empty or limit-sized bodies where one is.
  for (const method of ['GET', 'HEAD', 'DELETE']) {
    for (const body of ['x', rng.bytes(70_000), '{"a":1}']) onOwnedKey(`${method} with a body`, method, undefined, (form) => ({ body, expect: dataExpect(method, form) }));
  }
  for (const [label, body] of [
    ['empty', Buffer.alloc(0)],
    ['at the limit', rng.bytes(LIMIT)],
  ] as Array<[string, Buffer]>) {
    onOwnedKey(`POST ${label}`, 'POST', undefined, (form) => ({ body, expect: dataExpect('POST', form, body) }));
  }
  add({ name: 'POST /vdisks/0/remount with a JSON body', method: 'POST', path: '/vdisks/0/remount', body: '{"force":true}', headers: { 'Content-Type': 'application/json' }, expect: () => ({ status: [200] }) });
  add({ name: 'GET /status with a body', method: 'GET', path: '/status', body: 'x'.repeat(5000), expect: () => ({ status: [200], json: true }) });

  // Shuffle, then run with a valid data request after every hostile one.
  for (let i = cases.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [cases[i], cases[j]] = [cases[j], cases[i]];
  }
  const started = Date.now();
  for (const c of cases) {
    await send(c);
    await validOp('valid');
  }
  t.comment(`${cases.length} hostile requests through the HTTP client in ${Date.now() - started} ms`);

  // ------------------------------------------------- raw socket requests

  interface RawCase {
    name: string;
    steps: RawStep[];
    /** Acceptable statuses of each expected response. */
    expect: number[][];
    methods?: string[];
    /** No answer at all is fine too (the request never completed). */
    noneOk?: boolean;
    end?: 'half' | 'destroy' | 'none';
    /** Checks after the exchange. */
    after?: (r: RawResult) => Promise<void> | void;
  }

  const rawCheck = (c: RawCase, r: RawResult) => {
    requests++;
    if (r.malformed) fail(c.name, `malformed answer: ${r.malformed}`);
    if (r.responses.length === 0) {
      if (!c.noneOk) fail(c.name, `no answer (socket error ${r.error}, closed by server ${r.closedByServer})`);
      return;
    }
    if (r.responses.length > c.expect.length) fail(c.name, `${r.responses.length} answers, expected ${c.expect.length}`);
    if (r.trailing.length > 0 && r.responses.length >= c.expect.length) fail(c.name, `junk after the answers: ${JSON.stringify(r.trailing.subarray(0, 80).toString('latin1'))}`);
    r.responses.forEach((res, i) => {
      const method = c.methods?.[i] ?? 'GET';
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status >= 500) fail(c.name, `answer ${i}: ${res.status} ${res.body.subarray(0, 160).toString('latin1')}`);
      else if (c.expect[i] && !c.expect[i].includes(res.status)) fail(c.name, `answer ${i}: ${res.status}, expected ${c.expect[i].join('|')}: ${res.body.subarray(0, 160).toString('latin1')}`);
      if (res.status >= 400 && method !== 'HEAD') {
        const p = statusExtProblem(res);
        if (p) fail(c.name, `answer ${i}: ${res.status} without a StatusExt body: ${p}`);
      }
    });
    if (r.responses.length < c.expect.length && !c.noneOk && !r.closedByServer) fail(c.name, `only ${r.responses.length} of ${c.expect.length} answers`);
  };

  const runRaw = async (c: RawCase) => {
    const r = await rawExchange(port, c.steps, { responses: c.expect.length, end: c.end ?? 'none', timeoutMs: 4000, methods: c.methods });
    rawCheck(c, r);
    await c.after?.(r);
  };

  /** GET through the client, checked against the model: nothing changed. */
  const unchanged = async (key: Buffer, label: string) => {
    const form = rng.pick(keyForms(key));
    await send(fixed(`${label}: ${form} unchanged`, 'GET', `/data/${form}`, undefined, () => dataExpect('GET', form)));
  };
  /** The key now holds one of the candidates (the request may or may not have completed); the model learns which. */
  const oneOf = async (key: Buffer, candidates: Array<Buffer | null>, label: string) => {
    requests++;
    const hex = key.toString('hex');
    const res = await client.request('GET', `/data/${keyForms(key)[0]}`);
    const got = res.status === 200 ? res.body : res.status === 404 ? null : undefined;
    const match = got !== undefined && candidates.find((c) => (c === null ? got === null : got !== null && c.equals(got)));
    if (match === undefined || match === false) fail(label, `after an interrupted write the key holds neither the old nor the new value (status ${res.status}, ${res.body.length} bytes)`);
    else model.set(hex, match);
  };

  const H = 'Host: oyster\r\n';
  const get = (form: string) => `GET /data/${form} HTTP/1.1\r\n${H}\r\n`;
  const rawCases: RawCase[] = [];
  const addRaw = (c: RawCase) => rawCases.push(c);

  for (const m of ['FOO', 'GETT', 'get', 'G', 'X'.repeat(100), 'BREW', 'PRI', 'GET/data/1', '\u00ff\u00fe', '0', 'HTTP/1.1']) {
    addRaw({ name: `made-up method ${m.slice(0, 20)}`, steps: [Buffer.from(`${m} /data/1 HTTP/1.1\r\n${H}\r\n`, 'latin1')], expect: [[400]] });
  }
  addRaw({ name: 'CONNECT host:port', steps: [`CONNECT 127.0.0.1:22 HTTP/1.1\r\n${H}\r\n`], expect: [[405]] });
  addRaw({ name: 'CONNECT /data/1', steps: [`CONNECT /data/1 HTTP/1.1\r\n${H}\r\n`], expect: [[400, 405]] });
  for (let i = 0; i < 24; i++) {
    addRaw({ name: `random bytes #${i}`, steps: [rng.bytes(1 + rng.int(3000)), '\r\n\r\n'], expect: [[400, 404, 405, 413, 431]], noneOk: true, end: 'half' });
  }
  for (const line of ['GET /data/1\r\n\r\n', 'GET /data/1 HTTP/2.0\r\n\r\n', 'GET /data/1 HTTP/1.2\r\n\r\n', 'GET /data/1 HTTP/9.9\r\n\r\n', 'GET /data/1 FTP/1.1\r\n\r\n', 'GET  /data/1  HTTP/1.1\r\n\r\n', 'GET /data/1 HTTP/1.1\n\n', 'GET /data/1 HTTP/1.1\r\r\n\r\n', '\r\n\r\n\r\n', ' GET /data/1 HTTP/1.1\r\n\r\n', 'GET\r\n\r\n', 'GET /data/1 HTTP/1.1 extra\r\n\r\n']) {
    addRaw({ name: `bad request line ${JSON.stringify(line.slice(0, 30))}`, steps: [line], expect: [[200, 400, 404]], noneOk: true, end: 'half' });
  }
  const pathBytes: Array<[string, Buffer]> = [
    ['NUL', Buffer.from([0])],
    ['tab', Buffer.from([9])],
    ['space', Buffer.from(' 1')],
    ['DEL', Buffer.from([0x7f])],
    ['utf-8', Buffer.from('ключ🙂', 'utf8')],
    ['latin1', Buffer.from([0xe9, 0xff])],
    ['overlong utf-8', Buffer.from([0xc0, 0xae, 0xc0, 0xae])],
    ['lone surrogate', Buffer.from([0xed, 0xa0, 0x80])],
    ['bell', Buffer.from([7])],
  ];
  for (const [label, bytes] of pathBytes) {
    addRaw({ name: `raw ${label} in the path`, steps: [Buffer.concat([Buffer.from('GET /data/1'), bytes, Buffer.from(` HTTP/1.1\r\n${H}\r\n`)])], expect: [[400]] });
    addRaw({ name: `raw ${label} in a header`, steps: [Buffer.concat([Buffer.from(`GET /data/1 HTTP/1.1\r\n${H}X-A: a`), bytes, Buffer.from('b\r\n\r\n')])], expect: [[200, 400, 404]] });
    addRaw({ name: `raw ${label} in a header name`, steps: [Buffer.concat([Buffer.from(`GET /data/1 HTTP/1.1\r\n${H}X`), bytes, Buffer.from(': b\r\n\r\n')])], expect: [[400]] });
  }
  addRaw({ name: '64 KiB path', steps: [`GET /data/${'1'.repeat(65536)} HTTP/1.1\r\n${H}\r\n`], expect: [[431]] });
  // Node answers 431 and closes while most of the megabyte is still unread,
  // so the kernel resets the connection, and the reset may reach this client
  // before the answer it discards: no answer is fine, a wrong one is not.
  addRaw({ name: '1 MiB path', steps: [`GET /${'a'.repeat(1 << 20)} HTTP/1.1\r\n${H}\r\n`], expect: [[431]], noneOk: true });
  addRaw({ name: '100 KiB header', steps: [`GET /data/1 HTTP/1.1\r\n${H}X-Big: ${'v'.repeat(100_000)}\r\n\r\n`], expect: [[431]] });
  addRaw({ name: '10000 headers', steps: [`GET /data/1 HTTP/1.1\r\n${H}${'X: y\r\n'.repeat(10_000)}\r\n`], expect: [[431]] });
  addRaw({ name: 'header without colon', steps: [`GET /data/1 HTTP/1.1\r\n${H}NoColon\r\n\r\n`], expect: [[400]] });
  addRaw({ name: 'obs-fold header', steps: [`GET /data/1 HTTP/1.1\r\n${H}X-A: a\r\n  folded\r\n\r\n`], expect: [[200, 400, 404]] });
  addRaw({ name: 'no Host, HTTP/1.1', steps: ['GET /status HTTP/1.1\r\n\r\n'], expect: [[200]] });
  addRaw({ name: 'no Host, HTTP/1.0', steps: ['GET /status HTTP/1.0\r\n\r\n'], expect: [[200]] });
  addRaw({ name: 'two Hosts', steps: [`GET /status HTTP/1.1\r\n${H}${H}\r\n`], expect: [[200, 400]] });
  addRaw({ name: 'absolute-form URL', steps: [`GET http://elsewhere.example/status HTTP/1.1\r\n${H}\r\n`], expect: [[200]] });
  addRaw({ name: 'asterisk-form URL', steps: [`OPTIONS * HTTP/1.1\r\n${H}\r\n`], expect: [[404, 200]] });
  addRaw({ name: 'authority-form URL with GET', steps: [`GET example.com:80 HTTP/1.1\r\n${H}\r\n`], expect: [[400, 404]] });
  addRaw({ name: 'Expect: bogus', steps: [`POST /data/424242 HTTP/1.1\r\n${H}Expect: bogus\r\nContent-Length: 2\r\n\r\nab`], expect: [[417]] });
  addRaw({ name: 'CL+TE', steps: [`POST /data/424242 HTTP/1.1\r\n${H}Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`], expect: [[400]] });
  for (const cl of ['abc', '-1', '1e3', '0x10', '99999999999999999999', '1, 2', ' ', '+5', '5.0']) {
    addRaw({ name: `Content-Length ${cl}`, steps: [`POST /data/424242 HTTP/1.1\r\n${H}Content-Length: ${cl}\r\n\r\nabcde`], expect: [[400, 413]], after: () => unchanged(keyOf(424242), 'bad content-length') });
  }
  addRaw({ name: 'two different Content-Lengths', steps: [`POST /data/424242 HTTP/1.1\r\n${H}Content-Length: 1\r\nContent-Length: 2\r\n\r\nab`], expect: [[400]], after: () => unchanged(keyOf(424242), 'two content-lengths') });
  for (const te of ['gzip', 'chunked, gzip', 'identity', 'chunked, chunked', 'xchunked', 'chunked\u000b']) {
    addRaw({ name: `Transfer-Encoding ${JSON.stringify(te)}`, steps: [`POST /data/424242 HTTP/1.1\r\n${H}Transfer-Encoding: ${te}\r\n\r\n3\r\nabc\r\n0\r\n\r\n`], expect: [[400, 201, 501]], noneOk: true, end: 'half', after: () => oneOf(keyOf(424242), [model.get(keyOf(424242).toString('hex')) ?? null, Buffer.from('abc')], `Transfer-Encoding ${te}`) });
  }
  for (const [label, chunks] of [
    ['bad chunk size', '3\r\nabc\r\nZZ\r\n'],
    ['huge chunk size', 'ffffffffffffffffffff\r\nabc\r\n'],
    ['negative chunk size', '-3\r\nabc\r\n'],
    ['chunk longer than announced', '3\r\nabcdef\r\n0\r\n\r\n'],
    ['long chunk extension', `3;${'e'.repeat(20_000)}\r\nabc\r\n0\r\n\r\n`],
    ['chunk data without CRLF', '3\r\nabc0\r\n\r\n'],
  ] as Array<[string, string]>) {
    addRaw({ name: label, steps: [`POST /data/424243 HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n${chunks}`], expect: [[400, 413]], noneOk: false, after: () => unchanged(keyOf(424243), label) });
  }
  // Oversized bodies: refused without being stored.
  const big = owned[7];
  addRaw({ name: 'declared body above the limit', steps: [`POST /data/${keyForms(big)[0]} HTTP/1.1\r\n${H}Content-Length: ${LIMIT + 1}\r\n\r\n`, 'x'.repeat(1000)], expect: [[413]], after: () => unchanged(big, 'declared oversize') });
  addRaw({ name: 'declared body of 10 GB', steps: [`POST /data/${keyForms(big)[0]} HTTP/1.1\r\n${H}Content-Length: 10000000000\r\n\r\n`, 'x'], expect: [[413]], after: () => unchanged(big, '10 GB') });
  addRaw({
    name: 'chunked body above the limit',
    steps: [`POST /data/${keyForms(big)[0]} HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n`, ...Array.from({ length: 40 }, () => `2000\r\n${'y'.repeat(0x2000)}\r\n`)],
    expect: [[413]],
    after: () => unchanged(big, 'chunked oversize'),
  });
  addRaw({
    name: 'declared oversize with Expect: 100-continue',
    steps: [`POST /data/${keyForms(big)[0]} HTTP/1.1\r\n${H}Expect: 100-continue\r\nContent-Length: ${LIMIT * 4}\r\n\r\n`],
    expect: [[413]],
    after: () => unchanged(big, 'expect oversize'),
  });
  // Truncated requests and connections closed mid-body: the stored value stays the old one.
  for (let i = 0; i < 12; i++) {
    const key = owned[20 + i];
    const form = keyForms(key)[i % 3];
    const end = i % 2 === 0 ? 'half' : 'destroy';
    const chunked = i % 4 >= 2;
    const head = `POST /data/${form} HTTP/1.1\r\n${H}${chunked ? 'Transfer-Encoding: chunked' : 'Content-Length: 5000'}\r\n\r\n`;
    const partial = chunked ? `800\r\n${'p'.repeat(0x800)}\r\n10\r\nabc` : 'q'.repeat(1 + rng.int(4998));
    addRaw({ name: `truncated ${chunked ? 'chunked ' : ''}body, ${end}`, steps: [head, { delayMs: 5 }, partial, { delayMs: 20 }], expect: [[400]], noneOk: true, end, after: () => unchanged(key, 'truncated body') });
  }
  for (const [label, bytes] of [
    ['request line only', 'POST /data/1 HTTP/1.1\r\n'],
    ['half a request line', 'POST /da'],
    ['headers without the blank line', `POST /data/1 HTTP/1.1\r\n${H}Content-Length: 3\r\n`],
  ] as Array<[string, string]>) {
    for (const end of ['half', 'destroy'] as const) addRaw({ name: `${label}, ${end}`, steps: [bytes, { delayMs: 10 }], expect: [[400]], noneOk: true, end });
  }
  // A write whose connection is reset right after the body: stored or not, never half.
  for (let i = 0; i < 6; i++) {
    const key = owned[40 + i];
    const value = rng.bytes(1000 + rng.int(50_000));
    addRaw({
      name: 'reset right after a complete body',
      steps: [`POST /data/${keyForms(key)[0]} HTTP/1.1\r\n${H}Content-Length: ${value.length}\r\n\r\n`, value],
      expect: [[201]],
      noneOk: true,
      end: 'destroy',
      after: async () => {
        await new Promise((r) => setTimeout(r, 50));
        await oneOf(key, [model.get(key.toString('hex')) ?? null, value], 'reset after body');
      },
    });
  }
  // Reset while the answer is being sent.
  for (let i = 0; i < 4; i++) {
    const key = owned[60 + i];
    addRaw({ name: 'reset while a value is sent back', steps: [get(keyForms(key)[0])], expect: [[200, 404]], noneOk: true, end: 'destroy' });
  }
  // Pipelining: answers in order, each right.
  {
    const keys = [owned[80], owned[81], owned[82]];
    const forms = keys.map((k) => keyForms(k)[0]);
    addRaw({
      name: 'three pipelined GETs',
      steps: [forms.map(get).join('')],
      expect: keys.map(() => [200, 404]),
      after: (r) => {
        r.responses.forEach((res, i) => {
          const want = model.get(keys[i].toString('hex'));
          if (want ? !(res.status === 200 && res.body.equals(want)) : res.status !== 404) fail('pipelined GET', `answer ${i} does not match key ${forms[i]}`);
        });
      },
    });
    const value = rng.bytes(3000);
    addRaw({
      name: 'pipelined POST then GET of the same key',
      steps: [`POST /data/${forms[0]} HTTP/1.1\r\n${H}Content-Length: ${value.length}\r\n\r\n`, value, get(forms[0])],
      expect: [[201], [200, 404]],
      after: (r) => {
        // Node handles pipelined requests concurrently (answers stay in order): the GET may run before the POST is stored.
        const before = model.get(keys[0].toString('hex'));
        const got = r.responses[1];
        if (got && !(got.status === 200 && got.body.equals(value)) && !(before ? got.status === 200 && got.body.equals(before) : got.status === 404)) {
          fail('pipelined POST+GET', 'the GET returns neither the old nor the new value');
        }
        if (r.responses[0]?.status === 201) model.set(keys[0].toString('hex'), value);
      },
    });
    const v2 = rng.bytes(100);
    addRaw({
      name: 'valid POST, then a malformed request on the same connection',
      steps: [`POST /data/${forms[1]} HTTP/1.1\r\n${H}Content-Length: ${v2.length}\r\n\r\n`, v2, 'BOGUS\0 / HTTP/1.1\r\n\r\n'],
      expect: [[201], [400]],
      after: (r) => {
        if (r.responses[0]?.status === 201) model.set(keys[1].toString('hex'), v2);
      },
    });
    const smuggled = `DELETE /data/${forms[2]} HTTP/1.1\r\n${H}\r\n`;
    addRaw({
      name: 'a GET whose body looks like another request',
      steps: [`GET /data/${forms[2]} HTTP/1.1\r\n${H}Content-Length: ${smuggled.length}\r\n\r\n${smuggled}`, get(forms[2])],
      expect: [[200, 404], [200, 404]],
      after: (r) => {
        const want = model.get(keys[2].toString('hex'));
        for (const res of r.responses) if (want ? !res.body.equals(want) : res.status !== 404) fail('smuggled body', 'a GET body was executed as a request');
      },
    });
    addRaw({ name: 'pipelined HEAD and GET', steps: [`HEAD /data/${forms[0]} HTTP/1.1\r\n${H}\r\n${get(forms[0])}`], methods: ['HEAD', 'GET'], expect: [[200, 404], [200, 404]] });
  }
  // Slow clients: a request dribbled in byte by byte.
  {
    const form = keyForms(owned[90])[0];
    const req = get(form);
    addRaw({
      name: 'request sent one byte at a time',
      steps: [...req].flatMap((ch, i) => (i % 8 === 0 ? [ch, { delayMs: 1 }] : [ch])),
      expect: [[200, 404]],
      after: (r) => {
        const want = model.get(owned[90].toString('hex'));
        if (r.responses[0] && (want ? !r.responses[0].body.equals(want) : r.responses[0].status !== 404)) fail('slow request', 'wrong answer');
      },
    });
  }

  const rawStarted = Date.now();
  for (let i = rawCases.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [rawCases[i], rawCases[j]] = [rawCases[j], rawCases[i]];
  }
  for (const c of rawCases) {
    await runRaw(c);
    await validOp('valid after raw');
  }
  t.comment(`${rawCases.length} raw-socket requests in ${Date.now() - rawStarted} ms`);

  // --------------------------------- concurrent lanes: hostile + valid at once
  {
    const lanes = 8;
    const perLane = 40;
    const laneStarted = Date.now();
    // Each lane owns its keys, so the model stays exact.
    const laneKeys = Array.from({ length: lanes }, (_, l) => owned.filter((_, i) => i % lanes === l && i >= 100));
    const laneRng = Array.from({ length: lanes }, (_, l) => new Rng(seed + 17 * (l + 1)));
    const hostile = (r: Rng, key: Buffer): RawCase => {
      const form = keyForms(key)[0];
      switch (r.int(6)) {
        case 0:
          return { name: 'lane: garbage', steps: [r.bytes(1 + r.int(500)), '\r\n\r\n'], expect: [[400, 404, 405, 413, 431]], noneOk: true, end: 'half' };
        case 1:
          return { name: 'lane: truncated body', steps: [`POST /data/${form} HTTP/1.1\r\n${H}Content-Length: 900\r\n\r\n`, 'z'.repeat(r.int(899))], expect: [[400]], noneOk: true, end: r.next() < 0.5 ? 'half' : 'destroy' };
        case 2:
          return { name: 'lane: oversize', steps: [`POST /data/${form} HTTP/1.1\r\n${H}Content-Length: ${LIMIT + 1 + r.int(1000)}\r\n\r\n`], expect: [[413]] };
        case 3:
          return { name: 'lane: bad key', steps: [`DELETE /data/${r.pick(KEY_SPECIFIC.filter((k) => !oracleKey(decodeParam(k), KEY_SIZE) && k.length < 200))} HTTP/1.1\r\n${H}\r\n`], expect: [[400]] };
        case 4:
          return { name: 'lane: bad method', steps: [`${r.pick(['PATCH', 'PUT', 'TRACE', 'PROPFIND'])} /data/${form} HTTP/1.1\r\n${H}Content-Length: 1\r\n\r\nx`], expect: [[405]] };
        default:
          return { name: 'lane: bad vdisk', steps: [`POST /vdisks/${r.pick(['-1', '1e400', '4294967296', '%ff'])}/remount HTTP/1.1\r\n${H}\r\n`], expect: [[400]] };
      }
    };
    await Promise.all(
      laneKeys.map(async (keys, l) => {
        const r = laneRng[l];
        for (let i = 0; i < perLane; i++) {
          const key = r.pick(keys);
          await runRaw(hostile(r, key));
          const form = r.pick(keyForms(key));
          const op = r.next();
          if (op < 0.5) await send(fixed(`lane GET ${form}`, 'GET', `/data/${form}`, undefined, () => dataExpect('GET', form)));
          else if (op < 0.9) {
            const v = r.bytes(r.pick(sizes));
            await send(fixed(`lane POST ${form}`, 'POST', `/data/${form}`, v, () => dataExpect('POST', form, v)));
          } else await send(fixed(`lane DELETE ${form}`, 'DELETE', `/data/${form}`, undefined, () => dataExpect('DELETE', form)));
        }
      }),
    );
    t.comment(`${lanes} concurrent lanes × ${perLane} hostile + valid pairs in ${Date.now() - laneStarted} ms`);
  }

  // ------------------------------------------------------------ verdict
  const verifyAll = async (label: string) => {
    let checked = 0;
    for (const [hex, value] of model) {
      const key = Buffer.from(hex, 'hex');
      const form = rng.pick(keyForms(key));
      const res = await client.request('GET', `/data/${form}`);
      checked++;
      if (value === null ? res.status !== 404 : !(res.status === 200 && res.body.equals(value))) {
        fail(label, `key ${hex} (${form}): ${res.status}, ${res.body.length} bytes; expected ${value === null ? '404' : `${value.length} bytes`}`);
      }
    }
    return checked;
  };
  const checked = await verifyAll('final read');
  t.comment(`${requests} requests; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}`);
  t.ok(requests > 3000, `${requests} requests sent`);
  // OYSTER_TEST_DUMP=<file>: every failure, not only the first 40.
  if (process.env.OYSTER_TEST_DUMP) fs.writeFileSync(process.env.OYSTER_TEST_DUMP, failures.join('\n'));
  t.same(failures.slice(0, 40), [], `no wrong answer (${failures.length} in all)`);
  t.equal(statuses.get(500) ?? 0, 0, 'no 500');
  t.ok(checked >= owned.length, `${checked} keys read back byte-exact after the sweep`);
  t.equal(node.child.exitCode, null, 'the node is still running');
  t.equal(node.child.pid, pid, 'same process');
  t.equal(node.output.filter((l) => l.includes('"node is serving"')).length, 1, 'it started once');
  const status = await client.request('GET', '/status');
  t.equal(status.status, 200, 'and still serves');
  t.same(badLogLines(node.output).slice(0, 10), [], 'no error, crash or stack trace in its output');

  // The data survives a restart.
  client.close();
  t.equal(await node.stop(), 0, 'SIGTERM: exit code 0');
  node = await startNode(files, 'n1');
  const again = new Client(node.url, 8);
  const before = failures.length;
  for (const [hex, value] of model) {
    const res = await again.request('GET', `/data/0x${hex}`);
    if (value === null ? res.status !== 404 : !(res.status === 200 && res.body.equals(value))) fail('after restart', `key ${hex}: ${res.status}`);
  }
  again.close();
  t.same(failures.slice(before, before + 20), [], `all ${model.size} keys intact after a restart`);
  t.equal(await node.stop(), 0, 'second SIGTERM: exit code 0');
});

function keyOf(n: number): Buffer {
  const k = Buffer.alloc(KEY_SIZE);
  k.writeUInt32LE(n);
  return k;
}
