// node.yaml http_max_body_size: a POST /data body above the limit
// is refused with 413 and a StatusExt body, whether its size is announced
// (Content-Length) or not (chunked), and the node stays healthy.
import http from 'node:http';
import t from 'tap';
import { client, failure, startRestNode, statusExt } from './lib/node';

const LIMIT = 1024;

/** A chunked body (no Content-Length): `count` chunks of `size` bytes. */
function chunked(count: number, size: number): ReadableStream<Uint8Array> {
  let left = count;
  return new ReadableStream({
    pull(c) {
      if (left-- <= 0) c.close();
      else c.enqueue(new Uint8Array(size).fill(0x61));
    },
  });
}

/**
 * Streams `total` bytes with node:http in chunked encoding and resolves with
 * the answer, or with the error if the connection failed before one came.
 */
function streamUpload(url: string, total: number, announce = false): Promise<{ status: number; body: string } | { error: string }> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (v: { status: number; body: string } | { error: string }) => {
      if (!settled) resolve(v);
      settled = true;
      req.destroy(); // the rest of the body is not sent
    };
    const headers = announce ? { 'Content-Length': String(total) } : undefined;
    const req = http.request(url, { method: 'POST', headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => done({ status: res.statusCode ?? 0, body }));
      res.on('error', (e) => done({ error: e.message }));
    });
    req.on('error', (e: NodeJS.ErrnoException) => done({ error: e.code ?? e.message }));
    let sent = 0;
    const write = () => {
      while (sent < total && !settled) {
        const chunk = Buffer.alloc(Math.min(16 * 1024, total - sent), 0x62);
        sent += chunk.length;
        if (!req.write(chunk)) {
          req.once('drain', write);
          return;
        }
      }
      req.end();
    };
    write();
  });
}

t.test(`http_max_body_size ${LIMIT} bytes`, async (t) => {
  const node = await startRestNode(t, { spec: { nodes: [{ name: 'solo' }], vdisks: 2 }, opts: { httpMaxBodySize: '1 KiB' } });
  const api = client(node.url);

  t.test('a body of exactly the limit is stored', async (t) => {
    const v = Buffer.alloc(LIMIT, 0x41);
    statusExt(t, await api.post('/data/1', v), 201, true, 'Created');
    t.ok((await api.get('/data/1')).body.equals(v));
  });

  t.test('a larger body with Content-Length: 413', async (t) => {
    failure(t, await api.post('/data/2', Buffer.alloc(LIMIT + 1)), 413, /1025 bytes exceeds the limit of 1024 bytes/, 'one byte over');
    failure(t, await api.post('/data/3', Buffer.alloc(1024 * 1024)), 413, /limit of 1024 bytes/, '1 MiB');
    t.equal((await api.head('/data/2')).status, 404, 'nothing stored');
    t.equal((await api.head('/data/3')).status, 404, 'nothing stored');
  });

  t.test('a larger chunked body (no Content-Length): 413', async (t) => {
    failure(t, await api.post('/data/4', chunked(3, 500)), 413, /limit of 1024 bytes/, '1500 bytes in 3 chunks');
    t.equal((await api.head('/data/4')).status, 404, 'nothing stored');
    statusExt(t, await api.post('/data/5', chunked(2, 400)), 201, true, 'Created', 'a chunked body within the limit');
    t.equal((await api.get('/data/5')).body.length, 800);
  });

  t.test('a client still sending a large body gets the 413', async (t) => {
    const answer = (r: { status: number; body: string } | { error: string }) =>
      'status' in r ? { status: r.status, ok: (JSON.parse(r.body) as { ok: boolean }).ok } : r;
    t.same(answer(await streamUpload(`${node.url}/data/6`, 4 * 1024 * 1024)), { status: 413, ok: false }, 'chunked');
    t.same(answer(await streamUpload(`${node.url}/data/6`, 4 * 1024 * 1024, true)), { status: 413, ok: false }, 'with Content-Length');
    t.equal((await api.head('/data/6')).status, 404, 'nothing stored');
    // Beyond what the node is willing to drop, the client is cut off: no answer, but no harm either.
    const huge = await streamUpload(`${node.url}/data/6`, 40 * 1024 * 1024);
    t.ok('error' in huge || huge.status === 413, 'a 40 MiB upload ends with a reset or a 413');
    t.equal((await api.head('/data/6')).status, 404, 'nothing stored');
  });

  t.test('the limit is for values; other endpoints ignore a body', async (t) => {
    statusExt(t, await api.post('/vdisks/0/remount', Buffer.alloc(4 * LIMIT)), 200, true, undefined, 'remount with a body');
    t.equal((await api.call('GET', '/status', undefined)).status, 200);
  });

  t.test('the node stays healthy', async (t) => {
    for (let i = 0; i < 5; i++) t.equal((await api.post(`/data/${100 + i}`, 'fine')).status, 201);
    t.equal((await api.get('/data/104')).text, 'fine');
    t.equal((await api.get('/status')).status, 200);
    t.ok(node.alive());
    t.equal(await node.proc.stop(), 0, 'and stops cleanly');
  });
});
