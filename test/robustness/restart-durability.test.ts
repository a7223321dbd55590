// Acknowledged REST writes survive the end of the process. Under a
// concurrent load of POST /data/{key} (sizes from 0 B) and DELETEs, the node
// gets SIGTERM (it must finish what is in flight and exit 0) or SIGKILL; it
// is restarted on the same configuration and every key must read back as
// its last acknowledged state — or as the one operation that was in flight
// on it, unacknowledged, when the node went away. Each key belongs to one
// writer, so there is at most one such operation per key. Runs with and
// without pearl.sync_writes. Set OYSTER_TEST_SEED to replay a run.
import net from 'node:net';
import t from 'tap';
import { OysterProcess, startNode, writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import { badLogLines, Client, parseResponses, Rng, seedFromEnv, sleep } from './lib';

const KEYS = 2_000;
const WRITERS = 16;
const SIZES = [0, 0, 1, 10, 100, 1000, 4096, 10_000, 65_536];

/** undefined: never written; null: deleted; else the value. */
type State = Buffer | null | undefined;

interface KeyLog {
  acked: State;
  /** The operation sent without an answer when the node went away. */
  pending?: { value: State };
}

/** Runs the write load, then `signal()` (which resolves once the signal is sent), until the node is gone. */
async function runLoad(node: OysterProcess, seed: number, loadMs: number, signal: () => Promise<void>) {
  const client = new Client(node.url, WRITERS);
  const keys: KeyLog[] = Array.from({ length: KEYS }, () => ({ acked: undefined }));
  let acks = 0;
  let signalled = false;
  let acksAfterSignal = 0;
  const unexpected: string[] = [];

  const writer = async (w: number) => {
    const r = new Rng(seed + 104_729 * (w + 1));
    const mine = Array.from({ length: KEYS / WRITERS }, (_, i) => i * WRITERS + w);
    for (;;) {
      const key = r.pick(mine);
      const log = keys[key];
      const del = r.next() < 0.15;
      const value = del ? null : r.bytes(r.next() < 0.01 ? 200_000 + r.int(100_000) : r.pick(SIZES));
      log.pending = { value };
      let status: number;
      try {
        const res = await client.request(del ? 'DELETE' : 'POST', `/data/${key}`, value ?? undefined);
        status = res.status;
        if (status !== (del ? 200 : 201)) unexpected.push(`${del ? 'DELETE' : 'POST'} ${key}: ${status} ${res.body.toString().slice(0, 200)}`);
      } catch {
        // The node went away with this operation in flight: it stays pending.
        return;
      }
      if (status === (del ? 200 : 201)) {
        log.acked = value;
        acks++;
        if (signalled) acksAfterSignal++;
      }
      delete log.pending;
    }
  };

  const writers = Array.from({ length: WRITERS }, (_, w) => writer(w));
  await sleep(loadMs);
  await signal();
  const acksAtSignal = acks;
  signalled = true;
  const signalledAt = Date.now();
  const exit = await node.exited;
  const exitMs = Date.now() - signalledAt;
  await Promise.all(writers);
  client.close();
  return { keys, acks, acksAtSignal, acksAfterSignal, exit, exitMs, unexpected };
}

/** A POST whose body is still arriving when SIGTERM comes: it must be finished and acknowledged. */
function slowPost(url: string, key: number, value: Buffer, signal: () => void): Promise<number | string> {
  const { port } = new URL(url);
  return new Promise((resolve) => {
    const s = net.connect(Number(port), '127.0.0.1');
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => {
      chunks.push(c);
      const [res] = parseResponses(Buffer.concat(chunks), ['POST']).responses;
      if (res) {
        s.destroy();
        resolve(res.status);
      }
    });
    s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    s.on('close', () => resolve('closed without an answer'));
    s.on('connect', async () => {
      s.write(`POST /data/${key} HTTP/1.1\r\nHost: oyster\r\nContent-Length: ${value.length}\r\n\r\n`);
      s.write(value.subarray(0, value.length / 2));
      await sleep(150);
      signal();
      await sleep(300);
      s.write(value.subarray(value.length / 2));
    });
  });
}

