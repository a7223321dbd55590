// The memory of request bodies is bounded across connections
// (http_body_memory_limit): 16 connections stalling near-limit bodies keep
// the node's resident set under the bound while other clients are served;
// a body of known length is written as it arrives and holds its windows of
// the budget (its length if less), so bodies larger than the whole budget are stored; bodies that
// find no room are refused with 503 and Retry-After, unread; an admitted
// body completes byte-exact; the buffers bodies and answers pass through
// are kept by size for the next ones, within the budget.
import fs from 'node:fs';
import net from 'node:net';
import t from 'tap';
import { BodyBudget, VALUE_BUFFER } from '../../src/rest/body-budget';
import { WINDOW, WINDOWS } from '../../src/rest/middleware/streamed-body';
import { call, client, startRestNode, waitFor } from './lib/node';

const MiB = 1024 * 1024;
const MAX_BODY = 32 * MiB;
const BUDGET = 8 * MiB;
// What a body written as it arrives holds of the budget (src/rest/middleware/streamed-body.ts).
const HELD = WINDOWS * WINDOW;

/** Peak and current resident set of a process, in bytes. */
function memory(pid: number): { hwm: number; rss: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)![1]) * 1024;
  return { hwm: kb('VmHWM'), rss: kb('VmRSS') };
}

interface Upload {
  socket: net.Socket;
  /** Everything the node answered. */
  answer: () => string;
  closed: Promise<void>;
  /** Sends the body's last byte. */
  finish: () => void;
}

/** A POST of `length` bytes whose last byte is held back; the rest is sent as fast as the node reads it. */
function stalledUpload(port: number, key: number, length: number, fill: number): Upload {
  const socket = net.connect(port, '127.0.0.1');
  let answer = '';
  socket.on('data', (d) => (answer += d.toString('latin1')));
  socket.on('error', () => undefined); // a refused body's connection is closed under the writer
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  const chunk = Buffer.alloc(MiB, fill);
  let sent = 0;
  const pump = () => {
    while (sent < length - 1 && !socket.destroyed) {
      const n = Math.min(chunk.length, length - 1 - sent);
      sent += n;
      if (!socket.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return;
    }
  };
  socket.on('connect', () => {
    socket.write(`POST /data/${key} HTTP/1.1\r\nHost: x\r\nContent-Length: ${length}\r\n\r\n`);
    pump();
  });
  socket.on('drain', pump);
  return { socket, answer: () => answer, closed, finish: () => socket.write(Buffer.from([fill])) };
}

t.test('bodies in flight stay within http_body_memory_limit', async (t) => {
  const node = await startRestNode(t, {
    spec: { nodes: [{ name: 'solo' }], vdisks: 4 },
    opts: { httpMaxBodySize: MAX_BODY, extra: { http_body_memory_limit: BUDGET } },
  });
  const api = client(node.url);
  const pid = node.proc.child.pid!;
  const port = Number(new URL(node.url).port);
  // Warm up: the paths every request takes, so the baseline holds their code.
  for (let i = 0; i < 200; i++) await api.post(`/data/${i}`, Buffer.alloc(1024, i));
  const before = memory(pid);

  const uploads = Array.from({ length: 16 }, (_, i) => stalledUpload(port, 100 + i, MAX_BODY - 1, i + 1));
  // While they stall, small requests are served.
  const served: number[] = [];
  const started = Date.now();
  while (Date.now() - started < 7000) {
    // Keys the uploads do not write: a write that starts later than an upload wins over it.
    const k = served.length % 100;
    served.push((await api.post(`/data/${k}`, Buffer.alloc(1024, 7))).status, (await api.get(`/data/${k}`)).status);
  }
  t.ok(served.length > 100, `${served.length} small requests answered while large bodies stalled`);
  t.same([...new Set(served)].sort(), [200, 201], 'every small request succeeded');

  // Bodies that found no room within 5 s were refused, unread, and their connections closed.
  const refused = () => uploads.filter((u) => u.answer().startsWith('HTTP/1.1 503'));
  await waitFor('the refused uploads to be answered', async () => refused().length >= 16 - BUDGET / HELD, 20_000);
  const refusals = refused();
  t.equal(refusals.length, 16 - BUDGET / HELD, `${refusals.length} uploads refused: ${BUDGET / HELD} fit the budget`);
  for (const u of refusals) {
    t.match(u.answer(), /Retry-After: 5/i);
    t.match(u.answer(), /http_body_memory_limit/);
  }
  await Promise.all(refusals.map((u) => u.closed));
  const metrics = await (await fetch(`${node.url}/metrics`)).text();
  t.match(metrics, new RegExp(`^oyster_rest_body_refused_total(?:\\{[^}]*\\})? ${refusals.length}$`, 'm'));
  t.match(metrics, new RegExp(`^oyster_rest_body_bytes(?:\\{[^}]*\\})? ${BUDGET}$`, 'm'), 'the admitted bodies hold the budget');

  const peak = memory(pid).hwm - before.hwm;
  // Besides the budget: the pieces already written and not yet collected
  // (V8 frees buffers by the tens of MiB), the code and heap of the paths run.
  t.ok(peak < BUDGET + 96 * MiB, `peak resident set grew ${(peak / MiB).toFixed(0)} MiB with 16 stalled bodies of ${MAX_BODY / MiB} MiB (budget ${BUDGET / MiB} MiB)`);

  // The admitted ones complete byte-exact.
  const admitted = uploads.filter((u) => !refusals.includes(u));
  for (const u of admitted) u.finish();
  await waitFor('the admitted uploads to be stored', async () => admitted.every((u) => u.answer().startsWith('HTTP/1.1 201')), 20_000);
  for (const u of admitted) {
    const key = uploads.indexOf(u) + 100;
    const r = await api.get(`/data/${key}`);
    t.equal(r.status, 200);
    t.ok(r.body.equals(Buffer.alloc(MAX_BODY - 1, uploads.indexOf(u) + 1)), `key ${key}: the ${MAX_BODY - 1} bytes as sent`);
    u.socket.destroy();
  }
  for (const u of uploads) u.socket.destroy();
  await waitFor('the budget to be given back', async () => /^oyster_rest_body_bytes(?:\{[^}]*\})? 0$/m.test(await (await fetch(`${node.url}/metrics`)).text()), 10_000);
});

