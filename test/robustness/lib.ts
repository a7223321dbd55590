// Shared by the robustness tests: an HTTP client on a keep-alive agent, a raw
// socket exchange with a strict response parser, the StatusExt check, an
// independent reading of the REST key forms and a seeded PRNG.
import http from 'node:http';
import net from 'node:net';

export interface Res {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** Requests over keep-alive connections; Node's strict parser checks every response. */
export class Client {
  readonly agent: http.Agent;
  readonly host: string;
  readonly port: number;

  constructor(url: string, maxSockets = 16) {
    const u = new URL(url);
    this.host = u.hostname;
    this.port = Number(u.port);
    this.agent = new http.Agent({ keepAlive: true, maxSockets });
  }

  request(method: string, path: string, body?: Buffer | string, headers: http.OutgoingHttpHeaders = {}): Promise<Res> {
    // Node frames a GET, HEAD or DELETE body only if told its length.
    if (body !== undefined && !Object.keys(headers).some((h) => /^(content-length|transfer-encoding)$/i.test(h))) {
      headers = { ...headers, 'Content-Length': Buffer.byteLength(body) };
    }
    return new Promise((resolve, reject) => {
      const req = http.request({ agent: this.agent, host: this.host, port: this.port, method, path, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/** The body is {"ok": false, "msg": string} sent as JSON: returns what is wrong, or null. */
export function statusExtProblem(res: Res, ok = false): string | null {
  const type = String(res.headers['content-type'] ?? '');
  if (!type.startsWith('application/json')) return `content-type ${JSON.stringify(type)}`;
  let v: unknown;
  try {
    v = JSON.parse(res.body.toString('utf8'));
  } catch {
    return `body is not JSON: ${JSON.stringify(res.body.subarray(0, 200).toString('latin1'))}`;
  }
  const o = v as Record<string, unknown>;
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return `body is not an object: ${JSON.stringify(v)}`;
  if (Object.keys(o).sort().join() !== 'msg,ok' || o.ok !== ok || typeof o.msg !== 'string') return `body is not a StatusExt: ${JSON.stringify(v)}`;
  return null;
}

// ---------------------------------------------------------------- raw sockets

export interface RawRes extends Res {
  reason: string;
}

export interface RawResult {
  responses: RawRes[];
  /** Bytes after the last complete response (a truncated or garbled answer). */
  trailing: Buffer;
  /** A response that does not parse. */
  malformed: string | null;
  /** The socket error, if any (ECONNRESET after a close with unread data). */
  error: string | null;
  /** The server closed the connection (as opposed to our timeout or destroy). */
  closedByServer: boolean;
}

export type RawStep = Buffer | string | { delayMs: number };

export interface RawOptions {
  /** Stop once this many responses arrived (default: wait for the server to close or the timeout). */
  responses?: number;
  /** After the last step: "half" closes our side (FIN), "destroy" resets at once, "none" keeps it open. */
  end?: 'half' | 'destroy' | 'none';
  timeoutMs?: number;
  /** Methods of the requests in order, so that HEAD answers are parsed without a body. */
  methods?: string[];
}

/** Sends bytes over a fresh TCP connection and parses what comes back, strictly. */
export function rawExchange(port: number, steps: RawStep[], opts: RawOptions = {}): Promise<RawResult> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let error: string | null = null;
    let closedByServer = false;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      resolve({ ...parseResponses(Buffer.concat(chunks), opts.methods ?? []), error, closedByServer });
    };
    const timer = setTimeout(finish, opts.timeoutMs ?? 5000);
    s.on('data', (c: Buffer) => {
      chunks.push(c);
      if (opts.responses !== undefined && parseResponses(Buffer.concat(chunks), opts.methods ?? []).responses.length >= opts.responses) finish();
    });
    s.on('error', (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
    s.on('end', () => (closedByServer = true));
    s.on('close', finish);
    s.on('connect', async () => {
      for (const step of steps) {
        if (done) return;
        if (typeof step === 'object' && 'delayMs' in step) await new Promise((r) => setTimeout(r, step.delayMs));
        else s.write(step);
      }
      if (opts.end === 'half') s.end();
      else if (opts.end === 'destroy') s.resetAndDestroy();
    });
  });
}

/** Parses HTTP/1.1 responses (Content-Length or chunked bodies, 1xx skipped); stops at the first thing that does not parse. */
export function parseResponses(buf: Buffer, methods: string[]): Omit<RawResult, 'error' | 'closedByServer'> {
  const responses: RawRes[] = [];
  let pos = 0;
  let malformed: string | null = null;
  while (pos < buf.length) {
    const headEnd = buf.indexOf('\r\n\r\n', pos);
    if (headEnd < 0) break;
    const lines = buf.subarray(pos, headEnd).toString('latin1').split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3}) ([^\r\n]*)$/.exec(lines[0]);
    if (!m) {
      malformed = `bad status line ${JSON.stringify(lines[0])}`;
      break;
    }
    const headers: http.IncomingHttpHeaders = {};
    let bad = false;
    for (const line of lines.slice(1)) {
      const hm = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*$/.exec(line);
      if (!hm) {
        malformed = `bad header line ${JSON.stringify(line)}`;
        bad = true;
        break;
      }
      headers[hm[1].toLowerCase()] = hm[2];
    }
    if (bad) break;
    const status = Number(m[1]);
    let p = headEnd + 4;
    if (status >= 100 && status < 200) {
      pos = p;
      continue;
    }
    const method = methods[responses.length] ?? 'GET';
    let body: Buffer = Buffer.alloc(0);
    if (method !== 'HEAD' && status !== 204 && status !== 304) {
      if (headers['transfer-encoding'] === 'chunked') {
        const parts: Buffer[] = [];
        let complete = false;
        for (;;) {
          const le = buf.indexOf('\r\n', p);
          if (le < 0) break;
          const size = parseInt(buf.subarray(p, le).toString('latin1'), 16);
          if (!Number.isFinite(size)) {
            malformed = 'bad chunk size';
            break;
          }
          if (size === 0) {
            if (buf.length < le + 4) break;
            p = le + 4;
            complete = true;
            break;
          }
          if (buf.length < le + 2 + size + 2) break;
          parts.push(buf.subarray(le + 2, le + 2 + size));
          p = le + 2 + size + 2;
        }
        if (!complete) break;
        body = Buffer.concat(parts);
      } else if (headers['content-length'] !== undefined) {
        const n = Number(headers['content-length']);
        if (!Number.isSafeInteger(n) || n < 0) {
          malformed = `bad content-length ${String(headers['content-length'])}`;
          break;
        }
        if (buf.length < p + n) break;
        body = buf.subarray(p, p + n);
        p += n;
      } else {
        // Delimited by the end of the connection.
        body = buf.subarray(p);
        p = buf.length;
      }
    }
    responses.push({ status, reason: m[2], headers, body });
    pos = p;
  }
  return { responses, trailing: buf.subarray(pos), malformed };
}

// ---------------------------------------------------------------- keys

/**
 * The REST key forms (docs/API.md) read independently of src/keys: the key bytes a REST `{key}`
 * (already percent-decoded) names, or null for a 400 (bad form or overflow).
 */
export function oracleKey(text: string, keySize: number): Buffer | null {
  let bytes: Buffer | null;
  if (text.length >= 2 && text[0] === '{' && text[text.length - 1] === '}') bytes = guid(text.slice(1, -1), true);
  else if (text.includes('-')) bytes = guid(text, false);
  else if (text.startsWith('0x')) {
    const d = text.slice(2);
    bytes = /^[0-9a-fA-F]*$/.test(d) ? Buffer.from(d.length % 2 ? `0${d}` : d, 'hex') : null;
  } else if (/^[0-9]+$/.test(text)) {
    let n = BigInt(text);
    const out: number[] = [];
    for (; n > 0n; n /= 256n) out.push(Number(n % 256n));
    bytes = Buffer.from(out);
  } else bytes = null;
  if (bytes === null) return null;
  if (bytes.subarray(keySize).some((b) => b !== 0)) return null;
  const key = Buffer.alloc(keySize);
  bytes.copy(key, 0, 0, Math.min(keySize, bytes.length));
  return key;
}

function guid(s: string, braced: boolean): Buffer | null {
  if (/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/.test(s)) return Buffer.from(s.replace(/-/g, ''), 'hex');
  if (braced && /^[0-9a-fA-F]{32}$/.test(s)) return Buffer.from(s, 'hex');
  return null;
}

/** What the router hands to a route: the percent-decoded segment, or the raw one if it does not decode. */
export function decodeParam(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

// ---------------------------------------------------------------- misc

/** xorshift32: reproducible runs from a printed seed. */
export class Rng {
  private x: number;
  constructor(readonly seed: number) {
    this.x = seed >>> 0 || 1;
  }
  u32(): number {
    let x = this.x;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.x = x >>> 0;
    return this.x;
  }
  next(): number {
    return this.u32() / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(a: readonly T[]): T {
    return a[this.int(a.length)];
  }
  bytes(n: number): Buffer {
    const b = Buffer.allocUnsafe(n);
    let i = 0;
    for (; i + 4 <= n; i += 4) b.writeUInt32LE(this.u32(), i);
    for (; i < n; i++) b[i] = this.u32() & 0xff;
    return b;
  }
}

export function seedFromEnv(): number {
  const s = Number(process.env.OYSTER_TEST_SEED);
  return Number.isInteger(s) && s > 0 ? s : (Date.now() % 2147483647) + 1;
}

/** Log lines of the node at error level or above, and lines that are not pino JSON (stack traces). */
export function badLogLines(output: string[]): string[] {
  return output.filter((line) => {
    if (line.trim() === '') return false;
    try {
      const o = JSON.parse(line) as { level?: string; msg?: string };
      return typeof o.level !== 'string' || ['error', 'fatal'].includes(o.level) || /unhandled|uncaught/i.test(o.msg ?? '');
    } catch {
      return true;
    }
  });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