async function verify(node: OysterProcess, keys: KeyLog[]) {
  const client = new Client(node.url, 16);
  const problems: string[] = [];
  let exact = 0;
  let tookPending = 0;
  let next = 0;
  const check = async () => {
    while (next < keys.length) {
      const key = next++;
      const log = keys[key];
      const res = await client.request('GET', `/data/${key}`);
      const got: Buffer | null | 'error' = res.status === 200 ? res.body : res.status === 404 ? null : 'error';
      const matches = (s: State) => (s === undefined || s === null ? got === null : got !== null && got !== 'error' && got.equals(s));
      if (matches(log.acked)) exact++;
      else if (log.pending && matches(log.pending.value)) tookPending++;
      else {
        const want = log.acked === undefined ? 'absent' : log.acked === null ? 'deleted' : `${log.acked.length} bytes`;
        problems.push(`key ${key}: ${res.status} ${got === 'error' ? res.body.toString().slice(0, 200) : `${res.body.length} bytes`}; acknowledged: ${want}${log.pending ? `, in flight: ${log.pending.value === null ? 'delete' : `${log.pending.value?.length} bytes`}` : ''}`);
      }
    }
  };
  await Promise.all(Array.from({ length: 16 }, check));
  client.close();
  return { problems, exact, tookPending };
}

for (const sync of [false, true]) {
  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    t.test(`${signal} under REST write load (sync_writes: ${sync}): acknowledged writes survive`, async (t) => {
      const seed = seedFromEnv();
      t.comment(`seed ${seed}`);
      const dir = tempDir(t);
      const files = await writeCluster(dir, { nodes: [{ name: 'n1' }], vdisks: 4 }, { syncWrites: sync });
      let node = await startNode(files, 'n1');
      t.teardown(async () => {
        if (node.child.exitCode === null && node.child.signalCode === null) await node.kill();
      });

      let slow: Promise<number | string> | null = null;
      const slowKey = KEYS + 1;
      const slowValue = new Rng(seed).bytes(300_000);
      const first = node;
      const load = await runLoad(node, seed, 1500, async () => {
        if (signal === 'SIGKILL') {
          first.child.kill('SIGKILL');
          return;
        }
        // A POST that starts before the signal and sends the second half of its body after it.
        await new Promise<void>((resolve) => {
          slow = slowPost(first.url, slowKey, slowValue, () => {
            first.child.kill('SIGTERM');
            resolve();
          });
        });
      });
      t.comment(`${load.acks} writes and deletes acknowledged (${load.acksAfterSignal} after the signal); exit ${load.exit} after ${load.exitMs} ms`);
      t.same(load.unexpected.slice(0, 10), [], 'every write and delete was acknowledged with its status until the node went away');
      t.ok(load.acksAtSignal > 200, `${load.acksAtSignal} acknowledgements before the signal`);
      if (signal === 'SIGTERM') {
        t.equal(load.exit, 0, 'exit code 0');
        t.ok(load.exitMs < 10_000, `exited ${load.exitMs} ms after the signal`);
        t.equal(await slow, 201, 'a POST whose body was still arriving at SIGTERM was finished and acknowledged');
        t.same(badLogLines(node.output).slice(0, 10), [], 'no error in the node output');
      } else {
        t.equal(load.exit, 'SIGKILL', 'killed');
      }

      node = await startNode(files, 'n1');
      const result = await verify(node, load.keys);
      t.comment(`${result.exact} keys as acknowledged, ${result.tookPending} with their in-flight operation applied`);
      t.same(result.problems.slice(0, 20), [], `every acknowledged write and delete is there, byte-exact (${result.problems.length} problems)`);
      if (signal === 'SIGTERM') {
        const client = new Client(node.url, 1);
        const res = await client.request('GET', `/data/${slowKey}`);
        client.close();
        t.ok(res.status === 200 && res.body.equals(slowValue), 'the slow POST is stored whole');
      }
      // The node goes on from the recovered state.
      const client = new Client(node.url, 1);
      const put = await client.request('POST', '/data/0', 'after restart');
      const get = await client.request('GET', '/data/0');
      client.close();
      t.equal(put.status, 201, 'writes after the restart');
      t.equal(get.body.toString(), 'after restart', 'and reads them');
      t.same(badLogLines(node.output).slice(0, 10), [], 'no error in the restarted node output');
      t.equal(await node.stop(), 0, 'the restarted node stops cleanly');
    });
  }
}
