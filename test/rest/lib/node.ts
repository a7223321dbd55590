// Endpoint tests run against real oysterd processes (test/helpers/oysterd.ts):
// this module starts one node per test with its teardown, and offers small
// HTTP helpers over the global fetch.
import fs from 'node:fs';
import type { Test } from 'tap';
import { ClusterFiles, ClusterSpec, NodeYamlOptions, OysterProcess, startNode, writeCluster } from '../../helpers/oysterd';
import { tempDir } from '../../helpers/tmpdir';

export interface RestNode {
  name: string;
  url: string;
  proc: OysterProcess;
  files: ClusterFiles;
  /** The test directory (removed at teardown). */
  dir: string;
  /** Path of one of this node's disks. */
  disk(name: string): string;
  /** Whether the process is still running. */
  alive(): boolean;
}

export interface StartRestNode {
  spec: ClusterSpec;
  opts?: NodeYamlOptions;
  /** The node to run; default the first of spec.nodes. */
  name?: string;
  /** Runs after the configuration is written, before the process starts. */
  prepare?: (files: ClusterFiles) => void;
}

/**
 * Writes the configuration into a fresh temporary directory and starts the
 * node. Teardown (LIFO in tap): the process is stopped, then the directory
 * removed.
 */
export async function startRestNode(t: Test, o: StartRestNode): Promise<RestNode> {
  const dir = tempDir(t, 'oyster-rest-');
  const files = await writeCluster(dir, o.spec, o.opts ?? {});
  const name = o.name ?? o.spec.nodes[0].name;
  o.prepare?.(files);
  const proc = await startNode(files, name);
  let exitCode: number | string | null = null;
  void proc.exited.then((c) => (exitCode = c));
  t.teardown(async () => {
    if (exitCode !== null) return;
    const timer = setTimeout(() => proc.child.kill('SIGKILL'), 10_000);
    await proc.stop();
    clearTimeout(timer);
  });
  return {
    name,
    url: proc.url,
    proc,
    files,
    dir,
    disk: (d) => files.disks[name][d],
    alive: () => exitCode === null,
  };
}

export interface Reply {
  status: number;
  headers: Headers;
  body: Buffer;
  text: string;
  /** The body parsed as JSON (throws when it is not). */
  json<T = unknown>(): T;
}

export type Method = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE' | 'PATCH' | 'OPTIONS';

/** One request; never throws for HTTP error statuses. */
export async function call(
  base: string,
  method: Method,
  path: string,
  body?: Buffer | string | ReadableStream<Uint8Array>,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const init: RequestInit & { duplex?: 'half' } = { method, headers };
  if (body !== undefined) {
    init.body = body as RequestInit['body'];
    if (body instanceof ReadableStream) init.duplex = 'half';
  }
  const res = await fetch(base + path, init);
  const buf = Buffer.from(await res.arrayBuffer());
  const text = buf.toString('utf8');
  return {
    status: res.status,
    headers: res.headers,
    body: buf,
    text,
    json: <T>() => JSON.parse(text) as T,
  };
}

/** A client bound to one node. */
export function client(base: string) {
  return {
    get: (p: string) => call(base, 'GET', p),
    head: (p: string) => call(base, 'HEAD', p),
    post: (p: string, body?: Buffer | string | ReadableStream<Uint8Array>) => call(base, 'POST', p, body),
    put: (p: string, body?: Buffer | string) => call(base, 'PUT', p, body),
    del: (p: string) => call(base, 'DELETE', p),
    call: (m: Method, p: string, body?: Buffer | string) => call(base, m, p, body),
    /** GET and parse JSON, asserting 200 on the way. */
    async json<T = unknown>(p: string): Promise<T> {
      const r = await call(base, 'GET', p);
      if (r.status !== 200) throw new Error(`GET ${p}: ${r.status} ${r.text}`);
      return r.json<T>();
    },
  };
}
export type Client = ReturnType<typeof client>;

export function isJson(r: Reply): boolean {
  return /^application\/json(;|$)/.test(r.headers.get('content-type') ?? '');
}

/**
 * Asserts a StatusExt answer: the status, Content-Type application/json and a
 * body that is exactly {ok, msg}. HEAD answers have no body to check.
 */
export function statusExt(t: Test, r: Reply, status: number, ok: boolean, msg?: string | RegExp, what = ''): void {
  const label = what ? `${what}: ` : '';
  t.equal(r.status, status, `${label}status ${status}`);
  t.ok(isJson(r), `${label}Content-Type application/json (got ${r.headers.get('content-type')})`);
  if (r.body.length === 0) {
    t.fail(`${label}StatusExt body expected, got none`);
    return;
  }
  let body: Record<string, unknown>;
  try {
    body = r.json<Record<string, unknown>>();
  } catch {
    t.fail(`${label}body is not JSON: ${r.text}`);
    return;
  }
  t.same(Object.keys(body).sort(), ['msg', 'ok'], `${label}body is exactly {ok, msg}`);
  t.equal(body.ok, ok, `${label}ok ${ok}`);
  t.type(body.msg, 'string', `${label}msg is a string`);
  if (typeof msg === 'string') t.equal(body.msg, msg, `${label}msg`);
  else if (msg) t.match(body.msg, msg, `${label}msg`);
}

/** Asserts a 4xx/5xx StatusExt with ok:false. */
export function failure(t: Test, r: Reply, status: number, msg?: string | RegExp, what = ''): void {
  statusExt(t, r, status, false, msg, what);
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it returns a truthy value or the time is up (then throws). */
export async function waitFor<T>(what: string, check: () => Promise<T>, timeoutMs: number, everyMs = 100): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** Entries of a directory, empty when it does not exist. */
export function ls(dir: string): string[] {
  try {
    return fs.readdirSync(dir).sort();
  } catch {
    return [];
  }
}

/** The key bytes of a decimal REST key (little-endian), as uppercase hex of `size` bytes. */
export function decimalKeyHex(n: bigint, size: number): string {
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i++) {
    b[i] = Number(n & 0xffn);
    n >>= 8n;
  }
  return b.toString('hex').toUpperCase();
}
