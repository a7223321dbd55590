// The Replicas service as a peer (or a stranger) sees it: Files lists the
// closed files of a vdisk, ReadFile streams their bytes exactly (in chunks of
// at most 1 MiB, any range), refuses everything else with INVALID_ARGUMENT,
// and a client that walks away mid-stream costs the node nothing.
import fs from 'node:fs';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import { Replicas } from '../../src/grpc/proto';
import { TestCluster } from '../cluster/lib';

const MiB = 1024 * 1024;

interface FileInfo {
  name: string;
  size: string;
}
interface Listed {
  partitions: Array<{ partition: string; files: FileInfo[] }>;
}

type ReplicasClient = grpc.Client & {
  Files(req: object, cb: (err: grpc.ServiceError | null, res?: Listed) => void): void;
  ReadFile(req: object): grpc.ClientReadableStream<{ data: Buffer }>;
};

function files(client: ReplicasClient, vdisk: number): Promise<Listed> {
  return new Promise((resolve, reject) => client.Files({ vdisk }, (err, res) => (err ? reject(err) : resolve(res!))));
}

/** The chunks of one ReadFile, or its error. */
function readFile(client: ReplicasClient, req: object): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const call = client.ReadFile(req);
    call.on('data', (m: { data: Buffer }) => chunks.push(m.data));
    call.on('error', reject);
    call.on('end', () => resolve(chunks));
  });
}

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'OK';
  } catch (err) {
    return grpc.status[(err as grpc.ServiceError).code];
  }
}

t.test('ReadFile streams the bytes of closed files exactly, and nothing else', async (t) => {
  const c = await TestCluster.start(t, {
    nodes: ['n0'],
    replicas: [['n0']],
    keySize: 8,
    // Blobs of 12 records of 200 KiB: three closed ones, each more than two chunks.
    opts: { quorum: 1, maxDataInBlob: 12 },
  });
  const value = (k: number) => Buffer.alloc(200 * 1024, k);
  for (let k = 0; k < 40; k++) await c.put('n0', k, value(k));

  const client = new Replicas(c.address('n0'), grpc.credentials.createInsecure(), { 'grpc.max_receive_message_length': -1 }) as unknown as ReplicasClient;
  t.teardown(() => client.close());
  const listed = await files(client, 0);
  const all = listed.partitions.flatMap((p) => p.files.map((f) => ({ partition: p.partition, name: f.name, size: Number(f.size) })));
  const blobs = all.filter((f) => f.name.endsWith('.blob'));
  t.ok(blobs.length >= 2, `closed blobs listed (${blobs.length})`);
  t.ok(all.some((f) => f.name.endsWith('.index')), 'and their index files');

  for (const f of all) {
    const onDisk = fs.readFileSync(path.join(c.vdiskDir('n0', 0), f.partition, f.name));
    t.equal(onDisk.length, f.size, `${f.name}: the size listed`);
    const chunks = await readFile(client, { vdisk: 0, partition: f.partition, name: f.name, offset: 0, length: f.size });
    t.ok(
      chunks.every((ch) => ch.length <= MiB),
      `${f.name}: ${chunks.length} chunks of at most 1 MiB`,
    );
    t.ok(Buffer.concat(chunks).equals(onDisk), `${f.name}: the bytes on disk`);
  }

  const big = blobs[0];
  const onDisk = fs.readFileSync(path.join(c.vdiskDir('n0', 0), big.partition, big.name));
  const range = async (offset: number, length: number) =>
    Buffer.concat(await readFile(client, { vdisk: 0, partition: big.partition, name: big.name, offset, length }));
  t.ok((await range(MiB - 7, MiB + 20)).equals(onDisk.subarray(MiB - 7, 2 * MiB + 13)), 'a range across chunk boundaries');
  t.ok((await range(big.size - 10, 64 * MiB)).equals(onDisk.subarray(big.size - 10)), 'shorter only at the end of the file');
  t.equal((await range(big.size + 100, 1)).length, 0, 'nothing past the end');

  const refused = async (req: object) => code(readFile(client, req));
  const ok = { vdisk: 0, partition: big.partition, name: big.name, offset: 0, length: 10 };
  t.equal(await refused({ ...ok, vdisk: 7 }), 'INVALID_ARGUMENT', 'an unknown vdisk');
  t.equal(await refused({ ...ok, name: '../../../etc/passwd' }), 'INVALID_ARGUMENT', 'a path out of the vdisk');
  t.equal(await refused({ ...ok, partition: '..' }), 'INVALID_ARGUMENT', 'a partition that is not one');
  t.equal(await refused({ ...ok, name: big.name.replace(/\.\d+\.blob$/, '.999.blob') }), 'INVALID_ARGUMENT', 'a blob that is not there');
  const active = fs.readdirSync(path.join(c.vdiskDir('n0', 0), big.partition)).filter((n) => n.endsWith('.blob') && !all.some((f) => f.name === n));
  t.ok(active.length > 0, 'the active blob is not listed');
  for (const name of active) t.equal(await refused({ ...ok, name }), 'INVALID_ARGUMENT', `the active blob ${name} is not served`);
  t.equal(await refused({ ...ok, length: 0 }), 'INVALID_ARGUMENT', 'length 0');
  t.equal(await refused({ ...ok, length: 64 * MiB + 1 }), 'INVALID_ARGUMENT', 'length over 64 MiB');
  t.equal(await refused({ ...ok, offset: '18446744073709551615' }), 'INVALID_ARGUMENT', 'an offset beyond 2^53');

  // Bytes that are no ReadFileRequest.
  const raw = new grpc.Client(c.address('n0'), grpc.credentials.createInsecure());
  t.teardown(() => raw.close());
  const garbage = await code(
    new Promise((resolve, reject) => {
      const call = raw.makeServerStreamRequest('/oyster.Replicas/ReadFile', (b: Buffer) => b, (b: Buffer) => b, Buffer.from([0x0a, 0xff, 0xff]));
      call.on('data', () => undefined);
      call.on('error', reject);
      call.on('end', resolve);
    }),
  );
  t.equal(garbage, 'INVALID_ARGUMENT', 'an undecodable request');

  // Clients that cancel after the first chunk of a whole blob, many times:
  // the node goes on serving, and its memory does not keep what they left.
  const rssBefore = await metric(c.url('n0'), 'process_resident_memory_bytes');
  for (let i = 0; i < 50; i++) {
    await new Promise<void>((resolve) => {
      const call = client.ReadFile({ vdisk: 0, partition: big.partition, name: big.name, offset: 0, length: big.size });
      call.once('data', () => call.cancel());
      call.on('error', () => resolve());
      call.on('end', () => resolve());
    });
  }
  t.ok(Buffer.concat(await readFile(client, { ...ok, length: big.size })).equals(onDisk), 'still served whole after 50 cancelled streams');
  const rssAfter = await metric(c.url('n0'), 'process_resident_memory_bytes');
  t.ok(rssAfter - rssBefore < 64 * MiB, `RSS ${((rssAfter - rssBefore) / MiB).toFixed(1)} MiB more after 50 cancelled streams of ${(big.size / MiB).toFixed(1)} MiB`);
});

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = new RegExp(`^(?:oyster_)?${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
  if (!m) throw new Error(`no ${name} in /metrics`);
  return Number(m[1]);
}
