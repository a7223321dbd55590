// Large values over real HTTP: 64 MiB and 1 GiB values round-trip
// byte-exact (and their ranges) while the node's resident set stays within a
// few windows of the value, a node killed in the middle of a 256 MiB write
// holds the previous value or the new one after restart, never a part, and a
// flipped byte inside a large value is never served as the value: the read
// is aborted and counted; ranges, HEAD and validators on a value read in
// parts, a reader that stalls cut off, stalled readers past half the budget
// holding small parts, pipelined GETs read slowly (sends
// that find the socket full, the rest written through Node's stream)
// answered exactly and in order, clients that leave mid-answer counted as
// no storage error, and a GET pipelined behind a streamed POST answered
// with the new value.
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import t, { Test } from 'tap';
import { recordsIn, flipByte } from '../helpers/blob-files';
import { OysterProcess, startNode, writeCluster } from '../helpers/oysterd';
import { native } from '../../src/store/native';
import { tempDir } from '../helpers/tmpdir';
import { Rng } from '../robustness/lib';
import { bodyBytes } from './lib/metrics';
import { call } from './lib/node';
import { peakRss } from '../helpers/memory';

const MiB = 1024 * 1024;
const KEY_SIZE = 16;

// Values of n bytes that differ from seed to seed.
const pattern = (n: number, seed: number): Buffer => new Rng(seed).bytes(n);

const sha = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');

// How much a node's peak resident set may grow while one large value goes
// in and out: the body's windows, the answer's buffer, the socket
// buffers, the pieces already written and not yet collected (V8 frees
// buffers by the tens of MiB), and the code and heap of the paths run for
// the first time. The value itself is 64 MiB or 1 GiB.
const RSS_GROWTH = 64 * MiB;

async function cluster(t: Test, budget: string, maxBody = budget) {
  const dir = tempDir(t);
  const files = await writeCluster(dir, { nodes: [{ name: 'n1' }], vdisks: 2, keySize: KEY_SIZE }, { httpMaxBodySize: maxBody, extra: { http_body_memory_limit: budget } });
  let proc: OysterProcess | null = null;
  t.teardown(async () => {
    if (proc && proc.child.exitCode === null && proc.child.signalCode === null) await proc.kill();
  });
  return {
    files,
    start: async () => (proc = await startNode(files, 'n1')),
  };
}

t.test('a 64 MiB value round-trips byte-exact', async (t) => {
  const c = await cluster(t, '128 MiB');
  const node = await c.start();
  const value = pattern(64 * MiB + 3, 1);
  const before = peakRss(node.child.pid!);
  const post = await call(node.url, 'POST', '/data/64', value);
  t.equal(post.status, 201);
  const get = await call(node.url, 'GET', '/data/64');
  t.equal(get.status, 200);
  t.equal(get.body.length, value.length);
  t.equal(sha(get.body), sha(value), 'the bytes as written');
  const part = await call(node.url, 'GET', '/data/64', undefined, { Range: `bytes=${32 * MiB}-${32 * MiB + MiB - 1}` });
  t.equal(part.status, 206);
  t.ok(part.body.equals(value.subarray(32 * MiB, 33 * MiB)), 'a range from the middle');
  const grew = peakRss(node.child.pid!) - before;
  // Written as it arrives, read in parts: the windows of the body, two
  // buffers of the answer, and what the code run for the first time takes.
  t.ok(grew < RSS_GROWTH, `peak resident set grew ${(grew / MiB).toFixed(0)} MiB for a ${(value.length / MiB).toFixed(0)} MiB value`);
});

