// DataClient over the REST API: /data/{key} with the key in the form it was
// written, kept-alive connections, Basic credentials if given.
import http from 'node:http';
import https from 'node:https';
import { basicAuth, DataClient, RequestError } from './client';
import { mapLimit } from './concurrency';
import { UsageError } from './exit-codes';
import { Key } from './keys';

export interface RestOptions {
  user?: string;
  password?: string;
  timeoutMs: number;
  /** Connections kept open: the number of requests the caller runs at once. */
  connections: number;
  /**
   * For https: the CA the node's certificate must chain to and the name it
   * must carry (node.yaml tls.ca_cert_path and tls.domain_name), whatever
   * address is dialled; without it, the system's CAs and the URL's host.
   */
  tls?: { ca: Buffer; servername: string };
}

interface Response {
  status: number;
  body: Buffer;
}

export class RestClient implements DataClient {
  readonly endpoint: string;
  private readonly url: URL;
  private readonly agent: http.Agent;
  private readonly auth?: string;

  constructor(
    base: string,
    private readonly options: RestOptions,
  ) {
    let url: URL;
    try {
      url = new URL(base);
    } catch {
      throw new UsageError(`--rest: ${JSON.stringify(base)} is not a URL like http://127.0.0.1:8000`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--rest: ${base}: only http and https URLs`);
    this.url = url;
    this.endpoint = `REST ${url.origin}${url.pathname.replace(/\/$/, '')}`;
    const Agent = url.protocol === 'https:' ? https.Agent : http.Agent;
    this.agent = new Agent({ keepAlive: true, maxSockets: options.connections, ...options.tls });
    if (options.user !== undefined) this.auth = basicAuth(options.user, options.password ?? '');
  }

  async put(key: Key, value: Buffer): Promise<void> {
    this.expect(await this.request('POST', key, value), [201, 200]);
  }

  async get(key: Key): Promise<Buffer | null> {
    const res = await this.request('GET', key);
    if (res.status === 404) return null;
    return this.expect(res, [200]).body;
  }

  exists(keys: Key[]): Promise<boolean[]> {
    return mapLimit(keys, this.options.connections, async (key) => {
      const res = await this.request('HEAD', key);
      if (res.status === 404) return false;
      this.expect(res, [200]);
      return true;
    });
  }

  async delete(key: Key): Promise<void> {
    const res = await this.request('DELETE', key);
    if (res.status !== 404) this.expect(res, [200]);
  }

  async ping(): Promise<void> {
    this.expect(await this.send('GET', '/status'), [200]);
  }

  close(): void {
    this.agent.destroy();
  }

  /** An admin call (path below the base URL): its JSON answer, if one of the `ok` statuses. */
  async call(method: string, path: string, ok: number[] = [200]): Promise<unknown> {
    const res = this.expect(await this.send(method, path), ok);
    return JSON.parse(res.body.toString('utf8')) as unknown;
  }

  private request(method: string, key: Key, body?: Buffer): Promise<Response> {
    return this.send(method, `/data/${encodeURIComponent(key.text)}`, body);
  }

  private expect(res: Response, ok: number[]): Response {
    if (ok.includes(res.status)) return res;
    // Errors are bob's StatusExt {ok, msg} or, for auth, {error}.
    let msg = res.body.toString('utf8').slice(0, 500);
    try {
      const j = JSON.parse(msg) as { msg?: string; error?: string };
      msg = j.msg ?? j.error ?? msg;
    } catch {
      // not JSON: the text itself
    }
    throw new RequestError(`HTTP ${res.status}`, `HTTP ${res.status}${msg ? `: ${msg}` : ''}`);
  }

  private send(method: string, path: string, body?: Buffer): Promise<Response> {
    const base = this.url.pathname.replace(/\/$/, '');
    const headers: http.OutgoingHttpHeaders = {};
    if (this.auth) headers.authorization = this.auth;
    if (body) {
      headers['content-type'] = 'application/octet-stream';
      headers['content-length'] = body.length;
    }
    const transport = this.url.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      const req = transport.request(
        { protocol: this.url.protocol, hostname: this.url.hostname.replace(/^\[|\]$/g, ''), port: this.url.port, path: base + path, method, headers, agent: this.agent },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
          res.on('error', (err) => reject(transportError(err)));
        },
      );
      req.setTimeout(this.options.timeoutMs, () => req.destroy(Object.assign(new Error(`no answer within ${this.options.timeoutMs} ms`), { code: 'TIMEOUT' })));
      req.on('error', (err) => reject(transportError(err)));
      req.end(body);
    });
  }
}

function transportError(err: NodeJS.ErrnoException): RequestError {
  return new RequestError(err.code ?? 'ERROR', err.message);
}
