// TLS (node.yaml `tls`) with certificates made by openssl at
// test time: a CA, and a node certificate for the domain_name and 127.0.0.1.
// tls.rest serves the REST API over https; tls.grpc serves gRPC over TLS and
// makes the nodes call each other over TLS (checking the peer certificate
// against ca_cert_path and domain_name). TLS files that are missing,
// unreadable or not what they should be stop oysterd before it listens, with
// a configuration error naming the key. Clients that read nothing of large
// answers over https take small parts of the memory budget past its half.
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import tls from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import t from 'tap';
import { oyster, PACKAGING } from '../cli/lib';
import { TestCluster } from '../cluster/lib';
import { keyBytes, Status } from '../helpers/grpc-client';
import { hello, RawLink } from '../helpers/link-client';
import { freePort, startNode, startOysterd, writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';
import { sample } from '../rest/lib/metrics';

const DOMAIN = 'oyster.test';
const KEY_SIZE = 8;

interface Pki {
  ca: string;
  cert: string;
  key: string;
  /** A second CA that signed nothing of ours. */
  otherCa: string;
}

function openssl(dir: string, ...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** A CA and a node certificate (SAN: DNS:oyster.test, IP:127.0.0.1) signed by it, valid for a year. */
function makePki(dir: string): Pki {
  const ec = EC;
  openssl(dir, 'req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '365', '-subj', '/CN=Oyster test CA');
  openssl(dir, 'req', '-x509', ...ec, '-keyout', 'other-ca.key', '-out', 'other-ca.crt', '-days', '365', '-subj', '/CN=Another CA');
  openssl(dir, 'req', ...ec, '-keyout', 'node.key', '-out', 'node.csr', '-subj', `/CN=${DOMAIN}`);
  fs.writeFileSync(
    path.join(dir, 'node.ext'),
    [`subjectAltName=DNS:${DOMAIN},IP:127.0.0.1`, 'basicConstraints=CA:FALSE', 'keyUsage=digitalSignature,keyEncipherment', 'extendedKeyUsage=serverAuth,clientAuth', ''].join('\n'),
  );
  openssl(dir, 'x509', '-req', '-in', 'node.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'node.crt', '-days', '365', '-extfile', 'node.ext');
  const p = (f: string) => path.join(dir, f);
  return { ca: p('ca.crt'), cert: p('node.crt'), key: p('node.key'), otherCa: p('other-ca.crt') };
}

/**
 * A certificate for node.key signed by the CA of `dir` (made by makePki),
 * valid from `start` to `end` (openssl's YYYYMMDDHHMMSSZ): openssl ca sets
 * dates in the past or the future, which x509 -days cannot.
 */
function certBetween(dir: string, name: string, start: string, end: string): string {
  const db = path.join(dir, `${name}.db`);
  fs.mkdirSync(db);
  fs.writeFileSync(path.join(db, 'index.txt'), '');
  fs.writeFileSync(path.join(db, 'serial'), '01\n');
  fs.writeFileSync(
    path.join(db, 'ca.cnf'),
    ['[ca]', 'default_ca = d', '[d]', `database = ${db}/index.txt`, `new_certs_dir = ${db}`, `serial = ${db}/serial`, 'default_md = sha256', 'policy = p', '[p]', 'commonName = supplied', ''].join('\n'),
  );
  openssl(dir, 'ca', '-batch', '-config', path.join(db, 'ca.cnf'), '-cert', 'ca.crt', '-keyfile', 'ca.key', '-in', 'node.csr', '-out', `${name}.crt`, '-extfile', 'node.ext', '-startdate', start, '-enddate', end, '-notext');
  return path.join(dir, `${name}.crt`);
}

/** openssl's date form of `ms` since the epoch. */
const opensslDate = (ms: number) => new Date(ms).toISOString().replace(/[-:T]/g, '').slice(0, 14) + 'Z';

interface HttpsReply {
  status: number;
  text: string;
}

/** One request over https (or http) with the given CA; rejects on TLS or connection errors. */
function request(url: string, method: string, ca?: Buffer, body?: string): Promise<HttpsReply> {
  return new Promise((resolve, reject) => {
    const onResponse = (res: http.IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    };
    const req = url.startsWith('https:')
      ? https.request(url, { method, ca, timeout: 10_000 }, onResponse)
      : http.request(url, { method, timeout: 10_000 }, onResponse);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(body);
  });
}

// A BobApi client with chosen channel credentials (test/helpers/grpc-client.ts speaks plaintext only).
const definition = protoLoader.loadSync(path.resolve(__dirname, '..', '..', '..', 'src', 'grpc', 'bob.proto'), {
  keepCase: true,
  longs: String,
  enums: Number,
  defaults: true,
});
const BobApi = (grpc.loadPackageDefinition(definition) as unknown as { bob_storage: { BobApi: grpc.ServiceClientConstructor } }).bob_storage.BobApi;

function grpcGet(address: string, credentials: grpc.ChannelCredentials, key: Buffer, options: grpc.ChannelOptions = {}): Promise<Buffer> {
  const client = new BobApi(address, credentials, options);
  return new Promise<Buffer>((resolve, reject) => {
    const md = new grpc.Metadata();
    (client as unknown as Record<string, (...a: unknown[]) => void>).Get(
      { key: { key }, options: { force_node: true, source: 1 } },
      md,
      { deadline: Date.now() + 5000 },
      (err: grpc.ServiceError | null, res?: { data: Buffer }) => (err ? reject(err) : resolve(res!.data)),
    );
  }).finally(() => client.close());
}

const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => Status.OK,
    (err: grpc.ServiceError) => err.code,
  );

t.test('TLS for REST and gRPC in a 2-node cluster', async (t) => {
  const pki = makePki(tempDir(t, 'oyster-pki-'));
  const ca = fs.readFileSync(pki.ca);
  const tls = { ca_cert_path: pki.ca, cert_path: pki.cert, pkey_path: pki.key, domain_name: DOMAIN, rest: true, grpc: true };
  // Both vdisks on both nodes, quorum 2: a write succeeds only if the peer took it over TLS.
  const c = await TestCluster.start(t, {
    nodes: ['n1', 'n2'],
    replicas: [
      ['n1', 'n2'],
      ['n2', 'n1'],
    ],
    keySize: KEY_SIZE,
    opts: { quorum: 2, extra: { tls } },
  });
  await c.waitLinks();
  const https1 = c.url('n1').replace('http:', 'https:');
  const https2 = c.url('n2').replace('http:', 'https:');
  const serving = JSON.parse(c.proc('n1').output.find((l) => l.includes('"node is serving"'))!) as { tls: unknown };
  t.same(serving.tls, { rest: true, grpc: true }, 'the node says it serves REST and gRPC over TLS');

  t.test('REST over https', async (t) => {
    const status = await request(`${https1}/status`, 'GET', ca);
    t.equal(status.status, 200, 'a client trusting the CA gets /status');
    t.equal(JSON.parse(status.text).name, 'n1');
    const put = await request(`${https1}/data/21`, 'POST', ca, 'over tls');
    t.equal(put.status, 201, `POST /data/21 through n1 with quorum 2: ${put.text}`);
    t.equal((await request(`${https2}/data/21`, 'GET', ca)).text, 'over tls', 'read back through n2 over https');
    // Read in parts: over TLS the parts pass through buffers, not sendfile.
    const large = Array.from({ length: 400_000 }, (_, i) => `${i},`).join('');
    t.equal((await request(`${https1}/data/22`, 'POST', ca, large)).status, 201);
    for (const url of [https1, https2]) t.ok((await request(`${url}/data/22`, 'GET', ca)).text === large, `a ${large.length}-byte value read back over https`);
    const untrusted = await request(`${https1}/status`, 'GET').then(
      () => null,
      (err: NodeJS.ErrnoException) => err.code,
    );
    t.match(untrusted, /CERT|SIGNED|VERIFY/, `a client that does not trust the CA is refused (${untrusted})`);
    const otherCa = await request(`${https1}/status`, 'GET', fs.readFileSync(pki.otherCa)).then(
      () => null,
      (err: NodeJS.ErrnoException) => err.code,
    );
    t.ok(otherCa, `a client trusting another CA is refused (${otherCa})`);
    const plain = await request(`${c.url('n1')}/status`, 'GET').then(
      (r) => `HTTP ${r.status}`,
      (err: NodeJS.ErrnoException) => err.code ?? err.message,
    );
    t.notMatch(plain, /^HTTP 2/, `a plain-http client gets no answer from the https port (${plain})`);
  });

  t.test('gRPC over TLS, between the nodes too', async (t) => {
    const key = keyBytes(21, KEY_SIZE);
    const secure = grpc.credentials.createSsl(ca);
    for (const n of ['n1', 'n2']) {
      const got = await grpcGet(c.address(n), secure, key);
      t.equal(got.toString(), 'over tls', `${n}'s own replica holds the value written through n1: the nodes talk over TLS`);
    }
    const byName = await grpcGet(c.address('n2'), secure, key, { 'grpc.ssl_target_name_override': DOMAIN, 'grpc.default_authority': DOMAIN });
    t.equal(byName.toString(), 'over tls', `a client checking the name ${DOMAIN}, as the nodes do`);
    t.equal(await codeOf(grpcGet(c.address('n2'), grpc.credentials.createInsecure(), key)), Status.UNAVAILABLE, 'an insecure client is refused');
    t.equal(await codeOf(grpcGet(c.address('n2'), grpc.credentials.createSsl(fs.readFileSync(pki.otherCa)), key)), Status.UNAVAILABLE, 'a client trusting another CA is refused');
    const wrongName = await codeOf(grpcGet(c.address('n2'), secure, key, { 'grpc.ssl_target_name_override': 'not-oyster.test' }));
    t.equal(wrongName, Status.UNAVAILABLE, 'a client expecting another name is refused');
    // Operations links are plaintext: between TLS nodes the operations stay on gRPC, and a link is refused.
    const m1 = (await request(`${https1}/metrics`, 'GET', ca)).text;
    t.match(m1, /^oyster_peer_links_opened_total\{peer="n2"\} 0$/m, 'no operations link between TLS nodes');
    t.match(m1, /^oyster_peer_streams_opened_total\{peer="n2"\} [1-9]/m, 'their operations went over a gRPC stream');
    const link = await RawLink.open(c.address('n2'), hello(''));
    t.equal(link.welcome?.code, Status.FAILED_PRECONDITION, `a plaintext link to a TLS node is refused: ${link.welcome?.details}`);
    await link.closed;
    const peerFailures = [...c.proc('n1').output, ...c.proc('n2').output].filter((l) => /"level":"(warn|error)"/.test(l));
    t.same(peerFailures, [], 'no warnings or errors in the node logs');
  });

  t.test('the expiry of the certificates is a metric', async (t) => {
    const text = (await request(`${https1}/metrics`, 'GET', ca)).text;
    for (const [certificate, file] of [['node', pki.cert], ['ca', pki.ca]]) {
      const m = new RegExp(`^oyster_tls_cert_expiry_timestamp_seconds\\{[^}]*certificate="${certificate}"[^}]*\\} (\\d+)$`, 'm').exec(text);
      const notAfter = Date.parse(new crypto.X509Certificate(fs.readFileSync(file)).validTo) / 1000;
      t.equal(Number(m?.[1]), notAfter, `certificate="${certificate}": notAfter of ${path.basename(file)}`);
    }
  });
});

t.test('a large body over https is written as it arrives, byte-exact', async (t) => {
  // A single node holds every replica: the body streams into its engines,
  // its pieces decrypted by Node (a plain connection's are read from the socket).
  const dir = tempDir(t, 'oyster-tls-large-');
  const pki = makePki(dir);
  const files = await writeCluster(dir, { nodes: [{ name: 'n1' }], vdisks: 2, keySize: KEY_SIZE }, {
    extra: { tls: { ca_cert_path: pki.ca, cert_path: pki.cert, pkey_path: pki.key, domain_name: DOMAIN, rest: true, grpc: false } },
  });
  const node = await startNode(files, 'n1');
  t.teardown(() => node.stop());
  const url = node.url.replace('http:', 'https:');
  const ca = fs.readFileSync(pki.ca);
  for (const [key, size] of [[31, 200_000], [32, 3 * 1024 * 1024 + 7]] as const) {
    const value = crypto.randomBytes(Math.ceil(size / 2)).toString('hex').slice(0, size);
    t.equal((await request(`${url}/data/${key}`, 'POST', ca, value)).status, 201, `a ${size}-byte body over https: 201`);
    t.ok((await request(`${url}/data/${key}`, 'GET', ca)).text === value, 'read back byte-exact');
  }
});

t.test('clients that read nothing of large answers over https hold small parts past half the budget; others are served', async (t) => {
  const dir = tempDir(t, 'oyster-tls-stalled-');
  const pki = makePki(dir);
  const files = await writeCluster(dir, { nodes: [{ name: 'n1' }], vdisks: 2, keySize: KEY_SIZE }, {
    httpMaxBodySize: '64 MiB',
    extra: {
      http_body_memory_limit: '16 MiB',
      tls: { ca_cert_path: pki.ca, cert_path: pki.cert, pkey_path: pki.key, domain_name: DOMAIN, rest: true, grpc: false },
    },
  });
  const node = await startNode(files, 'n1');
  t.teardown(() => node.stop());
  const url = node.url.replace('http:', 'https:');
  const ca = fs.readFileSync(pki.ca);
  const value = crypto.randomBytes(8 * 1024 * 1024).toString('hex');
  t.equal((await request(`${url}/data/41`, 'POST', ca, value)).status, 201);
  const sockets: tls.TLSSocket[] = [];
  t.teardown(() => sockets.forEach((s) => s.destroy()));
  const started: Array<Promise<string>> = [];
  for (let i = 0; i < 40; i++) {
    const socket = tls.connect({ host: '127.0.0.1', port: Number(new URL(url).port), ca, servername: DOMAIN });
    socket.on('error', () => undefined);
    sockets.push(socket);
    await new Promise((resolve) => socket.on('secureConnect', resolve));
    started.push(new Promise((resolve) => socket.once('data', (d: Buffer) => (socket.pause(), resolve(d.subarray(0, 12).toString('latin1'))))));
    socket.write('GET /data/41 HTTP/1.1\r\nHost: x\r\n\r\n');
  }
  t.same(new Set(await Promise.all(started)), new Set(['HTTP/1.1 200']), 'all 40 answers under way');
  const held = sample((await request(`${url}/metrics`, 'GET', ca)).text, 'oyster_rest_body_bytes');
  // The first eight take 1 MiB each (half the budget), the rest 128 KiB.
  t.equal(held, 8 * 1024 * 1024 + 32 * 128 * 1024, `40 stalled answers hold ${(held / 1024 / 1024).toFixed(2)} MiB of the 16 MiB budget`);
  const t0 = Date.now();
  t.ok((await request(`${url}/data/41`, 'GET', ca)).text === value, 'another client reads the value meanwhile, byte-exact');
  t.ok(Date.now() - t0 < 4000, `without waiting for room (${Date.now() - t0} ms)`);
});

t.test("the packaged unit's command lines start a node with REST over TLS", async (t) => {
  const dir = tempDir(t, 'oyster-tls-unit-');
  const pki = makePki(dir);
  // wait-ready finds the node by the port in node.yaml: a fixed one, not 0.
  const files = await writeCluster(dir, { nodes: [{ name: 'n1' }] }, {
    extra: { http_api_port: await freePort(), tls: { ca_cert_path: pki.ca, cert_path: pki.cert, pkey_path: pki.key, domain_name: DOMAIN, rest: true, grpc: true } },
  });
  // ExecStart and ExecStartPost as shipped, with the configuration's paths and the scripts of this tree.
  const unit = fs.readFileSync(path.join(PACKAGING, 'systemd', 'oyster.service'), 'utf8');
  const line = (key: string) =>
    /^(\S+) (.*)$/
      .exec(new RegExp(`^${key}=(.*)$`, 'm').exec(unit)![1])!
      .slice(1)
      .map((w) => w.replaceAll('/etc/oyster/cluster.yaml', files.clusterYaml).replaceAll('/etc/oyster/node.yaml', files.nodeYaml.n1));
  const [daemon, daemonArgs] = line('ExecStart');
  const [post, postArgs] = line('ExecStartPost');
  t.equal(daemon, '/usr/bin/oysterd');
  t.equal(post, '/usr/bin/oyster');
  const args = (s: string) => s.split(' ').map((a) => (a === '30min' ? '20s' : a));
  t.match(postArgs, /wait-ready -c \S+ -n \S+/, 'ExecStartPost waits with the configuration files');
  // wait-ready starts first, as systemd runs ExecStartPost while the node is still coming up.
  const waiting = oyster(args(postArgs), { timeoutMs: 30_000 });
  const node = await startOysterd('n1', { args: args(daemonArgs), timeoutMs: 20_000 });
  t.teardown(() => node.kill());
  const ready = await waiting;
  t.equal(ready.code, 0, `wait-ready exits 0 once the node serves over https (${ready.stderr.trim()})`);
  const plain = await oyster(['wait-ready', '--rest', node.url.replace('https:', 'http:'), '--timeout', '1s']);
  t.equal(plain.code, 1, 'an http client would not have seen it serving');
});

t.test('TLS files that cannot be used stop oysterd before it listens', async (t) => {
  const dir = tempDir(t, 'oyster-tls-bad-');
  const pki = makePki(dir);
  const garbage = path.join(dir, 'garbage.pem');
  fs.writeFileSync(garbage, 'not a certificate\n');
  const cases: Array<{ what: string; tls: Record<string, unknown>; key: string; reason: RegExp }> = [
    { what: 'a missing certificate', tls: { cert_path: path.join(dir, 'missing.crt') }, key: 'tls.cert_path', reason: /ENOENT/ },
    { what: 'a key path that is a directory', tls: { pkey_path: dir }, key: 'tls.pkey_path', reason: /EISDIR/ },
    { what: 'a CA file that is not PEM', tls: { ca_cert_path: garbage }, key: 'tls.ca_cert_path', reason: /PEM/ },
    { what: 'a certificate file holding a key', tls: { cert_path: pki.key }, key: 'tls.cert_path', reason: /PEM certificate/ },
    { what: 'the key of another certificate', tls: { pkey_path: path.join(dir, 'ca.key') }, key: 'tls.pkey_path', reason: /not the private key/ },
    {
      what: 'an expired certificate',
      tls: { cert_path: certBetween(dir, 'expired', '20200101000000Z', '20210101000000Z') },
      key: 'tls.cert_path',
      reason: /expired on 2021-01-01T00:00:00.000Z/,
    },
    {
      what: 'a certificate not valid yet',
      tls: { cert_path: certBetween(dir, 'future', opensslDate(Date.now() + 86_400_000), opensslDate(Date.now() + 400 * 86_400_000)) },
      key: 'tls.cert_path',
      reason: /is not valid before/,
    },
  ];
  for (const k of cases) {
    const sub = path.join(dir, k.key.replace(/\W/g, '_') + cases.indexOf(k));
    fs.mkdirSync(sub);
    const files = await writeCluster(sub, { nodes: [{ name: 'n1' }] }, {
      extra: { tls: { ca_cert_path: pki.ca, cert_path: pki.cert, pkey_path: pki.key, domain_name: DOMAIN, rest: true, grpc: true, ...k.tls } },
    });
    const started = startOysterd('n1', { args: ['-c', files.clusterYaml, '-n', files.nodeYaml.n1, '--init-folders'], timeoutMs: 15_000 });
    const err = await started.then(
      async (p) => {
        await p.kill();
        return null;
      },
      (e: Error) => e.message,
    );
    t.ok(err, `${k.what}: oysterd does not start`);
    t.match(err, /exited \(2\) before serving/, `${k.what}: exit code 2 (configuration)`);
    t.match(err, new RegExp(`${k.key.replace('.', '\\.')}: .*`), `${k.what}: the error names ${k.key}`);
    t.match(err, k.reason, `${k.what}: and the reason`);
    t.notMatch(err, /node is serving/, `${k.what}: nothing listened`);
  }
});

t.test('a certificate that expires within 30 days: one warning at start, and the node serves', async (t) => {
  const dir = tempDir(t, 'oyster-tls-soon-');
  const pki = makePki(dir);
  const soon = certBetween(dir, 'soon', opensslDate(Date.now() - 86_400_000), opensslDate(Date.now() + 10 * 86_400_000 + 3_600_000));
  const files = await writeCluster(dir, { nodes: [{ name: 'n1' }] }, {
    extra: { tls: { ca_cert_path: pki.ca, cert_path: soon, pkey_path: pki.key, domain_name: DOMAIN, rest: true, grpc: true } },
  });
  const node = await startOysterd('n1', { args: ['-c', files.clusterYaml, '-n', files.nodeYaml.n1, '--init-folders'], timeoutMs: 20_000 });
  t.teardown(() => node.kill());
  const warnings = node.output.filter((l) => /"level":"warn"/.test(l) && l.includes('tls.cert_path'));
  t.equal(warnings.length, 1, 'one warning names tls.cert_path');
  t.match(warnings[0], /expires on .* in 10 days/, 'with the date and the days left');
  t.equal((await request(`${node.url.replace('http:', 'https:')}/status`, 'GET', fs.readFileSync(pki.ca))).status, 200, 'the node serves');
});
