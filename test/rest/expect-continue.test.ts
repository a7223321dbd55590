// Expect: 100-continue over a raw connection to a real node: the node asks
// for a body (100 Continue) only where it is about to read it, so a request
// it refuses first gets its final answer without the upload, and then its
// connection closes; a request it takes is answered after its body, on a
// connection that stays open.
import net from 'node:net';
import t from 'tap';
import { client, startRestNode } from './lib/node';

/** A raw HTTP/1.1 connection that reads answers as they come. */
class Connection {
  private data = Buffer.alloc(0);
  private waiter: (() => void) | null = null;
  closed = false;

  private constructor(private readonly socket: net.Socket) {
    socket.on('data', (d: Buffer) => {
      this.data = Buffer.concat([this.data, d]);
      this.wake();
    });
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
    socket.on('error', () => {});
  }

  static open(url: string): Promise<Connection> {
    const { hostname, port } = new URL(url);
    return new Promise((resolve, reject) => {
      const s = net.connect(Number(port), hostname, () => resolve(new Connection(s)));
      s.once('error', reject);
    });
  }

  send(bytes: string | Buffer): void {
    this.socket.write(bytes);
  }

  /** The next answer: an interim 100 Continue, or a final one with its body; null if the connection closed first or `ms` passed. */
  async answer(ms = 5000): Promise<{ status: number; head: string; body: string } | null> {
    const deadline = Date.now() + ms;
    for (;;) {
      const end = this.data.indexOf('\r\n\r\n');
      if (end >= 0) {
        const head = this.data.subarray(0, end).toString('latin1');
        const status = Number(head.split(' ')[1]);
        const length = status === 100 ? 0 : Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (this.data.length >= end + 4 + length) {
          const body = this.data.subarray(end + 4, end + 4 + length).toString();
          this.data = this.data.subarray(end + 4 + length);
          return { status, head, body };
        }
      }
      if (this.closed || Date.now() >= deadline) return null;
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
        setTimeout(resolve, Math.max(1, deadline - Date.now()));
      });
    }
  }

  /** Whether the node closes the connection within `ms`. */
  async closes(ms = 5000): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (!this.closed && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
        setTimeout(resolve, 50);
      });
    }
    return this.closed;
  }

  /** Whatever arrived and was not read as an answer. */
  get unread(): string {
    return this.data.toString('latin1');
  }

  end(): void {
    this.socket.destroy();
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = null;
    w?.();
  }
}

const post = (path: string, length: number | 'chunked', extra = ''): string =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\n${length === 'chunked' ? 'Transfer-Encoding: chunked' : `Content-Length: ${length}`}\r\nExpect: 100-continue\r\n${extra}\r\n`;

t.test('Expect: 100-continue', async (t) => {
  const node = await startRestNode(t, { spec: { nodes: [{ name: 'solo' }], vdisks: 2 }, opts: { httpMaxBodySize: '4 MiB' } });
  const api = client(node.url);

  t.test('a body the node takes is asked for, then answered; the connection stays open', async (t) => {
    for (const [name, size] of [['small', 100], ['streamed', 3 * 1024 * 1024 + 17]] as const) {
      const value = Buffer.alloc(size);
      for (let i = 0; i < size; i++) value[i] = (i * 7 + size) & 0xff;
      const c = await Connection.open(node.url);
      c.send(post('/data/100', size));
      const first = await c.answer();
      t.equal(first?.status, 100, `${name}: 100 Continue comes first`);
      c.send(value);
      const last = await c.answer();
      t.equal(last?.status, 201, `${name}: stored`);
      c.send('GET /data/100 HTTP/1.1\r\nHost: x\r\n\r\n');
      const read = await c.answer();
      t.equal(read?.status, 200, `${name}: the connection serves on`);
      c.end();
      t.ok((await api.get('/data/100')).body.equals(value), `${name}: the bytes sent after 100 Continue`);
    }
    const c = await Connection.open(node.url);
    c.send(post('/data/101', 'chunked'));
    t.equal((await c.answer())?.status, 100, 'chunked: 100 Continue comes first');
    c.send('5\r\nhello\r\n0\r\n\r\n');
    t.equal((await c.answer())?.status, 201, 'chunked: stored');
    c.end();
    t.equal((await api.get('/data/101')).body.toString(), 'hello');
  });

  t.test('a request refused before its body is read gets no 100 Continue, and its connection closes', async (t) => {
    await api.post('/data/200', 'old');
    const cases: Array<[string, string, number, RegExp]> = [
      ['a body over http_max_body_size', post('/data/201', 5 * 1024 * 1024), 413, /exceeds the limit/],
      ['If-Match that fails', post('/data/200', 3, 'If-Match: "not-the-etag"\r\n'), 412, /If-Match/],
      ['If-None-Match: * on a key that holds a value', post('/data/200', 3, 'If-None-Match: *\r\n'), 412, /If-None-Match/],
      ['a malformed key', post('/data/not-a-key', 3), 400, /./],
      ['an unknown path', post('/no/such/path', 3), 404, /Not Found/],
    ];
    for (const [name, request, status, msg] of cases) {
      const c = await Connection.open(node.url);
      c.send(request);
      const a = await c.answer();
      t.equal(a?.status, status, `${name}: ${status} at once`);
      t.match(a?.body ?? '', msg, `${name}: StatusExt body`);
      t.match(a?.head ?? '', /connection: close/i, `${name}: the answer says the connection closes`);
      t.ok(await c.closes(), `${name}: the connection closes without the body`);
      t.equal(c.unread, '', `${name}: nothing else was sent`);
      c.end();
    }
    t.equal((await api.get('/data/200')).body.toString(), 'old', 'the refused writes changed nothing');
    t.equal((await api.get('/data/201')).status, 404);
  });

  t.test('a conditional write whose condition holds is asked for its body', async (t) => {
    await api.post('/data/300', 'v1');
    const etag = (await api.get('/data/300')).headers.get('etag')!;
    const c = await Connection.open(node.url);
    c.send(post('/data/300', 2, `If-Match: ${etag}\r\n`));
    t.equal((await c.answer())?.status, 100);
    c.send('v2');
    t.equal((await c.answer())?.status, 201);
    c.end();
    t.equal((await api.get('/data/300')).body.toString(), 'v2');
  });
});
