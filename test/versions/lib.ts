// Shared by the tests of the order of versions: a model of the acknowledged
// operations of each key, and a REST client that never throws (a failed or
// refused request is an outcome the model knows how to take).
import http from 'node:http';

/** What one key may hold, given what was acknowledged and what failed. */
export class KeyModel {
  /** The last acknowledged write: a value, null for a delete, undefined when nothing was acknowledged. */
  acked: Buffer | null | undefined = undefined;
  /** Writes after it that failed: each may or may not have taken effect. */
  maybe: Array<Buffer | null> = [];

  ack(value: Buffer | null): void {
    this.acked = value;
    this.maybe = [];
  }

  fail(value: Buffer | null): void {
    this.maybe.push(value);
  }

  /** Whether a replica or a read may end on `state` (null: absent or deleted). */
  allows(state: Buffer | null): boolean {
    const same = (v: Buffer | null | undefined) => (v === null || v === undefined ? state === null : state !== null && v.equals(state));
    return same(this.acked) || this.maybe.some((m) => same(m));
  }

  describe(): string {
    const show = (v: Buffer | null | undefined) => (v === undefined ? 'nothing' : v === null ? 'deleted' : JSON.stringify(v.toString()));
    return `acknowledged ${show(this.acked)}${this.maybe.length ? `, maybe ${this.maybe.map(show).join(' / ')}` : ''}`;
  }
}

export interface Answer {
  /** 0 when the request failed without an answer. */
  status: number;
  body: Buffer;
}

/** HTTP requests on keep-alive connections; failures come back as status 0. */
export class Rest {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

  request(url: string, method: string, path: string, body?: Buffer, timeoutMs = 15_000): Promise<Answer> {
    const u = new URL(url);
    const headers: http.OutgoingHttpHeaders = body === undefined ? {} : { 'Content-Length': body.length };
    return new Promise((resolve) => {
      const req = http.request({ agent: this.agent, host: u.hostname, port: u.port, method, path, headers, timeout: timeoutMs }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', () => resolve({ status: 0, body: Buffer.alloc(0) }));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', () => resolve({ status: 0, body: Buffer.alloc(0) }));
      req.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

export { badLogLines, Rng, seedFromEnv, sleep } from '../robustness/lib';
