// oyster bench against a real node: every behavior, verification,
// per-second progress and the summary's figures.
import t from 'tap';
import { startNode, writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import { oyster } from './lib';

interface Summary {
  behavior: string;
  elapsedSeconds: number;
  operations: Record<string, { count: number; errors: number; opsPerSecond: number; latencyMs: Record<string, number> }>;
  total: { count: number; errors: number; opsPerSecond: number; mibPerSecond: number; latencyMs: { p50: number; p90: number; p99: number; max: number } };
  errors: Record<string, number>;
  gets: { found: number; notFound: number };
  exists: { present: number; checked: number };
  verify: { checked: number; ok: number } | null;
}

const N = 1500;

t.test('bench against a node', async (t) => {
  const dir = tempDir(t);
  const files = await writeCluster(dir, { nodes: [{ name: 'a' }] });
  const node = await startNode(files, 'a');
  t.teardown(() => node.stop());
  const rest = ['--rest', node.url];
  const grpc = ['--grpc', files.addresses.a];
  const bench = async (args: string[], code = 0) => {
    const r = await oyster(['bench', '--json', ...args], { timeoutMs: 120_000 });
    t.equal(r.code, code, `bench ${args.join(' ')} exits ${code}`);
    return { summary: JSON.parse(r.stdout) as Summary, stderr: r.stderr };
  };

  await t.test('put with --verify over REST, then get, exist and delete over gRPC', async (t) => {
    const put = (await bench(['-b', 'put', '-n', String(N), '-c', '8', '-l', '2KiB', '--verify', ...rest])).summary;
    t.equal(put.total.count, N);
    t.equal(put.total.errors, 0);
    t.same(put.errors, {});
    t.same(put.verify, { what: 'keys written are present', checked: N, ok: N });
    const l = put.total.latencyMs;
    t.ok(l.p50 > 0 && l.p50 <= l.p90 && l.p90 <= l.p99 && l.p99 <= l.max, `percentiles in order: ${JSON.stringify(l)}`);
    t.ok(put.total.opsPerSecond > 0 && put.total.mibPerSecond > 0);

    const get = (await bench(['-b', 'get', '-n', String(N), '--verify', ...grpc])).summary;
    t.same(get.gets, { found: N, notFound: 0 });
    t.same(get.verify, { what: 'values read are the ones put wrote', checked: N, ok: N });
    t.equal(get.total.mibPerSecond > 0, true);

    const exist = (await bench(['-b', 'exist', '-n', '500', '--mode', 'random', '--keys', String(N), '--verify', ...grpc])).summary;
    t.same(exist.exists, { present: 500, checked: 500 });

    const del = (await bench(['-b', 'delete', '-n', '300', '--verify', ...grpc])).summary;
    t.same(del.verify, { what: 'keys deleted are absent', checked: 300, ok: 300 });
    const after = (await bench(['-b', 'get', '-n', '300', ...rest])).summary;
    t.same(after.gets, { found: 0, notFound: 300 }, 'a get that finds nothing is not an error');
    await bench(['-b', 'get', '-n', '300', '--verify', ...rest], 1);
  });

  await t.test('mixed with --time: a progress line every second, every operation in the summary', async (t) => {
    const { summary, stderr } = await bench(['-b', 'mixed', '--mix', 'put=1,get=2,exist=1', '--time', '2500ms', '--mode', 'random', '--keys', '500', '--verify', ...grpc]);
    const lines = stderr.trim().split('\n');
    t.ok(lines.length >= 2, `progress lines: ${stderr}`);
    t.match(lines[0], /^\[ {3}1s\] mixed \d+ op\/s \(put \d+, get \d+, exist \d+\), [\d.]+ MiB\/s, p50 [\d.]+ ms, p99 [\d.]+ ms, errors 0$/);
    t.same(Object.keys(summary.operations).sort(), ['exist', 'get', 'put']);
    t.ok(summary.elapsedSeconds >= 2.5 && summary.elapsedSeconds < 10, `ran for --time: ${summary.elapsedSeconds}`);
    t.equal(summary.verify!.ok, summary.verify!.checked, 'every value read is the one put wrote');
  });

  await t.test('the text summary; a wrong value fails --verify', async (t) => {
    const text = await oyster(['bench', '-n', '200', '-f', '5000', ...rest]);
    t.equal(text.code, 0);
    t.match(text.stdout, /^put against REST http:\/\/127\.0\.0\.1:\d+: 200 requests in [\d.]+ s, concurrency 16, payload 1024 B, keys 5000\.\.5199 sequential/);
    t.match(text.stdout, /operation\s+requests\s+errors\s+op\/s\s+MiB\/s\s+mean ms\s+p50 ms\s+p90 ms\s+p99 ms\s+max ms\nput\s+200\s+0\s/);
    t.match(text.stdout, 'errors: none');
    t.equal((await oyster(['put', '5100', '--value', 'not what bench wrote', ...rest])).code, 0);
    const wrong = await bench(['-b', 'get', '-n', '200', '-f', '5000', '--verify', ...rest], 1);
    t.same(wrong.summary.verify, { what: 'values read are the ones put wrote', checked: 200, ok: 199 });
  });

  await t.test('a node that does not answer: exit 3', async (t) => {
    const r = await oyster(['bench', '-n', '10', '--rest', 'http://127.0.0.1:1']);
    t.equal(r.code, 3);
    t.match(r.stderr, 'does not answer');
  });
});
