// GET/HEAD/POST/DELETE /data/{key}, the REST key formats and
// their equivalences, key-size bounds for key_size 8, 16 and 32,
// and key -> vdisk placement checked through /vdisks/{id}/records/count.
import t, { Test } from 'tap';
import { Client, client, decimalKeyHex, failure, isJson, startRestNode, statusExt } from './lib/node';

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da6364f8ffbf1e000504020046c5a9b20000000049454e44ae426082', 'hex');

/** A single-node cluster with `vdisks` vdisks on one disk. */
async function single(t: Test, vdisks: number, keySize?: 8 | 16 | 32): Promise<Client> {
  const node = await startRestNode(t, { spec: { nodes: [{ name: 'solo' }], vdisks, keySize } });
  return client(node.url);
}

/** Asserts that GET says the key is absent, naming exactly these key bytes. */
async function absent(t: Test, api: Client, key: string, hex: string): Promise<void> {
  failure(t, await api.get(`/data/${key}`), 404, `KeyNotFound ${hex}`, `GET ${key}`);
}

t.test('the data endpoints', async (t) => {
  const api = await single(t, 4);

  t.test('POST stores, GET returns the bytes, HEAD tells, DELETE removes', async (t) => {
    const value = Buffer.from('hello, oyster\n\x00\xff binary', 'latin1');
    const post = await api.post('/data/1000', value);
    statusExt(t, post, 201, true, 'Created', 'POST');
    const get = await api.get('/data/1000');
    t.equal(get.status, 200);
    t.equal(get.headers.get('content-type'), 'application/octet-stream', 'unrecognised bytes are an octet stream');
    t.ok(get.body.equals(value), 'the value as stored');
    const head = await api.head('/data/1000');
    t.equal(head.status, 200, 'HEAD of a stored key');
    t.equal(head.body.length, 0, 'HEAD has no body');
    statusExt(t, await api.del('/data/1000'), 200, true, 'Done', 'DELETE');
    await absent(t, api, '1000', 'E8030000000000000000000000000000');
    const gone = await api.head('/data/1000');
    t.equal(gone.status, 404, 'HEAD after DELETE');
    t.equal(gone.body.length, 0);
    t.ok(isJson(gone), 'HEAD 404 announces the JSON body a GET would have');
    t.equal((await api.head('/data/77')).status, 404, 'HEAD of a key never written');
  });

  t.test('DELETE of a missing key is 200 as well (cluster-wide delete)', async (t) => {
    statusExt(t, await api.del('/data/424242'), 200, true, 'Done');
  });

  t.test('Content-Type is sniffed from the stored bytes', async (t) => {
    t.equal((await api.post('/data/7', PNG)).status, 201);
    const r = await api.get('/data/7');
    t.equal(r.status, 200);
    t.equal(r.headers.get('content-type'), 'image/png');
    t.ok(r.body.equals(PNG));
    // The request's own Content-Type does not matter.
    t.equal((await api.call('POST', '/data/8', Buffer.from('{"a":1}'))).status, 201);
    t.equal((await api.get('/data/8')).headers.get('content-type'), 'application/octet-stream');
  });

  t.test('an empty value is a value', async (t) => {
    statusExt(t, await api.post('/data/9'), 201, true, 'Created', 'POST without a body');
    const r = await api.get('/data/9');
    t.equal(r.status, 200);
    t.equal(r.body.length, 0);
    t.equal(r.headers.get('content-type'), 'application/octet-stream');
    t.equal((await api.head('/data/9')).status, 200);
    t.equal((await api.post('/data/10', Buffer.alloc(0))).status, 201, 'POST with an empty body');
    t.equal((await api.get('/data/10')).status, 200);
  });

  t.test('the newest write wins: overwrite, and put -> delete -> put within a second', async (t) => {
    t.equal((await api.post('/data/11', 'one')).status, 201);
    t.equal((await api.post('/data/11', 'two')).status, 201);
    t.equal((await api.get('/data/11')).text, 'two');
    t.equal((await api.del('/data/11')).status, 200);
    t.equal((await api.post('/data/11', 'three')).status, 201);
    t.equal((await api.get('/data/11')).text, 'three');
    t.equal((await api.head('/data/11')).status, 200);
  });

  t.test('a larger value round-trips', async (t) => {
    const big = Buffer.alloc(3 * 1024 * 1024);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7 + (i >> 11)) & 0xff;
    t.equal((await api.post('/data/12', big)).status, 201);
    const r = await api.get('/data/12');
    t.equal(r.body.length, big.length);
    t.ok(r.body.equals(big));
  });

  t.test('malformed keys are 400 with bob messages, on every method', async (t) => {
    const cases: Array<[string, string | RegExp]> = [
      ['abc', 'Invalid key format'],
      ['12a', 'Invalid key format'],
      ['+1', 'Invalid key format'],
      ['1.5', 'Invalid key format'],
      ['0X01', 'Invalid key format'],
      ['%20', 'Invalid key format'],
      ['0xzz', 'Hex parse error: non hexadecimal symbol in parameter'],
      ['0x12g4', 'Hex parse error: non hexadecimal symbol in parameter'],
      ['0100-00', /GUID/],
      ['01000000-0000-0000-0000-00000000000g', /GUID/],
      ['{}', /GUID/],
      ['{01000000-0000-0000-0000-000000000000', /GUID/],
      ['340282366920938463463374607431768211456', 'Key overflow'], // 2^128
      ['0x0102030405060708090a0b0c0d0e0f1011', 'Key overflow'], // 17 bytes
    ];
    for (const [key, msg] of cases) {
      const path = `/data/${encodeURIComponent(key)}`;
      failure(t, await api.get(path), 400, msg, `GET ${key}`);
      failure(t, await api.post(path, 'x'), 400, msg, `POST ${key}`);
      failure(t, await api.del(path), 400, msg, `DELETE ${key}`);
      const head = await api.head(path);
      t.equal(head.status, 400, `HEAD ${key}`);
      t.ok(isJson(head), `HEAD ${key}: JSON`);
    }
  });
});