t.test('a 1 GiB value round-trips byte-exact, the resident set bounded', async (t) => {
  const c = await cluster(t, '128 MiB', '2 GiB');
  const node = await c.start();
  const size = 1024 * MiB;
  // The value made as it is sent: 1 MiB blocks of a pattern, each stamped with its number.
  const block = pattern(MiB, 4);
  const blockAt = (i: number) => {
    const b = Buffer.from(block);
    b.writeUInt32LE(i, 0);
    return b;
  };
  const sent = crypto.createHash('sha256');
  const body = new ReadableStream<Uint8Array>({
    start() {},
    pull(ctl) {
      const i = (body as unknown as { i?: number }).i ?? 0;
      if (i === size / MiB) return ctl.close();
      (body as unknown as { i: number }).i = i + 1;
      const b = blockAt(i);
      sent.update(b);
      ctl.enqueue(b);
    },
  });
  const before = peakRss(node.child.pid!);
  const post = await fetch(`${node.url}/data/1024`, { method: 'POST', body, duplex: 'half', headers: { 'Content-Length': String(size) } } as RequestInit);
  t.equal(post.status, 201, 'stored');
  const get = await fetch(`${node.url}/data/1024`);
  t.equal(get.status, 200);
  t.equal(get.headers.get('content-length'), String(size));
  const got = crypto.createHash('sha256');
  let length = 0;
  for await (const piece of get.body as unknown as AsyncIterable<Uint8Array>) {
    got.update(piece);
    length += piece.length;
  }
  t.equal(length, size, 'every byte came back');
  t.equal(got.digest('hex'), sent.digest('hex'), 'the bytes as written');
  const part = await call(node.url, 'GET', '/data/1024', undefined, { Range: `bytes=${700 * MiB - 10}-${700 * MiB + 9}` });
  t.equal(part.status, 206);
  t.ok(part.body.equals(Buffer.concat([blockAt(699).subarray(MiB - 10), blockAt(700).subarray(0, 10)])), 'a range across two blocks, 700 MiB in');
  const grew = peakRss(node.child.pid!) - before;
  t.ok(grew < RSS_GROWTH, `peak resident set grew ${(grew / MiB).toFixed(0)} MiB for a 1 GiB value`);
});

/** Sends a POST of `value`; resolves with what the node answered before the connection ended. */
function post(port: number, key: string, value: Buffer, onSent: (bytes: number) => void): { done: Promise<string>; socket: net.Socket } {
  const socket = net.connect(port, '127.0.0.1');
  let answer = '';
  socket.on('data', (d) => (answer += d.toString('latin1')));
  socket.on('error', () => undefined);
  const done = new Promise<string>((resolve) => socket.on('close', () => resolve(answer)));
  socket.on('connect', () => {
    socket.write(`POST /data/${key} HTTP/1.1\r\nHost: x\r\nContent-Length: ${value.length}\r\nConnection: close\r\n\r\n`);
    let sent = 0;
    const pump = () => {
      while (sent < value.length) {
        const n = Math.min(MiB, value.length - sent);
        const ok = socket.write(value.subarray(sent, sent + n));
        sent += n;
        onSent(sent);
        if (!ok) return;
      }
    };
    socket.on('drain', pump);
    pump();
  });
  return { done, socket };
}

t.test('SIGKILL in the middle of a 256 MiB write: the previous value or the new one, never a part', async (t) => {
  const c = await cluster(t, '300 MiB');
  const big = pattern(256 * MiB, 2);
  const old = Buffer.from('the previous value');
  // When to kill: while the body is written as it arrives (a part of it
  // sent); moments after all of it was sent (while the node receives its
  // end, publishes it, answers); once answered.
  const moments: Array<{ what: string; at: (sent: number) => boolean; delayMs: number }> = [
    ...[0.1, 0.25, 0.5, 0.75, 0.95, 1].map((part) => ({ what: `${part * 100} % of the body sent`, at: (s: number) => s >= big.length * part, delayMs: 0 })),
    ...[50, 300].map((delayMs) => ({ what: `${delayMs} ms after the body was sent`, at: (s: number) => s >= big.length, delayMs })),
    { what: 'once answered', at: () => false, delayMs: 0 },
  ];
  const outcomes: string[] = [];
  for (const [i, m] of moments.entries()) {
    const key = String(1000 + i);
    let node = await c.start();
    t.equal((await call(node.url, 'POST', `/data/${key}`, old)).status, 201);
    let killed = false;
    const p = post(Number(new URL(node.url).port), key, big, (sent) => {
      if (killed || !m.at(sent)) return;
      killed = true;
      setTimeout(() => node.child.kill('SIGKILL'), m.delayMs);
    });
    if (m.what === 'once answered') {
      await waitForAnswer(p.socket);
      node.child.kill('SIGKILL');
    }
    const answer = await p.done;
    await node.exited;
    const acknowledged = answer.startsWith('HTTP/1.1 201');
    node = await c.start();
    const r = await call(node.url, 'GET', `/data/${key}`);
    t.equal(r.status, 200, `${m.what}: the key reads`);
    const which = r.body.equals(old) ? 'previous' : r.body.length === big.length && sha(r.body) === sha(big) ? 'new' : 'other';
    t.not(which, 'other', `${m.what}: the previous value or the whole new one (${which}; ${r.body.length} bytes)`);
    if (acknowledged) t.equal(which, 'new', `${m.what}: acknowledged, so the new value`);
    outcomes.push(`${m.what}: ${acknowledged ? 'acknowledged, ' : ''}${which}`);
    await node.stop();
  }
  t.comment(outcomes.join('; '));
});

