// The hand-written Blob message (BobApi.Get's answer) reads back through
// protobufjs as what was written, every BlobMeta field included; an answer
// up to 1 MiB is written into the buffer kept for the next, a larger one
// into its own.
import t from 'tap';
import { encodeBlob } from '../../src/grpc/blob-codec';
import { BlobMsg, BobApiService } from '../../src/grpc/proto';

const pbDecode = BobApiService.Get.responseDeserialize as (b: Buffer) => BlobMsg;

t.test('protobufjs reads what encodeBlob writes', async (t) => {
  const cases: Array<[string, BlobMsg]> = [
    ['empty value, zero timestamp', { data: Buffer.alloc(0), meta: { timestamp: '0' } }],
    ['no meta', { data: Buffer.from('v'), meta: null }],
    ['a version whole', { data: Buffer.from('value'), meta: { timestamp: '1795680839', oyster_tick: String(2 ** 52 + 1), oyster_node: 4095 } }],
    ['a tombstone', { data: Buffer.alloc(0), meta: { timestamp: String(2 ** 53 - 1), oyster_tick: '7', oyster_node: 1, oyster_deleted: true } }],
    ['1 MiB', { data: Buffer.alloc(1 << 20, 0xa5), meta: { timestamp: '5' } }],
    ['3 MiB', { data: Buffer.alloc(3 << 20, 0x5a), meta: { timestamp: '6', oyster_tick: '9' } }],
  ];
  for (const [name, m] of cases) {
    const got = pbDecode(encodeBlob(m));
    t.ok(got.data.equals(m.data), `${name}: data`);
    if (m.meta === null) {
      t.equal(got.meta, null, `${name}: no meta`);
      continue;
    }
    t.same(
      { timestamp: String(got.meta?.timestamp), tick: String(got.meta?.oyster_tick), node: got.meta?.oyster_node, deleted: got.meta?.oyster_deleted },
      { timestamp: m.meta.timestamp, tick: String(m.meta.oyster_tick ?? 0), node: m.meta.oyster_node ?? 0, deleted: m.meta.oyster_deleted ?? false },
      `${name}: meta`,
    );
  }
});

t.test('answers up to 1 MiB share the kept buffer; larger ones have their own', async (t) => {
  const meta = { timestamp: '1' };
  const a = encodeBlob({ data: Buffer.alloc(100, 1), meta });
  const b = encodeBlob({ data: Buffer.alloc(1 << 20, 2), meta });
  t.equal(a.buffer, b.buffer, 'the same memory: valid until the next call');
  const c = encodeBlob({ data: Buffer.alloc((1 << 20) + 100, 3), meta });
  t.not(c.buffer, b.buffer, 'a larger answer in a buffer of its own');
  t.ok(pbDecode(b).data.equals(Buffer.alloc(1 << 20, 2)), 'the earlier answer is untouched by it');
});
