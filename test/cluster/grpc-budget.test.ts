// gRPC request messages within http_body_memory_limit, as REST bodies are:
// bob clients putting large values at once are read one budget's worth at a
// time, and the node's resident set stays within the bound; a message that
// stalls holds its room, others then wait and are refused with
// RESOURCE_EXHAUSTED, small ones go on, and the stalled call ends after
// http_request_timeout, giving its room back. A real oysterd, bob-shaped
// clients (test/helpers/grpc-client.ts) and a raw HTTP/2 client for the
// message that stalls.
import fs from 'node:fs';
import http2 from 'node:http2';
import t, { Test } from 'tap';
import { BobClient, Status, codeOf, keyBytes } from '../helpers/grpc-client';
import { OysterProcess, startNode, writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import { Rng } from '../robustness/lib';

const MiB = 1024 * 1024;
const VALUE = 12 * MiB;
const TS = 1_700_000_000;

function peakRss(pid: number): number {
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
}

async function node(t: Test, requestTimeout: string): Promise<{ proc: OysterProcess; address: string }> {
  const files = await writeCluster(tempDir(t), { nodes: [{ name: 'n1' }], vdisks: 2, keySize: 8 }, {
    httpMaxBodySize: '64 MiB',
    extra: { http_body_memory_limit: '16 MiB', http_request_timeout: requestTimeout, http_headers_timeout: '2s' },
  });
  const proc = await startNode(files, 'n1');
  t.teardown(async () => {
    if (proc.child.exitCode === null && proc.child.signalCode === null) await proc.stop();
  });
  return { proc, address: files.addresses.n1 };
}

/** A Put whose message announces `size` bytes and sends `sent` of them, then nothing. Resolves with the status the node ends it with. */
function stalledPut(address: string, size: number, sent: number): { status: Promise<{ code: number; details: string }>; close: () => void } {
  const session = http2.connect(`http://${address}`);
  session.on('error', () => undefined);
  const stream = session.request({ ':method': 'POST', ':path': '/bob_storage.BobApi/Put', 'content-type': 'application/grpc', te: 'trailers' });
  stream.on('error', () => undefined);
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(size, 1);
  stream.write(prefix);
  stream.write(Buffer.alloc(sent, 1));
  const status = new Promise<{ code: number; details: string }>((resolve) => {
    const take = (h: http2.IncomingHttpHeaders) => {
      if (h['grpc-status'] !== undefined) resolve({ code: Number(h['grpc-status']), details: decodeURIComponent(String(h['grpc-message'] ?? '')) });
    };
    stream.on('response', take);
    stream.on('trailers', take);
  });
  stream.resume();
  return { status, close: () => session.destroy() };
}

t.test('large gRPC Puts at once are read within http_body_memory_limit', async (t) => {
  const { proc, address } = await node(t, '60s');
  const clients = Array.from({ length: 8 }, () => new BobClient(address, 60_000));
  t.teardown(() => clients.forEach((c) => c.close()));
  const values = clients.map((_, i) => new Rng(i + 1).bytes(VALUE));
  await clients[0].put(keyBytes(1, 8), Buffer.from('warm'), TS);
  const before = peakRss(proc.child.pid!);
  await Promise.all(clients.map((c, i) => c.put(keyBytes(100 + i, 8), values[i], TS)));
  const grew = peakRss(proc.child.pid!) - before;
  // One 12 MiB message at a time fits in 16 MiB: held as grpc-js joins and
  // decodes it (about three copies), plus what the code run for the first
  // time takes. Eight read at once took over 200 MiB.
  t.ok(grew < 100 * MiB, `peak resident set grew ${(grew / MiB).toFixed(0)} MiB for 8 Puts of 12 MiB`);
  for (const [i, v] of values.entries()) t.ok((await clients[0].get(keyBytes(100 + i, 8))).data.equals(v), `value ${i} byte-exact`);
});

t.test('a gRPC message that stalls holds its room until http_request_timeout', async (t) => {
  const { address } = await node(t, '7s');
  const client = new BobClient(address, 30_000);
  t.teardown(() => client.close());
  const stalled = stalledPut(address, VALUE, MiB);
  t.teardown(stalled.close);
  const started = Date.now();
  // Its 12 MiB are taken: another 12 MiB waits for room, and is refused after the budget's wait.
  const refused = await client.put(keyBytes(200, 8), new Rng(7).bytes(VALUE), TS).then(
    () => null,
    (err: unknown) => err,
  );
  t.equal(codeOf(refused), Status.RESOURCE_EXHAUSTED, 'a large Put that finds no room: RESOURCE_EXHAUSTED');
  t.match(String((refused as { details?: string }).details), /http_body_memory_limit/);
  t.ok(Date.now() - started >= 4500, 'after waiting for room');
  await client.put(keyBytes(201, 8), Buffer.from('small'), TS);
  t.equal((await client.get(keyBytes(201, 8))).data.toString(), 'small', 'small Puts go on meanwhile');
  const ended = await stalled.status;
  t.equal(ended.code, Status.DEADLINE_EXCEEDED, `the stalled call ends (${ended.details})`);
  t.match(ended.details, /http_request_timeout/);
  t.ok(Date.now() - started < 15_000, 'after http_request_timeout');
  const value = new Rng(8).bytes(VALUE);
  await client.put(keyBytes(202, 8), value, TS);
  t.ok((await client.get(keyBytes(202, 8))).data.equals(value), 'its room is back: a large Put goes through');
  t.equal(codeOf(await client.get(keyBytes(200, 8)).catch((e: unknown) => e)), Status.NOT_FOUND, 'the refused Put stored nothing');
});