async function waitUntil(check: () => Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A GET read to its end or until the connection fails. */
async function readAll(base: string, p: string, headers: Record<string, string> = {}): Promise<{ status: number; received: number; aborted: boolean }> {
  const res = await fetch(base + p, { headers });
  let received = 0;
  try {
    for await (const piece of res.body as unknown as AsyncIterable<Uint8Array>) received += piece.length;
  } catch {
    return { status: res.status, received, aborted: true };
  }
  const declared = Number(res.headers.get('content-length') ?? received);
  return { status: res.status, received, aborted: received < declared };
}

function waitForAnswer(socket: net.Socket): Promise<void> {
  return new Promise((resolve) => {
    const check = (d: Buffer) => {
      if (!d.toString('latin1').startsWith('HTTP/1.1 ')) return;
      socket.off('data', check);
      resolve();
    };
    socket.on('data', check);
  });
}

t.test('a flipped byte inside a large value is never served as the value', async (t) => {
  const c = await cluster(t, '64 MiB');
  let node = await c.start();
  const value = pattern(16 * MiB, 3);
  t.equal((await call(node.url, 'POST', '/data/77', value)).status, 201);
  t.equal(await node.stop(), 0);
  const vdiskDir = path.join(c.files.disks.n1.disk1, 'bob', String(77 % 2));
  let flipped = 0;
  const key = Buffer.alloc(KEY_SIZE);
  key.writeUInt8(77, 0);
  for (const part of fs.readdirSync(vdiskDir)) {
    for (const f of fs.readdirSync(path.join(vdiskDir, part)).filter((n) => n.endsWith('.blob'))) {
      const blob = path.join(vdiskDir, part, f);
      const rec = recordsIn(blob, KEY_SIZE).find((r) => r.key.equals(key));
      if (!rec) continue;
      flipByte(blob, rec.offset + rec.headerSize + 12 * MiB + 5);
      flipped++;
    }
  }
  t.equal(flipped, 1, 'one byte flipped 12 MiB into the value');
  node = await c.start();
  const metric = async () => Number(/^oyster_corrupt_records_total\{[^}]*disk="disk1"[^}]*\} (\d+)/m.exec(await (await fetch(`${node.url}/metrics`)).text())?.[1] ?? 0);
  const before = await metric();
  // The value is sent as it is read and checked, 64 KiB block by block: the
  // damaged block ends the answer by closing the connection, short of its
  // Content-Length, so no client takes what it got for the value.
  const r = await readAll(node.url, '/data/77');
  t.ok(r.status >= 500 || r.aborted, `the read fails (${r.status}, ${r.aborted ? 'aborted' : 'complete'})`);
  t.ok(r.received < 12 * MiB + 64 * 1024, `no byte of the damaged block or after it is sent (${r.received} bytes received)`);
  t.ok((await metric()) > before, 'oyster_corrupt_records_total moved');
  const head = await call(node.url, 'GET', '/data/77', undefined, { Range: `bytes=0-${MiB - 1}` });
  t.equal(head.status, 206, 'a range before the damage reads');
  t.ok(head.body.equals(value.subarray(0, MiB)), 'byte-exact');
  const across = await readAll(node.url, '/data/77', { Range: `bytes=${12 * MiB - 256 * 1024}-${13 * MiB - 1}` });
  t.ok(across.status >= 500 || across.aborted, 'a range over the damaged block fails');
  // The header block leaves with the first part, once it is checked: a
  // range that starts in the damaged block gets an error answer, not a
  // success cut short.
  const first = await call(node.url, 'GET', '/data/77', undefined, { Range: `bytes=${12 * MiB}-${13 * MiB - 1}` });
  t.equal(first.status, 500, 'a range that starts in the damaged block answers 500');
  t.same(JSON.parse(first.body.toString()).ok, false, 'with a StatusExt body');
  t.match(first.headers.get('content-type') ?? '', /^application\/json/, 'labelled as JSON');
  t.ok((await call(node.url, 'GET', '/data/77', undefined, { Range: `bytes=0-${MiB - 1}` })).body.equals(value.subarray(0, MiB)), 'and the connection serves on');
  await node.stop();
});