t.test('a body written as it arrives holds no more of the budget than its length', async (t) => {
  const SIZE = 256 * 1024;
  const COUNT = 12; // 3 MiB in all: less than the windows of one large body
  const node = await startRestNode(t, {
    spec: { nodes: [{ name: 'solo' }], vdisks: 4 },
    opts: { httpMaxBodySize: MAX_BODY, extra: { http_body_memory_limit: COUNT * SIZE } },
  });
  const api = client(node.url);
  const port = Number(new URL(node.url).port);
  const uploads = Array.from({ length: COUNT }, (_, i) => stalledUpload(port, 200 + i, SIZE, i + 1));
  const held = new RegExp(`^oyster_rest_body_bytes(?:\\{[^}]*\\})? ${COUNT * SIZE}$`, 'm');
  await waitFor(`all ${COUNT} bodies of ${SIZE} bytes to be admitted`, async () => held.test(await (await fetch(`${node.url}/metrics`)).text()), 10_000);
  for (const u of uploads) u.finish();
  await waitFor('the uploads to be stored', async () => uploads.every((u) => u.answer().startsWith('HTTP/1.1 201')), 20_000);
  for (const [i, u] of uploads.entries()) {
    const r = await api.get(`/data/${200 + i}`);
    t.ok(r.body.equals(Buffer.alloc(SIZE, i + 1)), `key ${200 + i}: the ${SIZE} bytes as sent`);
    u.socket.destroy();
  }
  const metrics = await (await fetch(`${node.url}/metrics`)).text();
  t.match(metrics, /^oyster_rest_body_refused_total(?:\{[^}]*\})? 0$/m, 'none refused');
});

t.test('a body without Content-Length takes budget as it grows', async (t) => {
  const node = await startRestNode(t, {
    spec: { nodes: [{ name: 'solo' }], vdisks: 4 },
    opts: { httpMaxBodySize: MAX_BODY, extra: { http_body_memory_limit: 4 * MiB } },
  });
  const value = Buffer.alloc(3 * MiB + 17, 9);
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      for (let at = 0; at < value.length; at += 256 * 1024) c.enqueue(value.subarray(at, at + 256 * 1024));
      c.close();
    },
  });
  t.equal((await call(node.url, 'POST', '/data/5', stream)).status, 201, 'a chunked body within the budget');
  t.ok((await call(node.url, 'GET', '/data/5')).body.equals(value));
});

t.test('freed buffers are kept by size for the next values, no more of them than the budget', async (t) => {
  const budget = new BodyBudget(3 * MiB);
  const part = 128 * 1024;
  const whole = budget.buffer();
  const small = budget.buffer(part);
  t.same([whole.length, small.length], [VALUE_BUFFER, part], 'buffers of the sizes asked for');
  budget.keep(small);
  budget.keep(whole);
  t.equal(budget.buffer(), whole, 'a kept buffer of VALUE_BUFFER bytes is handed out again');
  t.equal(budget.buffer(part), small, 'and one of the smaller size, for its size only');
  const odd = Buffer.alloc(1000);
  budget.keep(odd);
  t.not(budget.buffer(1000), odd, 'a buffer of a size never asked for is not kept');
  const four = [budget.buffer(), budget.buffer(), budget.buffer(), budget.buffer()];
  four.forEach((b) => budget.keep(b));
  const again = [budget.buffer(), budget.buffer(), budget.buffer(), budget.buffer()];
  t.equal(again.filter((b) => four.includes(b)).length, 3, 'kept buffers stay within the budget: three of 1 MiB in 3 MiB');
});

t.test('rooms a waiting holder was given count as parked before the next waiter is looked at', async (t) => {
  // A holder with two waiters: once the first is let in, its room is the
  // holder's, parked while the second waits. Counted only once the first's
  // promise settled, it kept the second out, and nothing looked again.
  const budget = new BodyBudget(100);
  let parked = 0;
  const holder = { parked: () => parked };
  const never = new AbortController().signal;
  t.ok(budget.takeNow(60), 'another holds 60 of 100');
  const first = budget.takeEventually(50, holder, never, () => (parked += 50));
  const second = budget.takeEventually(80, holder, never, () => (parked += 80));
  budget.give(60);
  const got = await Promise.race([Promise.all([first, second]), new Promise((resolve) => setTimeout(() => resolve('waiting'), 500))]);
  t.same(got, [true, true], 'both let in once the other gave its room back');
  t.equal(budget.inUse, 130, 'holding up to the limit more than it, parked');
});
