// docs/API.md stays true to the code: its curl examples run, in order, against
// a real node set up as the document says, and every response must match the
// documented one (status, headers shown, body shape with placeholders). The
// endpoint headings must cover exactly the routes the REST app serves, each
// method with an example. Conventions: "About the examples" in docs/API.md.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import t from 'tap';
import { ownerHash } from '../../src/keys/owner-hash';
import { createMetrics } from '../../src/metrics/registry';
import { Authenticator } from '../../src/auth/authenticator';
import { createRestApp } from '../../src/rest/app';
import type { RestDeps } from '../../src/rest/deps';
import { DocExample, matchJson, matchText, parseDoc, routePattern, routeShape, Substitutions } from './lib/api-doc';
import { startRestNode } from './lib/node';

const DOC = path.resolve(__dirname, '..', '..', '..', 'docs', 'API.md');
const doc = parseDoc(fs.readFileSync(DOC, 'utf8'));

interface RawReply {
  status: number;
  reason: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** Sends the request exactly as curl would: the path as written, raw. */
function send(base: string, ex: DocExample): Promise<RawReply> {
  const { request } = ex;
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...request.headers };
    if (request.body !== undefined) headers['Content-Length'] = String(request.body.length);
    const req = http.request(`${base}${request.path}`, { method: request.method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, reason: res.statusMessage ?? '', headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(request.body);
  });
}

/** How the documented response differs from the real one. */
function compare(ex: DocExample, r: RawReply, subs: Substitutions): string[] {
  const want = ex.response;
  const out: string[] = [];
  if (r.status !== want.status || r.reason !== want.reason) out.push(`status: got ${r.status} ${r.reason}, documented ${want.status} ${want.reason}`);
  for (const [name, value] of want.headers) {
    const got = r.headers[name.toLowerCase()];
    const text = Array.isArray(got) ? got.join(', ') : got;
    if (text === undefined) out.push(`header ${name}: missing`);
    else if (matchText(value, text, subs).length > 0) out.push(`header ${name}: got ${JSON.stringify(text)}, documented ${JSON.stringify(value)}`);
  }
  if (want.body === undefined) {
    if (ex.request.method === 'HEAD' && r.body.length > 0) out.push('HEAD answered with a body');
    return out;
  }
  const isJson = /^application\/json/.test(String(r.headers['content-type'] ?? ''));
  if (isJson && want.body.trim() !== '') {
    let documented: unknown;
    let actual: unknown;
    try {
      documented = JSON.parse(want.body);
    } catch (err) {
      return [...out, `the documented body is not JSON: ${(err as Error).message}`];
    }
    try {
      actual = JSON.parse(r.body.toString('utf8'));
    } catch {
      return [...out, `the response is not JSON: ${r.body.toString('utf8').slice(0, 200)}`];
    }
    out.push(...matchJson(documented, actual, subs));
  } else {
    out.push(...matchText(want.body, r.body.toString('utf8'), subs).map((d) => `body: ${d}`));
  }
  return out;
}

t.test('docs/API.md is well-formed', async (t) => {
  t.same(doc.problems, [], 'no malformed examples or headings');
  t.ok(doc.examples.length >= 40, `${doc.examples.length} examples`);
  t.ok(doc.endpoints.length >= 25, `${doc.endpoints.length} endpoint headings`);
});

t.test('the endpoint headings are the routes the server serves', async (t) => {
  // The app is only built to list its routes: constructing the routers must
  // not need real dependencies, so any property read gives a stand-in.
  const standIn: unknown = new Proxy(function standIn() {}, {
    get: (_target, key) => (key === Symbol.iterator ? function* empty() {} : key === Symbol.toPrimitive ? () => 'x' : standIn),
    apply: () => standIn,
    construct: () => standIn as object,
  });
  const app = createRestApp(standIn as RestDeps, createMetrics({ version: '0.0.0', revision: 'test' }), new Authenticator({ users: null, nodes: new Map(), resolvePeriodMs: 0 }));
  const routes = new Set<string>();
  for (const mw of app.middleware as Array<{ router?: { stack: Array<{ methods: string[]; path: string | RegExp }> } }>) {
    for (const layer of mw.router?.stack ?? []) {
      if (typeof layer.path !== 'string' || layer.methods.length === 0) continue;
      // koa-router adds HEAD to every GET route; a HEAD of its own is a route.
      const methods = layer.methods.length === 1 ? layer.methods : layer.methods.filter((m) => m !== 'HEAD');
      for (const m of methods) routes.add(`${m} ${routeShape(layer.path)}`);
    }
  }
  const documented = new Set(doc.endpoints.flatMap((e) => e.methods.map((m) => `${m} ${routeShape(e.path)}`)));
  t.ok(routes.size >= 25, `${routes.size} routes found`);
  t.same([...routes].filter((r) => !documented.has(r)).sort(), [], 'every route is documented');
  // A documented HEAD of a GET route is the HEAD koa-router serves for it.
  const served = (r: string) => routes.has(r) || (r.startsWith('HEAD ') && routes.has(`GET ${r.slice(5)}`));
  t.same([...documented].filter((r) => !served(r)).sort(), [], 'every documented endpoint is a route');
});

t.test('every documented endpoint and method has an example', async (t) => {
  for (const e of doc.endpoints) {
    const re = routePattern(e.path);
    for (const m of e.methods) {
      const n = doc.examples.filter((x) => x.request.method === m && re.test(x.request.path.split('?')[0])).length;
      t.ok(n > 0, `${m} ${e.path} (line ${e.line}): ${n} examples`);
    }
  }
});

t.test('the examples, run in order against a node set up as the document says', async (t) => {
  const node = await startRestNode(t, {
    spec: { nodes: [{ name: 'local', disks: ['disk0'] }], vdisks: 4, keySize: 16 },
    // An old partition copied into vdisk 0 before the start (About the examples).
    prepare: (files) => fs.mkdirSync(path.join(files.disks.local.disk0, 'bob', '0', `1700000000_${ownerHash('local')}`), { recursive: true }),
  });
  t.equal(ownerHash('local'), '7PjC4WXHwF', 'the hash the document shows');
  const subs: Substitutions = { data: path.join(node.dir, 'local'), address: node.files.addresses.local };
  for (const ex of doc.examples) {
    const r = await send(node.url, ex);
    const diff = compare(ex, r, subs);
    t.same(diff, [], `line ${ex.line}: ${ex.command}`);
  }
  t.ok(node.alive());
});
