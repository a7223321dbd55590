// Large values over real HTTP: a 64 MiB value round-trips byte-exact (and
// its ranges), a node killed in the middle of a 256 MiB write holds the
// previous value or the new one after restart, never a part, and a flipped
// byte inside a large value is never served as the value.
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import t, { Test } from 'tap';
import { recordsIn, flipByte } from '../helpers/blob-files';
import { OysterProcess, startNode, writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import { call } from './lib/node';

const MiB = 1024 * 1024;
const KEY_SIZE = 16;

function pattern(n: number, seed: number): Buffer {
  const b = Buffer.allocUnsafe(n + 3);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    b.writeUInt32LE(x >>> 0, i);
  }
  return b.subarray(0, n);
}

const sha = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');

function peakRss(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(status)![1]) * 1024;
}

async function cluster(t: Test, maxBody: string) {
  const dir = tempDir(t);
  const files = await writeCluster(dir, { nodes: [{ name: 'n1' }], vdisks: 2, keySize: KEY_SIZE }, { httpMaxBodySize: maxBody, extra: { http_body_memory_limit: maxBody } });
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
  // Bodies and values are whole Buffers until the engine streams them: the
  // body's chunks, their join, and the value read back.
  t.ok(grew < 4 * value.length + 64 * MiB, `peak resident set grew ${(grew / MiB).toFixed(0)} MiB for a ${(value.length / MiB).toFixed(0)} MiB value`);
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
  // When to kill: half the body sent; moments after all of it was sent
  // (while the node receives its end, stores it, answers); once answered.
  const moments: Array<{ what: string; at: (sent: number) => boolean; delayMs: number }> = [
    { what: 'half the body sent', at: (s) => s >= big.length / 2, delayMs: 0 },
    ...[50, 300, 600, 750, 850, 950, 1100].map((delayMs) => ({ what: `${delayMs} ms after the body was sent`, at: (s: number) => s >= big.length, delayMs })),
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
  const r = await call(node.url, 'GET', '/data/77');
  t.ok(r.status >= 500, `the read fails (${r.status})`);
  t.ok(r.body.length < 1024 && !r.body.includes(value.subarray(0, 64)), 'no byte of the value is sent');
  t.ok((await metric()) > before, 'oyster_corrupt_records_total moved');
  await node.stop();
});