/**
 * Rewrites the record of `key` (the last of its blob) as an engine before
 * block checksums wrote it: no flag 0x04, no checksums after the value, its
 * CRCs computed again; the blob's index goes, so that the blob is scanned.
 */
function makeLegacy(vdiskDir: string, key: Buffer): void {
  for (const part of fs.readdirSync(vdiskDir)) {
    for (const f of fs.readdirSync(path.join(vdiskDir, part)).filter((n) => n.endsWith('.blob'))) {
      const blob = path.join(vdiskDir, part, f);
      const rec = recordsIn(blob, KEY_SIZE).find((r) => r.key.equals(key));
      if (!rec) continue;
      const data = fs.readFileSync(blob);
      const end = rec.offset + rec.headerSize + rec.valueSize;
      const record = Buffer.from(data.subarray(rec.offset, end));
      const k = KEY_SIZE;
      record[4] = 0;
      record.writeUInt32LE(native.crc32c(Buffer.concat([record.subarray(0, 36 + k), record.subarray(44 + k)])), 36 + k);
      record.writeUInt32LE(native.crc32c(record.subarray(0, 40 + k)), 40 + k);
      fs.writeFileSync(blob, Buffer.concat([data.subarray(0, rec.offset), record]));
      fs.rmSync(blob.replace(/\.blob$/, '.index'), { force: true });
      return;
    }
  }
  throw new Error(`no record of ${key.toString('hex')} in ${vdiskDir}`);
}

t.test('a value without block checksums: a range short of its end is checked whole before its last part', async (t) => {
  const c = await cluster(t, '64 MiB');
  let node = await c.start();
  const size = 3 * MiB + 11;
  const value = pattern(size, 9);
  t.equal((await call(node.url, 'POST', '/data/91', value)).status, 201);
  t.equal(await node.stop(), 0);
  const vdiskDir = path.join(c.files.disks.n1.disk1, 'bob', String(91 % 2));
  const key = Buffer.alloc(KEY_SIZE);
  key.writeUInt8(91, 0);
  makeLegacy(vdiskDir, key);
  node = await c.start();
  t.ok((await call(node.url, 'GET', '/data/91')).body.equals(value), 'read back whole');
  for (const [from, to] of [[0, 99], [MiB, 2 * MiB + 5], [size - 10, size - 1]]) {
    const r = await call(node.url, 'GET', '/data/91', undefined, { Range: `bytes=${from}-${to}` });
    t.equal(r.status, 206, `bytes ${from}-${to}`);
    t.ok(r.body.equals(value.subarray(from, to + 1)), `bytes ${from}-${to}: byte-exact`);
  }
  t.equal(await node.stop(), 0);
  // A byte past every range asked for below, 2.5 MiB into the value.
  for (const part of fs.readdirSync(vdiskDir)) {
    for (const f of fs.readdirSync(path.join(vdiskDir, part)).filter((n) => n.endsWith('.blob'))) {
      const blob = path.join(vdiskDir, part, f);
      const rec = recordsIn(blob, KEY_SIZE).find((r) => r.key.equals(key));
      if (rec) flipByte(blob, rec.offset + rec.headerSize + 2 * MiB + MiB / 2);
    }
  }
  node = await c.start();
  // One part: checked before any byte leaves, so the error is the answer.
  const small = await call(node.url, 'GET', '/data/91', undefined, { Range: 'bytes=0-99' });
  t.equal(small.status, 500, 'a range of one part answers 500');
  t.same(JSON.parse(small.body.toString()).ok, false, 'with a StatusExt body');
  // Two parts: on plain HTTP one send covers both, and the check comes before any byte; over TLS (or
  // with a smaller send) the first would leave unchecked and the connection close short before the second.
  const two = await readAll(node.url, '/data/91', { Range: `bytes=0-${2 * MiB - 1}` });
  t.ok(two.status >= 500 || two.aborted, `a range of two parts is cut short (${two.status}, ${two.received} bytes)`);
  t.ok(two.received <= MiB, 'nothing of its last part is sent');
  t.ok((await call(node.url, 'HEAD', '/data/91')).status === 200, 'HEAD reads no value');
  await node.stop();
});

