// The REST server's limits from node.yaml: a client that sends its headers
// too slowly, or stalls in its body, is answered 408 and cut off within the
// configured time (and the body's budget is given back); connections past
// http_max_connections are closed while the others are served.
import net from 'node:net';
import t from 'tap';
import { client, sleep, startRestNode, waitFor } from './lib/node';

/** A raw connection recording what the node sends and when it closes. */
function raw(port: number): { socket: net.Socket; got: () => string; closedAt: Promise<number> } {
  const socket = net.connect(port, '127.0.0.1');
  let got = '';
  socket.on('data', (d) => (got += d.toString('latin1')));
  socket.on('error', () => undefined);
  const closedAt = new Promise<number>((resolve) => socket.on('close', () => resolve(Date.now())));
  return { socket, got: () => got, closedAt };
}

t.test('slow headers and stalled bodies are cut off in time', async (t) => {
  const node = await startRestNode(t, {
    spec: { nodes: [{ name: 'solo' }], vdisks: 2 },
    opts: { extra: { http_headers_timeout: '1s', http_request_timeout: '2s' } },
  });
  const port = Number(new URL(node.url).port);

  const slowHeaders = raw(port);
  const started = Date.now();
  slowHeaders.socket.write('GET /data/1 HTTP/1.1\r\nHost: x\r\n');
  const headersClosed = await slowHeaders.closedAt;
  t.match(slowHeaders.got(), /^HTTP\/1\.1 408/, 'headers not complete within http_headers_timeout: 408');
  t.ok(headersClosed - started >= 900 && headersClosed - started < 3000, `closed after ${headersClosed - started} ms (limit 1 s)`);

  const stalled = raw(port);
  const bodyStarted = Date.now();
  stalled.socket.write(`POST /data/2 HTTP/1.1\r\nHost: x\r\nContent-Length: ${1024 * 1024}\r\n\r\n`);
  stalled.socket.write(Buffer.alloc(200 * 1024, 1));
  await waitFor('the stalled body to hold budget', async () => /^oyster_rest_body_bytes(?:\{[^}]*\})? [1-9]/m.test(await (await fetch(`${node.url}/metrics`)).text()), 5000, 50);
  const bodyClosed = await stalled.closedAt;
  t.ok(bodyClosed - bodyStarted >= 1900 && bodyClosed - bodyStarted < 5000, `a stalled body is cut off after ${bodyClosed - bodyStarted} ms (limit 2 s)`);
  await waitFor('the budget to be given back', async () => /^oyster_rest_body_bytes(?:\{[^}]*\})? 0$/m.test(await (await fetch(`${node.url}/metrics`)).text()), 5000, 50);
  t.equal((await client(node.url).get('/data/2')).status, 404, 'nothing of it was stored');
});

t.test('connections past http_max_connections are closed, the others served', async (t) => {
  const node = await startRestNode(t, { spec: { nodes: [{ name: 'solo' }], vdisks: 2 }, opts: { extra: { http_max_connections: 4 } } });
  const port = Number(new URL(node.url).port);
  const held = Array.from({ length: 4 }, () => raw(port));
  await Promise.all(held.map((c) => new Promise((resolve) => c.socket.on('connect', resolve))));
  await sleep(100);
  const extra = raw(port);
  extra.socket.on('connect', () => extra.socket.write('GET /data/1 HTTP/1.1\r\nHost: x\r\n\r\n'));
  await extra.closedAt;
  t.equal(extra.got(), '', 'the fifth connection is closed without an answer');
  held[0].socket.write('POST /data/3 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok');
  await waitFor('the first connection to be answered', async () => held[0].got().startsWith('HTTP/1.1 201'), 5000, 20);
  t.pass('a held connection is served');
  for (const c of held) c.socket.destroy();
  // Until the node has seen them close, a new connection is still closed at once.
  const served = async () => (await client(node.url).get('/data/3').catch(() => null))?.status === 200;
  await waitFor('room for a new connection', served, 5000);
  t.pass('once they close, new connections are served');
});