t.test('key formats: one key, many spellings', async (t) => {
  const api = await single(t, 4);

  t.test('1 = 0x01 = 01000000-0000-0000-0000-000000000000 = {…}', async (t) => {
    const forms = ['1', '0x01', '01000000-0000-0000-0000-000000000000', '{01000000-0000-0000-0000-000000000000}', '001', '0x0100', '0x1'];
    for (const f of forms) await absent(t, api, encodeURIComponent(f), '01000000000000000000000000000000');
    t.equal((await api.post('/data/1', 'one')).status, 201);
    for (const f of forms) {
      const r = await api.get(`/data/${encodeURIComponent(f)}`);
      t.equal(r.status, 200, `GET ${f}`);
      t.equal(r.text, 'one', `GET ${f}`);
    }
    // A write through another spelling replaces the same record.
    t.equal((await api.post(`/data/${encodeURIComponent('{01000000-0000-0000-0000-000000000000}')}`, 'uno')).status, 201);
    t.equal((await api.get('/data/0x01')).text, 'uno');
    t.equal((await api.del('/data/01000000-0000-0000-0000-000000000000')).status, 200);
    t.equal((await api.head('/data/1')).status, 404, 'a delete through a GUID removes decimal 1');
  });

  t.test('256 = 0x0001 (hex is a byte string, decimal is little-endian)', async (t) => {
    await absent(t, api, '256', '00010000000000000000000000000000');
    await absent(t, api, '0x0001', '00010000000000000000000000000000');
    await absent(t, api, '0x0100', '01000000000000000000000000000000');
    t.equal((await api.post('/data/0x0001', 'two-five-six')).status, 201);
    t.equal((await api.get('/data/256')).text, 'two-five-six');
    t.equal((await api.get('/data/0x0100')).status, 404, '0x0100 is key 1, not 256');
  });

  t.test('odd hex length: the leading digit alone is the first byte', async (t) => {
    await absent(t, api, '0x123', '01230000000000000000000000000000');
    t.equal((await api.post('/data/0x123', 'odd')).status, 201);
    t.equal((await api.get(`/data/${0x2301}`)).text, 'odd', '0x123 = bytes 01 23 = decimal 8961');
  });

  t.test('0x and 0 are the zero key; a GUID keeps its textual byte order', async (t) => {
    await absent(t, api, '0x', '00000000000000000000000000000000');
    t.equal((await api.post('/data/0', 'zero')).status, 201);
    t.equal((await api.get('/data/0x')).text, 'zero');
    t.equal((await api.get('/data/00000000-0000-0000-0000-000000000000')).text, 'zero');
    await absent(t, api, '0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9', '0A1B2C3D4E5F60718293A4B5C6D7E8F9');
    await absent(t, api, encodeURIComponent('{0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9}'), '0A1B2C3D4E5F60718293A4B5C6D7E8F9');
    await absent(t, api, '0x0a1b2c3d4e5f60718293a4b5c6d7e8f9', '0A1B2C3D4E5F60718293A4B5C6D7E8F9');
  });
});

