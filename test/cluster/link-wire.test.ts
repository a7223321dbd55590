// The operations link's bytes (src/link/wire.ts) against the layout in
// docs/FORMAT.md §14, written out here by hand (test/helpers/link-client.ts):
// greetings parse from every prefix ('short' until whole, refused at the
// first byte that cannot be the magic), and frames come out whole and in
// order however TCP cuts the stream, and stay whole when the stream is
// read into one buffer over and over; frames gathered into kept buffers
// (FramePool) take a buffer again only once it was given back.
import t from 'tap';
import { encodeHello, encodeWelcome, FramePool, FrameReader, parseHello, parseWelcome } from '../../src/link/wire';
import { frame, hello, LINK_MAGIC } from '../helpers/link-client';

t.test('greetings: the layout of FORMAT.md, and every prefix', async (t) => {
  const auth = 'InterNode bjE=';
  t.same(encodeHello(auth), hello(auth), "the client's greeting, byte by byte");
  t.ok(encodeHello('').length >= 24, 'at least as long as the HTTP/2 preface');
  const full = Buffer.concat([encodeHello(auth), Buffer.from('next')]);
  for (let n = 0; n < full.length - 4; n++) t.equal(parseHello(full.subarray(0, n)), 'short', `${n} bytes: short`);
  t.same(parseHello(full), { value: auth, used: full.length - 4 }, 'whole: the authorization, and where the frames start');
  t.same(parseHello(Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n')), { error: 'not an operations link' }, "HTTP/2's preface is no greeting");
  t.same(parseHello(Buffer.from([0x00, 0x4f, 0x58])), { error: 'not an operations link' }, 'refused at the first wrong byte');
  const tooLong = Buffer.concat([hello('').subarray(0, 22), Buffer.from([0x01, 0x10])]);
  t.match(parseHello(tooLong), { error: /4097 bytes/ }, 'an authorization over 4,096 bytes is refused before it arrives');

  const welcome = encodeWelcome(16, 'Unauthorized request');
  t.same(welcome.subarray(0, 8), LINK_MAGIC, "the node's answer starts with the magic");
  t.equal(welcome.readUInt32LE(8), 16, 'then the status code');
  t.equal(welcome.readUInt16LE(12), 20, 'then the length of the details');
  for (let n = 0; n < welcome.length; n++) t.equal(parseWelcome(welcome.subarray(0, n)), 'short', `${n} bytes of the answer: short`);
  t.same(parseWelcome(welcome), { value: { code: 16, details: 'Unauthorized request' }, used: welcome.length });
  t.same(parseWelcome(Buffer.from([0, 0, 0x12, 4, 0, 0, 0, 0, 0])), { error: 'not an operations link' }, 'an HTTP/2 SETTINGS frame is no answer');
});

t.test('frames come out whole and in order however the stream is cut', async (t) => {
  let seed = 12345;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const payloads = [0, 1, 5, 100, 70_000, 0, 3, 300_000].map((n, i) => Buffer.alloc(n, i + 1));
  const stream = Buffer.concat(payloads.map((p, i) => frame(1 + (i % 2), p)));
  for (let run = 0; run < 50; run++) {
    const got: Array<[number, Buffer]> = [];
    const reader = new FrameReader(1 << 20, (type, payload) => got.push([type, Buffer.from(payload)]));
    for (let at = 0; at < stream.length; ) {
      const n = 1 + rand(run % 2 === 0 ? 7 : 100_000);
      reader.push(stream.subarray(at, at + n));
      at += n;
    }
    if (got.length !== payloads.length || got.some(([type, p], i) => type !== 1 + (i % 2) || !p.equals(payloads[i]))) {
      t.fail(`run ${run}: ${got.length} frames, not the ${payloads.length} sent`);
      return;
    }
  }
  t.pass('50 runs, cut into pieces of 1-7 bytes and of up to 100,000: every frame whole, in order, with its type');
  const limited = new FrameReader(1000, () => t.fail('no frame'));
  t.throws(() => limited.push(frame(1, Buffer.alloc(1001)).subarray(0, 5)), /at most 1001/, 'a frame over the limit is refused from its header alone');
  t.throws(() => new FrameReader(1000, () => undefined).push(Buffer.alloc(5)), /a frame of 0 bytes/, 'a frame of length 0 is refused');
});

t.test('frames read from one buffer, read into again, are copies (copyViews)', async (t) => {
  const got: Buffer[] = [];
  const reader = new FrameReader(1 << 20, (_, payload) => got.push(payload), true);
  const buffer = Buffer.alloc(64);
  const a = frame(1, Buffer.from('first'));
  const b = frame(1, Buffer.from('second'));
  a.copy(buffer);
  reader.push(buffer.subarray(0, a.length));
  buffer.fill(0);
  b.copy(buffer);
  reader.push(buffer.subarray(0, b.length));
  buffer.fill(0);
  t.same(
    got.map((p) => p.toString()),
    ['first', 'second'],
    'each frame keeps its bytes once the buffer is read into again',
  );
});

t.test('a stream read through target() and took(): the rest of a large frame is read into place, never past its end', async (t) => {
  let seed = 777;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const payloads = [3, 200_000, 10, 1 << 20, 70_000, 1].map((n, i) => {
    const p = Buffer.alloc(n);
    for (let k = 0; k < n; k++) p[k] = (k * 31 + i) & 0xff;
    return p;
  });
  const stream = Buffer.concat(payloads.map((p) => frame(1, p)));
  const spare = Buffer.alloc(64 * 1024);
  for (let run = 0; run < 20; run++) {
    const got: Buffer[] = [];
    const reader = new FrameReader(2 << 20, (_type, payload) => got.push(payload), true);
    let direct = 0;
    let past = 0;
    // As a socket with onread: each read puts up to what the target holds into it.
    for (let at = 0; at < stream.length; ) {
      const into = reader.target(spare);
      if (into !== spare) {
        // The frame being gathered is the next one out: the target ends where it does.
        if (into.length > payloads[got.length].length) past++;
        direct++;
      }
      const n = Math.min(into.length, stream.length - at, 1 + rand(run % 2 === 0 ? 300 : 150_000));
      stream.copy(into, 0, at, at + n);
      at += n;
      reader.took(into, n);
      spare.fill(0xee); // read into again before the frames are looked at
    }
    if (got.length !== payloads.length || got.some((p, i) => !p.equals(payloads[i]))) {
      t.fail(`run ${run}: ${got.length} frames, not the ${payloads.length} sent, or not byte-exact`);
      return;
    }
    if (direct === 0) t.fail(`run ${run}: no read went into a frame's buffer`);
    if (past > 0) t.fail(`run ${run}: ${past} targets ran past the end of their frame`);
  }
  t.pass('20 runs, reads of 1–300 and 1–150,000 bytes: every frame whole and byte-exact, no target past its frame');
  const reader = new FrameReader(2 << 20, () => undefined);
  const big = frame(1, Buffer.alloc(200_000));
  reader.push(big.subarray(0, 1000));
  const into = reader.target(spare);
  t.not(into, spare, 'a read into the frame is handed out');
  t.throws(() => reader.push(big.subarray(1000, 2000)), /under way/, 'bytes pushed before it came back are refused, not overwritten');
});

t.test('frames gathered into kept buffers: reused only once given back, a frame outside their sizes in one of its own', async (t) => {
  const pool = new FramePool();
  const a = pool.take(1024 * 1024);
  const b = pool.take(1024 * 1024);
  t.not(a.buffer, b.buffer, 'two frames out at once have buffers of their own');
  t.equal(a.length, 1024 * 1024, 'of the size asked for');
  pool.give(a);
  pool.give(a);
  const c = pool.take(200 * 1024);
  t.equal(c.buffer, a.buffer, 'a buffer given back takes the next frame');
  t.not(pool.take(200 * 1024).buffer, a.buffer, 'given back twice, it is handed out once');
  const small = pool.take(100);
  const large = pool.take(FramePool.FRAME_BUFFER + 1);
  pool.give(small);
  pool.give(large);
  t.not(pool.take(FramePool.FRAME_BUFFER + 1).buffer, large.buffer, 'a frame larger than the kept buffers is never kept');

  // A frame that arrives in pieces is gathered into a kept buffer, whole and in order.
  const got: Buffer[] = [];
  const reader = new FrameReader(4 << 20, (_type, payload) => got.push(payload), false, undefined, pool);
  const payload = Buffer.alloc(300 * 1024);
  for (let i = 0; i < payload.length; i++) payload[i] = (i * 7) & 0xff;
  const bytes = frame(1, payload);
  for (let at = 0; at < bytes.length; at += 64 * 1024) reader.push(bytes.subarray(at, at + 64 * 1024));
  t.equal(got.length, 1, 'one frame');
  t.ok(got[0].equals(payload), 'byte-exact');
  t.equal(got[0].buffer.byteLength, FramePool.FRAME_BUFFER, 'in a kept buffer');
  pool.give(got[0]);
  t.equal(pool.take(300 * 1024).buffer, got[0].buffer, 'given back by its reader, it takes the next frame');
});
