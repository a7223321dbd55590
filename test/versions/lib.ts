// Shared by the tests of the order of versions: a model of the acknowledged
// operations of each key, a REST client that never throws (a failed or
// refused request is an outcome the model knows how to take), and what the
// disk tests look at: the engine files under a directory, a small tmpfs.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { Test } from 'tap';

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
    const show = (v: Buffer | null | undefined) =>
      v === undefined ? 'nothing' : v === null ? 'deleted' : v.length > 100 ? `${JSON.stringify(v.subarray(0, 60).toString())}… (${v.length} bytes)` : JSON.stringify(v.toString());
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

/** Every file under dir, recursively. */
export function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...filesUnder(p));
    else out.push(p);
  }
  return out;
}

/** Bytes of blob and index files under dir, and the compaction files left there. */
export function stored(dir: string): { bytes: number; leftovers: string[] } {
  let bytes = 0;
  const leftovers: string[] = [];
  for (const p of filesUnder(dir)) {
    if (/\.(blob|index)$/.test(p)) bytes += fs.statSync(p).size;
    else if (/\.(blob\.new|index\.new|index\.tmp)$/.test(p)) leftovers.push(p);
  }
  return { bytes, leftovers };
}

/** Mounts a tmpfs of `size` (mount's syntax: "8m") on dir, unmounted at the test's end (needs root). */
export function mountTmpfs(t: Test, dir: string, size: string): void {
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir]);
  t.teardown(() => execFileSync('umount', ['-l', dir]));
}

export { badLogLines, Rng, seedFromEnv, sleep } from '../robustness/lib';
