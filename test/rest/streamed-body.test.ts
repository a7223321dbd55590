// A body written as it arrives (src/rest/middleware/streamed-body.ts) hands
// out windows that stay the writer's until it says they are written: the
// next windows fill while one is being written, no window's bytes change
// before it is said written, reading pauses while WINDOWS are held, and the
// buffers go back to the budget only once the last is written. Driven step
// by step by the route itself, behind Node's HTTP server and Koa, over a
// real connection; the writer here is the test, in place of the engine.
import http from 'node:http';
import net from 'node:net';
import Koa from 'koa';
import t from 'tap';
import { BodyBudget } from '../../src/rest/body-budget';
import { requestValue, WINDOW, WINDOWS } from '../../src/rest/middleware/streamed-body';
import { isIncoming } from '../../src/model/value';
import { Rng } from '../robustness/lib';

const MiB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Whether `p` settles within `ms`.
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let settled = false;
  p.then(
    () => (settled = true),
    () => (settled = true),
  );
  await sleep(ms);
  return settled;
}

t.test(`windows stay the writer's until said written; ${WINDOWS} at most are held`, async (t) => {
  // WINDOWS + 2 windows, the last of 5 bytes.
  const body = new Rng(7).bytes((WINDOWS + 1) * WINDOW + 5);
  const windowOf = (k: number) => body.subarray(k * WINDOW, Math.min(body.length, (k + 1) * WINDOW));
  const budget = new BodyBudget(4 * WINDOWS * MiB);
  let sent: () => void = () => undefined;
  const allSent = new Promise<void>((resolve) => (sent = resolve));

  const app = new Koa();
  app.use(async (ctx) => {
    const value = await requestValue(ctx, 64 * MiB, budget);
    if (!isIncoming(value)) throw new Error('expected a body written as it arrives');
    const held: Buffer[] = [];
    for (let k = 0; k < WINDOWS; k++) held.push((await value.next())![0]);
    const keep = (ws: Buffer[], from: number) => ws.every((w, i) => w.equals(windowOf(from + i)));
    t.ok(keep(held, 0), 'the next windows fill while the first is not yet written');
    // Every byte in the kernel's buffers, or as many as they take.
    await Promise.race([allSent, sleep(500)]);
    const next = value.next();
    t.notOk(await settlesWithin(next, 200), `with ${WINDOWS} windows held, the next waits although every byte was sent`);
    t.ok(keep(held, 0), 'the held windows keep their bytes');

    value.written(); // the first
    const wNext = (await next)![0];
    t.ok(wNext.equals(windowOf(WINDOWS)), 'the next window, once the first is written');
    t.equal(wNext.buffer, held[0].buffer, "in the first one's buffer");
    t.ok(keep(held.slice(1), 1), 'the others keep their bytes meanwhile');
    value.written(); // the second
    const last = (await value.next())![0];
    t.ok(last.equals(windowOf(WINDOWS + 1)), 'the last window');
    t.equal(await value.next(), null, 'then the end');
    // WINDOWS windows are still being written: their buffers are nobody else's yet.
    const writing = [...held.slice(2), wNext, last];
    const other = budget.buffer();
    t.ok(writing.every((w) => other.buffer !== w.buffer), 'a buffer asked for meanwhile is another one');
    for (const _ of writing) value.written();
    const kept = writing.map(() => budget.buffer().buffer);
    t.ok(writing.every((w) => kept.includes(w.buffer)), 'once all are written, the budget keeps their buffers for the next bodies');
    ctx.status = 204;
  });
  const server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());

  const port = (server.address() as net.AddressInfo).port;
  const socket = net.connect(port, '127.0.0.1');
  let answer = '';
  socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
  await new Promise((resolve) => socket.once('connect', resolve));
  await new Promise<void>((resolve, reject) =>
    socket.write(Buffer.concat([Buffer.from(`POST /v HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`), body]), (err) =>
      err ? reject(err) : resolve(),
    ),
  );
  sent();
  await new Promise((resolve) => socket.once('close', resolve));
  t.match(answer, /^HTTP\/1\.1 204/, 'answered once every window was handed out and written');
});