t.test('key-size bounds (cluster.yaml key_size 8, 16, 32)', async (t) => {
  const sizes = [8, 16, 32] as const;
  const apis = await Promise.all(sizes.map((s) => single(t, 3, s)));
  for (const [i, size] of sizes.entries()) {
    t.test(`key_size ${size}`, async (t) => {
      const api = apis[i];
      const max = (1n << BigInt(8 * size)) - 1n;
      const ff = 'FF'.repeat(size);
      await absent(t, api, max.toString(), ff);
      await absent(t, api, `0x${'ff'.repeat(size)}`, ff);
      await absent(t, api, `0x${'ff'.repeat(size)}00`, ff);
      await absent(t, api, `${max.toString()}`.replace(/^/, '000'), ff);
      failure(t, await api.get(`/data/${max + 1n}`), 400, 'Key overflow', 'decimal 2^(8·size)');
      failure(t, await api.get(`/data/0x${'ff'.repeat(size)}01`), 400, 'Key overflow', 'one byte too many');
      failure(t, await api.post(`/data/0x${'00'.repeat(size)}01`, 'x'), 400, 'Key overflow', 'POST of a too long key');
      // Decimal keys of any size, little-endian.
      await absent(t, api, '1000', decimalKeyHex(1000n, size));
      // A GUID is 16 bytes: padded for 32, exact for 16, and for 8 only when its last 8 bytes are zero.
      const guid = '0a1b2c3d-4e5f-6071-0000-000000000000';
      if (size === 8) {
        await absent(t, api, guid, '0A1B2C3D4E5F6071');
        failure(t, await api.get('/data/0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9'), 400, 'Key overflow', 'GUID into 8 bytes');
      } else {
        await absent(t, api, guid, '0A1B2C3D4E5F60710000000000000000'.padEnd(2 * size, '0'));
      }
      // The largest key stores and reads like any other.
      t.equal((await api.post(`/data/${max}`, `max${size}`)).status, 201);
      t.equal((await api.get(`/data/0x${'ff'.repeat(size)}`)).text, `max${size}`);
      t.equal((await api.head(`/data/${max}`)).status, 200);
    });
  }
});

t.test('key -> vdisk: the key as a little-endian integer modulo the vdisk count', async (t) => {
  const N = 5;
  const api = await single(t, N);
  const counts = async () => Promise.all(Array.from({ length: N }, async (_, v) => api.json<number>(`/vdisks/${v}/records/count`)));
  const before = await counts();
  t.same(before, [0, 0, 0, 0, 0], 'a fresh node holds nothing');

  // Keys as the test computes them: REST spelling -> little-endian integer.
  const le = (bytes: Buffer) => bytes.reduceRight((n, b) => (n << 8n) | BigInt(b), 0n);
  const keys: Array<[string, bigint]> = [];
  for (const n of [0n, 1n, 2n, 3n, 4n, 5n, 6n, 99n, 1000n, 65535n, 4294967297n, 18446744073709551617n]) keys.push([n.toString(), n]);
  for (const hex of ['0x0102030405060708', '0xff', '0x00ff', '0xdeadbeef', '0x0000000000000000000000000000ff01']) {
    keys.push([hex, le(Buffer.from(hex.slice(2), 'hex'))]);
  }
  for (const guid of ['01000000-0000-0000-0000-000000000002', '0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9', 'ffffffff-ffff-ffff-ffff-fffffffffffe']) {
    keys.push([guid, le(Buffer.from(guid.replaceAll('-', ''), 'hex'))]);
  }
  const expected = new Array<number>(N).fill(0);
  for (const [text, n] of keys) {
    const v = Number(n % BigInt(N));
    const was = (await counts())[v];
    t.equal((await api.post(`/data/${text}`, text)).status, 201, `POST ${text}`);
    t.equal(await api.json<number>(`/vdisks/${v}/records/count`), was + 1, `${text} -> vdisk ${v}`);
    expected[v]++;
  }
  t.same(await counts(), expected, 'every record counted once, in the vdisk of its key');
  for (const [text] of keys) t.equal((await api.get(`/data/${text}`)).text, text, `GET ${text}`);

  const r = await api.get('/vdisks/0/records/count');
  t.ok(isJson(r), 'records/count is JSON');
  t.match(r.text, /^\d+$/, 'a bare integer');
});