t.test('HTTP on a value read in parts: HEAD, ranges, conditional requests', async (t) => {
  const c = await cluster(t, '64 MiB');
  const node = await c.start();
  const size = 8 * MiB + 5;
  const value = pattern(size, 5);
  value.write('%PDF-1.7', 0, 'latin1');
  const stored = await call(node.url, 'POST', '/data/88', value);
  t.equal(stored.status, 201);
  const etag = stored.headers.get('etag')!;
  const head = await call(node.url, 'HEAD', '/data/88');
  t.equal(head.status, 200);
  t.equal(head.headers.get('content-length'), String(size), 'HEAD: Content-Length');
  t.equal(head.headers.get('content-type'), 'application/pdf', 'HEAD: Content-Type from the first bytes');
  t.equal(head.headers.get('etag'), etag, 'HEAD: the ETag the write answered');
  t.ok(head.headers.get('last-modified'), 'HEAD: Last-Modified');
  t.equal(head.headers.get('accept-ranges'), 'bytes', 'HEAD: Accept-Ranges, as for a value read whole');
  const ranges: Array<[string, number, number]> = [
    ['bytes=0-99', 0, 99],
    [`bytes=${4 * MiB - 7}-${4 * MiB + 70000}`, 4 * MiB - 7, 4 * MiB + 70000],
    [`bytes=${size - 100}-${size - 1}`, size - 100, size - 1],
    [`bytes=${size - 100}-${size + 1000}`, size - 100, size - 1],
    ['bytes=-65537', size - 65537, size - 1],
    [`bytes=${65536}-`, 65536, size - 1],
  ];
  for (const [range, start, end] of ranges) {
    const r = await call(node.url, 'GET', '/data/88', undefined, { Range: range });
    t.equal(r.status, 206, `${range}: 206`);
    t.equal(r.headers.get('content-range'), `bytes ${start}-${end}/${size}`, `${range}: Content-Range`);
    t.ok(r.body.equals(value.subarray(start, end + 1)), `${range}: the bytes`);
  }
  const past = await call(node.url, 'GET', '/data/88', undefined, { Range: `bytes=${size}-` });
  t.equal(past.status, 416, 'a range past the end: 416');
  t.equal(past.headers.get('content-range'), `bytes */${size}`);
  t.equal((await call(node.url, 'GET', '/data/88', undefined, { 'If-None-Match': etag })).status, 304, 'If-None-Match: 304');
  t.equal((await call(node.url, 'POST', '/data/88', value, { 'If-Match': '"0-0-0"' })).status, 412, 'If-Match of another version: 412, nothing written');
  const whole = await call(node.url, 'GET', '/data/88');
  t.equal(whole.headers.get('etag'), etag, 'the value is unchanged');
  t.ok(whole.body.equals(value), 'the whole value');
  await node.stop();
});

t.test('a client that reads nothing of a large answer is cut off after http_request_timeout, its budget given back', async (t) => {
  const dir = tempDir(t);
  const files = await writeCluster(
    dir,
    { nodes: [{ name: 'n1' }], vdisks: 2, keySize: KEY_SIZE },
    { extra: { http_request_timeout: '2s', http_headers_timeout: '1s', http_body_memory_limit: '64 MiB' } },
  );
  const node = await startNode(files, 'n1');
  t.teardown(() => node.kill());
  t.equal((await call(node.url, 'POST', '/data/9', pattern(64 * MiB, 9))).status, 201);
  const socket = net.connect(Number(new URL(node.url).port), '127.0.0.1');
  socket.on('error', () => undefined);
  await new Promise((resolve) => socket.on('connect', resolve));
  socket.write('GET /data/9 HTTP/1.1\r\nHost: x\r\n\r\n');
  socket.pause(); // nothing read: the kernel's buffers fill, then the node's writes wait
  await waitUntil(async () => (await bodyBytes(node.url)) > 0, 5000);
  const started = Date.now();
  await waitUntil(async () => (await bodyBytes(node.url)) === 0, 20_000);
  const waited = Date.now() - started;
  t.ok(waited >= 1000, `the node gave the answer up after ${waited} ms (http_request_timeout 2 s), its share of http_body_memory_limit given back`);
  let received = 0;
  socket.on('data', (d: Buffer) => (received += d.length));
  socket.resume();
  await new Promise((resolve) => socket.on('close', resolve));
  t.ok(received < 64 * MiB, `the connection was closed short of the value (${(received / MiB).toFixed(1)} MiB received)`);
  const again = await call(node.url, 'GET', '/data/9', undefined, { Range: 'bytes=0-9' });
  t.equal(again.status, 206, 'others are served');
});

