// bob's bobt over REST: 20 000 random GET / POST / DELETE / HEAD on 2 000
// decimal keys with values of 0–100 000 bytes against one real node, each
// answer checked against an in-memory model. 16 workers run at once; each
// key belongs to one worker, so the model stays exact. bob's timestamps are
// whole seconds, so put → delete → put on one key within a second must
// resolve to the later write by the rest of the version; bursts of those are
// mixed in.
// Set OYSTER_TEST_SEED to replay a run.
import t from 'tap';
import { startNode, writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import { badLogLines, Client, Rng, seedFromEnv } from './lib';

const OPS = 20_000;
const KEYS = 2_000;
const WORKERS = 16;
const MAX_SIZE = 100_000;

t.test('20 000 random operations agree with the model', async (t) => {
  const seed = seedFromEnv();
  t.comment(`seed ${seed}`);
  const dir = tempDir(t);
  const files = await writeCluster(dir, { nodes: [{ name: 'n1' }], vdisks: 8 });
  const node = await startNode(files, 'n1');
  t.teardown(async () => {
    if (node.child.exitCode === null && node.child.signalCode === null) await node.kill();
  });
  const client = new Client(node.url, WORKERS);
  t.teardown(() => client.close());

  const model: Array<Buffer | null> = new Array(KEYS).fill(null);
  const mismatches: string[] = [];
  const counts = { GET: 0, HEAD: 0, POST: 0, DELETE: 0 };
  let ops = 0;
  let bytesOut = 0;

  const size = (r: Rng) => {
    const x = r.next();
    if (x < 0.1) return 0;
    if (x < 0.3) return r.int(100);
    if (x < 0.7) return r.int(10_000);
    return r.int(MAX_SIZE + 1);
  };

  const op = async (key: number, kind: keyof typeof counts, r: Rng) => {
    ops++;
    counts[kind]++;
    const path = `/data/${key}`;
    const want = model[key];
    const wrong = (what: string) => mismatches.push(`op ${ops} ${kind} ${key}: ${what}`);
    switch (kind) {
      case 'GET': {
        const res = await client.request('GET', path);
        if (want === null) {
          if (res.status !== 404) wrong(`${res.status}, expected 404`);
        } else if (res.status !== 200) wrong(`${res.status}, expected 200 with ${want.length} bytes`);
        else if (!res.body.equals(want)) wrong(`${res.body.length} bytes, not the ${want.length} bytes written`);
        break;
      }
      case 'HEAD': {
        const res = await client.request('HEAD', path);
        if (res.status !== (want === null ? 404 : 200)) wrong(`${res.status}, expected ${want === null ? 404 : 200}`);
        break;
      }
      case 'POST': {
        const value = r.bytes(size(r));
        const res = await client.request('POST', path, value);
        bytesOut += value.length;
        if (res.status !== 201) wrong(`${res.status}: ${res.body.toString().slice(0, 200)}`);
        else model[key] = value;
        break;
      }
      case 'DELETE': {
        const res = await client.request('DELETE', path);
        if (res.status !== 200) wrong(`${res.status}: ${res.body.toString().slice(0, 200)}`);
        else model[key] = null;
        break;
      }
    }
  };

  const started = Date.now();
  const perWorker = OPS / WORKERS;
  await Promise.all(
    Array.from({ length: WORKERS }, async (_, w) => {
      const r = new Rng(seed + 7919 * (w + 1));
      const mine = Array.from({ length: KEYS / WORKERS }, (_, i) => i * WORKERS + w);
      let done = 0;
      while (done < perWorker) {
        const key = r.pick(mine);
        const x = r.next();
        if (x < 0.05 && perWorker - done >= 4) {
          // Within one second: the later write wins on equal bob timestamps.
          await op(key, 'POST', r);
          await op(key, 'DELETE', r);
          await op(key, 'POST', r);
          await op(key, 'GET', r);
          done += 4;
          continue;
        }
        await op(key, x < 0.4 ? 'GET' : x < 0.75 ? 'POST' : x < 0.88 ? 'DELETE' : 'HEAD', r);
        done++;
      }
    }),
  );
  const seconds = (Date.now() - started) / 1000;
  t.comment(`${ops} operations in ${seconds.toFixed(1)} s (${Math.round(ops / seconds)} ops/s, ${(bytesOut / 2 ** 20).toFixed(0)} MiB written): ${JSON.stringify(counts)}`);

  // Every key, once more, after the load.
  let scanned = 0;
  for (let key = 0; key < KEYS; key++) {
    const res = await client.request('GET', `/data/${key}`);
    scanned++;
    const want = model[key];
    if (want === null ? res.status !== 404 : !(res.status === 200 && res.body.equals(want))) {
      mismatches.push(`final scan ${key}: ${res.status}, ${res.body.length} bytes; expected ${want === null ? 404 : want.length}`);
    }
  }

  t.equal(ops, OPS, `${OPS} operations`);
  t.same(mismatches.slice(0, 20), [], `100 % consistent (${mismatches.length} mismatches in ${ops + scanned} checks)`);
  t.ok(model.some((v) => v !== null) && model.some((v) => v === null), 'the model ends with live and deleted keys');
  t.same(badLogLines(node.output).slice(0, 10), [], 'no error in the node output');
  t.equal(await node.stop(), 0, 'SIGTERM: exit code 0');
});
