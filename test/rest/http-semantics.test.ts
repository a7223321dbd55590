// HTTP as a blob client expects it of /data/{key}: HEAD's headers, ETag and
// Last-Modified from the version, conditional reads (304) and writes (412),
// ranges (206, 416), and pipelined requests on one connection taking effect
// in order, without piling up behind a client that reads nothing.
import net from 'node:net';
import t from 'tap';
import { sample } from './lib/metrics';
import { call, client, startRestNode, statusExt } from './lib/node';
import { peakRss } from '../helpers/memory';

t.test('HTTP semantics of the data API', async (t) => {
  const node = await startRestNode(t, { spec: { nodes: [{ name: 'solo' }], vdisks: 4 } });
  const api = client(node.url);
  const value = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251));

  t.test('HEAD answers with the headers of GET and no body', async (t) => {
    t.equal((await api.post('/data/1', value)).status, 201);
    const get = await api.get('/data/1');
    const head = await api.head('/data/1');
    t.equal(head.status, 200);
    t.equal(head.body.length, 0);
    t.equal(head.headers.get('content-length'), '1000');
    t.equal(head.headers.get('content-type'), 'application/octet-stream');
    t.equal(head.headers.get('accept-ranges'), 'bytes', 'HEAD tells that ranges are served');
    t.equal(head.headers.get('etag'), get.headers.get('etag'));
    t.equal(head.headers.get('last-modified'), get.headers.get('last-modified'));
  });

  t.test('ETag changes with every write; Last-Modified is the version timestamp', async (t) => {
    const post = await api.post('/data/2', 'one');
    const etag1 = post.headers.get('etag')!;
    t.match(etag1, /^"\d+-\d+-\d+"$/, 'a strong ETag from the version, on the POST answer too');
    const get = await api.get('/data/2');
    t.equal(get.headers.get('etag'), etag1, 'GET gives the ETag the write answered with');
    const modified = Date.parse(get.headers.get('last-modified')!);
    t.ok(Math.abs(modified - Date.now()) < 5000, 'Last-Modified is the write time');
    await api.post('/data/2', 'one');
    const etag2 = (await api.get('/data/2')).headers.get('etag');
    t.not(etag2, etag1, 'the same bytes written again: a new version, a new ETag');
  });

  t.test('conditional GET and HEAD: 304 when the client holds the value', async (t) => {
    await api.post('/data/3', value);
    const r = await api.get('/data/3');
    const etag = r.headers.get('etag')!;
    const lastModified = r.headers.get('last-modified')!;
    const notModified = await call(node.url, 'GET', '/data/3', undefined, { 'If-None-Match': etag });
    t.equal(notModified.status, 304);
    t.equal(notModified.body.length, 0);
    t.equal(notModified.headers.get('etag'), etag, '304 carries the ETag');
    t.equal((await call(node.url, 'HEAD', '/data/3', undefined, { 'If-None-Match': `"x", ${etag}` })).status, 304, 'one of a list');
    t.equal((await call(node.url, 'GET', '/data/3', undefined, { 'If-None-Match': `W/${etag}` })).status, 304, 'weak comparison');
    t.equal((await call(node.url, 'GET', '/data/3', undefined, { 'If-None-Match': '"other"' })).status, 200);
    t.equal((await call(node.url, 'GET', '/data/3', undefined, { 'If-Modified-Since': lastModified })).status, 304);
    const before = new Date(Date.parse(lastModified) - 10_000).toUTCString();
    t.equal((await call(node.url, 'GET', '/data/3', undefined, { 'If-Modified-Since': before })).status, 200);
    // The two obsolete forms of an HTTP-date are dates as well (RFC 9110 §5.6.7).
    const d = new Date(Date.parse(lastModified));
    const day = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'][d.getUTCDay()];
    const [, dd, mon, yyyy, time] = lastModified.split(' ');
    const rfc850 = `${day}, ${dd}-${mon}-${yyyy.slice(2)} ${time} GMT`;
    const asctime = `${day.slice(0, 3)} ${mon} ${String(d.getUTCDate()).padStart(2, ' ')} ${time} ${yyyy}`;
    for (const form of [rfc850, asctime]) {
      t.equal((await call(node.url, 'GET', '/data/3', undefined, { 'If-Modified-Since': form })).status, 304, form);
    }
    // Anything else is no date, and the condition is ignored: not what Date.parse makes of it.
    for (const junk of ['garbage 2099', '2099-01-01', '4102444800', `${lastModified} x`, lastModified.replace('GMT', 'PST')]) {
      t.equal((await call(node.url, 'GET', '/data/3', undefined, { 'If-Modified-Since': junk })).status, 200, `If-Modified-Since: ${junk}`);
    }
    await api.post('/data/3', 'changed');
    const changed = await call(node.url, 'GET', '/data/3', undefined, { 'If-None-Match': etag });
    t.equal(changed.status, 200, 'a new version is sent again');
    t.equal(changed.text, 'changed');
    const failed = await call(node.url, 'GET', '/data/3', undefined, { 'If-Match': etag });
    statusExt(t, failed, 412, false, /Precondition Failed/, 'GET If-Match of an old version');
  });

  t.test('conditional writes: If-Match and If-None-Match on POST and DELETE', async (t) => {
    await api.post('/data/4', 'v1');
    const etag1 = (await api.get('/data/4')).headers.get('etag')!;
    const ok = await call(node.url, 'POST', '/data/4', 'v2', { 'If-Match': etag1 });
    statusExt(t, ok, 201, true, 'Created', 'POST If-Match of the current version');
    const stale = await call(node.url, 'POST', '/data/4', 'v3', { 'If-Match': etag1 });
    statusExt(t, stale, 412, false, /Precondition Failed: If-Match/, 'POST If-Match of a replaced version');
    t.equal((await api.get('/data/4')).text, 'v2', 'the refused write changed nothing');
    statusExt(t, await call(node.url, 'POST', '/data/4', 'v3', { 'If-None-Match': '*' }), 412, false, /If-None-Match/, 'create-only on a taken key');
    statusExt(t, await call(node.url, 'POST', '/data/40', 'new', { 'If-None-Match': '*' }), 201, true, 'Created', 'create-only on a free key');
    statusExt(t, await call(node.url, 'POST', '/data/41', 'x', { 'If-Match': '*' }), 412, false, /holds no value/, 'If-Match: * on a free key');
    statusExt(t, await call(node.url, 'DELETE', '/data/4', undefined, { 'If-Match': etag1 }), 412, false, /If-Match/, 'DELETE of a replaced version');
    t.equal((await api.get('/data/4')).status, 200, 'still there');
    const etag2 = (await api.get('/data/4')).headers.get('etag')!;
    statusExt(t, await call(node.url, 'DELETE', '/data/4', undefined, { 'If-Match': etag2 }), 200, true, 'Done');
    t.equal((await api.get('/data/4')).status, 404);
    const since = new Date(Date.now() - 60_000).toUTCString();
    await api.post('/data/42', 'x');
    statusExt(t, await call(node.url, 'POST', '/data/42', 'y', { 'If-Unmodified-Since': since }), 412, false, /If-Unmodified-Since/);
    // A field that is no HTTP-date is ignored (RFC 9110 §13.1.4): the write goes ahead.
    for (const junk of ['1', '2020', 'Mon, 32 Jan 2001 00:00:00 GMT', 'Thu, 01 Jan 1970 00:00:00 UTC']) {
      statusExt(t, await call(node.url, 'POST', '/data/42', 'z', { 'If-Unmodified-Since': junk }), 201, true, 'Created', `If-Unmodified-Since: ${junk}`);
    }
  });

  t.test('ranges', async (t) => {
    await api.post('/data/5', value);
    const etag = (await api.get('/data/5')).headers.get('etag')!;
    const range = (h: string, extra: Record<string, string> = {}) => call(node.url, 'GET', '/data/5', undefined, { Range: h, ...extra });
    const cases: Array<[string, number, number]> = [
      ['bytes=0-9', 0, 9],
      ['bytes=500-599', 500, 599],
      ['bytes=990-', 990, 999],
      ['bytes=-10', 990, 999],
      ['bytes=995-5000', 995, 999],
      ['bytes=0-0', 0, 0],
      // A suffix longer than the value is all of it (RFC 9110 §14.1.1).
      ['bytes=-1000', 0, 999],
      ['bytes=-5000', 0, 999],
      // The unit is a token, compared without regard to case.
      ['BYTES=10-19', 10, 19],
      // Ranges that overlap or touch are one range; empty list elements are skipped.
      ['bytes=0-4, 5-9', 0, 9],
      ['bytes=0-9,,3-12', 0, 12],
      // Parts that cannot be served beside one that can: the one is sent.
      ['bytes=0-4,2000-', 0, 4],
      ['bytes=-0,7-8', 7, 8],
    ];
    for (const [h, start, end] of cases) {
      const r = await range(h);
      t.equal(r.status, 206, h);
      t.equal(r.headers.get('content-range'), `bytes ${start}-${end}/1000`, h);
      t.equal(r.headers.get('content-length'), String(end - start + 1), h);
      t.ok(r.body.equals(value.subarray(start, end + 1)), `${h}: the bytes`);
    }
    const past = await range('bytes=1000-1010');
    statusExt(t, past, 416, false, /Range Not Satisfiable/, 'a range past the end');
    t.equal(past.headers.get('content-range'), 'bytes */1000');
    for (const none of ['bytes=-0', 'bytes=20-10', 'bytes=1000-,2000-3000']) {
      statusExt(t, await range(none), 416, false, /Range Not Satisfiable/, `${none}: no range can be served`);
    }
    // Another unit is ignored, even where its numbers would be past the end in bytes.
    for (const whole of ['bytes=0-1,5-6', 'bytes=abc', 'bytes=', 'bytes=-', 'bytes=1-2-3', 'lines=1-2', 'items=5000-', '=0-1', 'bytes 0-1']) {
      const r = await range(whole);
      t.equal(r.status, 200, `${whole}: the whole value`);
      t.ok(r.body.equals(value));
    }
    t.equal((await range('bytes=0-9', { 'If-Range': etag })).status, 206, 'If-Range of the current version');
    t.equal((await range('bytes=0-9', { 'If-Range': '"old"' })).status, 200, 'If-Range of another version: the whole value');
    const lastModified = (await api.get('/data/5')).headers.get('last-modified')!;
    t.equal((await range('bytes=0-9', { 'If-Range': lastModified })).status, 206, 'If-Range of the Last-Modified date');
    const later = new Date(Date.parse(lastModified) + 60_000).toUTCString();
    t.equal((await range('bytes=0-9', { 'If-Range': later })).status, 200, 'If-Range of another date: only an exact match holds');
    t.equal((await range('bytes=0-9', { 'If-Range': '2099' })).status, 200, 'If-Range that is no date');
    const head = await call(node.url, 'HEAD', '/data/5', undefined, { Range: 'bytes=0-9' });
    t.equal(head.status, 206);
    t.equal(head.headers.get('content-length'), '10');
    await api.post('/data/6');
    statusExt(t, await call(node.url, 'GET', '/data/6', undefined, { Range: 'bytes=0-' }), 416, false, /0 bytes/, 'a range of an empty value');
    const emptySuffix = await call(node.url, 'GET', '/data/6', undefined, { Range: 'bytes=-10' });
    t.equal(emptySuffix.status, 200, 'a suffix of an empty value: the (empty) value whole');
    t.equal(emptySuffix.body.length, 0);
  });

  t.test('pipelined requests on one connection take effect in order', async (t) => {
    const port = Number(new URL(node.url).port);
    const rounds = 100;
    let wire = '';
    for (let i = 0; i < rounds; i++) {
      const body = `value ${i}`;
      wire += `POST /data/${7000 + i} HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
      wire += `GET /data/${7000 + i} HTTP/1.1\r\nHost: x\r\n\r\n`;
      wire += `DELETE /data/${7000 + i} HTTP/1.1\r\nHost: x\r\n\r\n`;
      wire += `GET /data/${7000 + i} HTTP/1.1\r\nHost: x\r\n${i === rounds - 1 ? 'Connection: close\r\n' : ''}\r\n`;
    }
    const answer = await new Promise<string>((resolve, reject) => {
      const s = net.connect(port, '127.0.0.1', () => s.write(wire));
      let got = '';
      s.on('data', (d) => (got += d.toString('latin1')));
      s.on('end', () => resolve(got));
      s.on('error', reject);
    });
    const statuses = [...answer.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));
    t.equal(statuses.length, rounds * 4, 'one answer per request');
    const expected = Array.from({ length: rounds }, () => [201, 200, 200, 404]).flat();
    t.same(statuses, expected, 'each GET sees the write just before it');
    for (let i = 0; i < rounds; i++) t.ok(answer.includes(`value ${i}`), `GET ${i} answered its POST's value`);
  });

  t.test('a client that pipelines GETs of a large value and reads nothing: its connection is paused', async (t) => {
    t.equal((await api.post('/data/9000', Buffer.alloc(1024 * 1024, 'v'))).status, 201);
    const dropped = async () => sample(await (await fetch(`${node.url}/metrics`)).text(), 'oyster_rest_requests_total', { status: '499' });
    const droppedBefore = await dropped();
    const pid = node.proc.child.pid!;
    const rssBefore = peakRss(pid);
    const port = Number(new URL(node.url).port);
    // 200,000 GETs, 6.6 MB of requests: the value goes out by sendfile, past
    // Node's stream, which never fills; Node alone parsed 127,000 of them.
    const batch = Buffer.from('GET /data/9000 HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(1000));
    const s = net.connect(port, '127.0.0.1', () => {
      for (let i = 0; i < 200; i++) s.write(batch);
    });
    s.pause();
    s.on('error', () => undefined);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const grew = peakRss(pid) - rssBefore;
    t.ok(grew < 64 * 1024 * 1024, `peak resident set grew ${(grew / 1024 / 1024).toFixed(0)} MiB`);
    s.destroy();
    // The requests waiting when the client left are dropped, never run.
    let count = 0;
    for (let i = 0; i < 50; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const now = (await dropped()) - droppedBefore;
      if (now > 0 && now === count) break;
      count = now;
    }
    t.ok(count > 0 && count <= 4096, `${count} requests were waiting when the client left (499)`);
    t.equal((await api.get('/data/9000')).body.length, 1024 * 1024, 'the node serves on');
  });

  t.test('a connection closed with pipelined requests waiting leaves nothing behind', async (t) => {
    const port = Number(new URL(node.url).port);
    await Promise.all(
      Array.from({ length: 50 }, (_, i) => {
        const s = net.connect(port, '127.0.0.1', () => {
          // A body that never completes holds the first request; the others wait behind it.
          s.write(`POST /data/${8000 + i} HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\npartial`);
          s.write(`GET /data/1 HTTP/1.1\r\nHost: x\r\n\r\nGET /data/2 HTTP/1.1\r\nHost: x\r\n\r\n`);
          setTimeout(() => s.destroy(), 50);
        });
        s.on('error', () => undefined);
        return new Promise((resolve) => s.on('close', resolve));
      }),
    );
    t.equal((await api.get('/data/1')).status, 200, 'the node serves on');
    for (let i = 0; i < 50; i++) if ((await api.get(`/data/${8000 + i}`)).status !== 404) t.fail(`key ${8000 + i}: a partial body was stored`);
  });
});