t.test('clients that read nothing of large answers: past half the budget each holds a small part, and others are served', async (t) => {
  const c = await cluster(t, '16 MiB', '64 MiB');
  const node = await c.start();
  const value = pattern(32 * MiB, 31);
  t.equal((await call(node.url, 'POST', '/data/31', value)).status, 201);
  // More stalled readers than the budget holds parts of 1 MiB: the first
  // eight take 1 MiB each (half the budget), the rest 128 KiB.
  const readers = 40;
  const sockets: net.Socket[] = [];
  t.teardown(() => sockets.forEach((s) => s.destroy()));
  const started: Array<Promise<string>> = [];
  for (let i = 0; i < readers; i++) {
    const socket = net.connect(Number(new URL(node.url).port), '127.0.0.1');
    socket.on('error', () => undefined);
    sockets.push(socket);
    await new Promise((resolve) => socket.on('connect', resolve));
    started.push(new Promise((resolve) => socket.once('data', (d: Buffer) => (socket.pause(), resolve(d.subarray(0, 12).toString('latin1'))))));
    socket.write('GET /data/31 HTTP/1.1\r\nHost: x\r\n\r\n');
  }
  t.same(new Set(await Promise.all(started)), new Set(['HTTP/1.1 200']), `all ${readers} answers under way`);
  const held = await bodyBytes(node.url);
  t.equal(held, 8 * MiB + (readers - 8) * 128 * 1024, `${readers} stalled answers hold ${(held / MiB).toFixed(2)} MiB of the 16 MiB budget`);
  const t0 = Date.now();
  const other = await call(node.url, 'GET', '/data/31');
  t.equal(other.status, 200, 'another client reads the value meanwhile');
  t.ok(other.body.equals(value), 'byte-exact');
  t.ok(Date.now() - t0 < 4000, `without waiting for room (${Date.now() - t0} ms)`);
  sockets.forEach((s) => s.destroy());
  await waitUntil(async () => (await bodyBytes(node.url)) === 0, 10_000);
  t.pass('the stalled answers gave their parts back once their clients left');
  await node.stop();
});

// With a budget of 64 MiB an answer's parts are of 1 MiB; with 1 MiB, of
// 128 KiB, as a part of 1 MiB would pass its half (src/rest/http/opened-value.ts).
for (const budget of ['64 MiB', '1 MiB']) {
  t.test(`pipelined GETs of large values read slowly: every answer whole, exact and in order (http_body_memory_limit ${budget})`, async (t) => {
    const c = await cluster(t, budget, '64 MiB');
    const node = await c.start();
    const a = pattern(12 * MiB + 7, 71);
    const b = pattern(3 * MiB + 5, 72);
    t.equal((await call(node.url, 'POST', '/data/71', a)).status, 201);
    t.equal((await call(node.url, 'POST', '/data/72', b)).status, 201);
    const socket = net.connect(Number(new URL(node.url).port), '127.0.0.1');
    await new Promise((resolve) => socket.on('connect', resolve));
    // A reader that stops for a while after every MiB: the node's sends find
    // the socket's buffer full again and again.
    const chunks: Buffer[] = [];
    let received = 0;
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      const before = received;
      received += d.length;
      if (Math.floor(received / MiB) > Math.floor(before / MiB)) {
        socket.pause();
        setTimeout(() => socket.resume(), 15);
      }
    });
    const closed = new Promise((resolve) => socket.on('close', resolve));
    socket.write(
      'GET /data/71 HTTP/1.1\r\nHost: x\r\n\r\n' +
        `GET /data/72 HTTP/1.1\r\nHost: x\r\nRange: bytes=1000-${2 * MiB}\r\n\r\n` +
        'GET /data/71 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    );
    await closed;
    let all = Buffer.concat(chunks);
    const answers: Array<{ status: number; body: Buffer }> = [];
    while (all.length > 0) {
      const headEnd = all.indexOf('\r\n\r\n');
      const head = all.subarray(0, headEnd).toString('latin1');
      const length = Number(/content-length: (\d+)/i.exec(head)?.[1]);
      answers.push({ status: Number(head.slice(9, 12)), body: all.subarray(headEnd + 4, headEnd + 4 + length) });
      all = all.subarray(headEnd + 4 + length);
    }
    t.same(answers.map((r) => r.status), [200, 206, 200], 'three answers, in the order asked');
    t.ok(answers[0].body.equals(a), 'the first value, byte-exact');
    t.ok(answers[1].body.equals(b.subarray(1000, 2 * MiB + 1)), 'the range of the second');
    t.ok(answers[2].body.equals(a), 'the first value again');
    await node.stop();
  });
}

t.test('clients that leave in the middle of large answers: no storage error counted, the node serves on', async (t) => {
  const c = await cluster(t, '64 MiB');
  const node = await c.start();
  const value = pattern(16 * MiB, 81);
  const other = pattern(2 * MiB, 82);
  t.equal((await call(node.url, 'POST', '/data/81', value)).status, 201);
  t.equal((await call(node.url, 'POST', '/data/82', other)).status, 201);
  const metrics = async () => (await fetch(`${node.url}/metrics`)).text();
  // Connections opened as others close may get their descriptors' numbers:
  // no byte of an answer to a client that left may reach them.
  const beside: Array<Promise<boolean>> = [];
  const errorsOf = (text: string) => Number(/^oyster_engine_operations_total\{[^}]*operation="get"[^}]*outcome="error"[^}]*\} (\d+)/m.exec(text)?.[1] ?? 0);
  const before = errorsOf(await metrics());
  for (let i = 0; i < 8; i++) {
    const socket = net.connect(Number(new URL(node.url).port), '127.0.0.1');
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.on('connect', resolve));
    socket.write('GET /data/81 HTTP/1.1\r\nHost: x\r\n\r\n');
    // Some of the answer, then gone: a reset (i even) or a close.
    await new Promise<void>((resolve) => {
      let got = 0;
      socket.on('data', (d: Buffer) => {
        got += d.length;
        if (got < (i + 1) * 256 * 1024) return;
        if (i % 2 === 0) socket.resetAndDestroy();
        else socket.destroy();
        for (let j = 0; j < 3; j++) beside.push(call(node.url, 'GET', '/data/82').then((r) => r.body.equals(other)));
        resolve();
      });
    });
  }
  const again = await call(node.url, 'GET', '/data/81');
  t.ok(again.body.equals(value), 'the value reads whole afterwards');
  t.same(await Promise.all(beside), beside.map(() => true), 'every answer opened meanwhile holds its own value');
  t.equal(errorsOf(await metrics()), before, 'oyster_engine_operations_total{operation="get",outcome="error"} unchanged');
  await node.stop();
});

t.test('a GET pipelined behind a streamed POST of the same key answers with the new value', async (t) => {
  const c = await cluster(t, '64 MiB');
  const node = await c.start();
  t.equal((await call(node.url, 'POST', '/data/66', Buffer.from('old'))).status, 201);
  const value = pattern(6 * MiB, 6);
  const socket = net.connect(Number(new URL(node.url).port), '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (d: Buffer) => chunks.push(d));
  await new Promise((resolve) => socket.on('connect', resolve));
  // One write: the POST with its whole body and the GET right behind it.
  socket.write(
    Buffer.concat([
      Buffer.from(`POST /data/66 HTTP/1.1\r\nHost: x\r\nContent-Length: ${value.length}\r\n\r\n`),
      value,
      Buffer.from('GET /data/66 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
    ]),
  );
  await new Promise((resolve) => socket.on('close', resolve));
  const all = Buffer.concat(chunks);
  const second = all.indexOf('HTTP/1.1 200', 10);
  t.ok(all.subarray(0, 12).toString() === 'HTTP/1.1 201', 'the POST answered first, 201');
  t.ok(second > 0, 'the GET answered 200');
  const body = all.subarray(all.indexOf('\r\n\r\n', second) + 4);
  t.equal(body.length, value.length, 'with the whole new value');
  t.ok(body.equals(value), 'byte-exact');
  await node.stop();
});
