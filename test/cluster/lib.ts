// Shared by the cluster tests: a cluster of real oysterd processes on
// loopback ports (test/helpers/oysterd.ts) that a test starts, kills
// (SIGKILL), stops and restarts node by node, with a REST client over fetch
// and a BobApi gRPC client (test/helpers/grpc-client.ts) per node. Every
// process still running is stopped at teardown.
import fs from 'node:fs';
import path from 'node:path';
import type { Test } from 'tap';
import { BobClient } from '../helpers/grpc-client';
import { ClusterFiles, NodeYamlOptions, OysterProcess, startNode, writeCluster } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';

export interface ClusterOptions {
  /** Node names, in cluster.yaml order. */
  nodes: string[];
  /** vdisk id -> replica node names (each on the node's disk1). */
  replicas: string[][];
  keySize?: 8 | 16 | 32;
  opts?: NodeYamlOptions;
}

/** vdisk i held by nodes i, i+1, …, i+copies-1 (mod the node count). */
export function ring(nodes: string[], vdisks: number, copies: number): string[][] {
  return Array.from({ length: vdisks }, (_, v) => Array.from({ length: copies }, (_, j) => nodes[(v + j) % nodes.length]));
}

export interface Reply {
  status: number;
  body: Buffer;
  text: string;
  json<T = unknown>(): T;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it returns a truthy value; throws with the last value when the time is up. */
export async function waitFor<T>(what: string, check: () => Promise<T> | T, timeoutMs: number, everyMs = 100): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: T;
  for (;;) {
    try {
      last = await check();
    } catch (err) {
      last = err as T;
    }
    if (last && !(last instanceof Error)) return last;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${String(last)})`);
    await sleep(everyMs);
  }
}

export class TestCluster {
  readonly procs = new Map<string, OysterProcess>();
  private readonly grpcClients = new Map<string, BobClient>();
  /** PID of every process started, by node, in order. */
  readonly pids = new Map<string, number[]>();

  private constructor(
    readonly files: ClusterFiles,
    readonly names: string[],
    readonly replicas: string[][],
  ) {}

  /** Writes the configuration into a fresh directory and starts every node (teardown stops them). */
  static async start(t: Test, o: ClusterOptions, startNodes: string[] = o.nodes): Promise<TestCluster> {
    const dir = tempDir(t, 'oyster-cluster-');
    const files = await writeCluster(
      dir,
      {
        nodes: o.nodes.map((name) => ({ name })),
        replicas: o.replicas.map((r) => r.map((n) => `${n}/disk1`)),
        keySize: o.keySize,
      },
      o.opts ?? {},
    );
    const c = new TestCluster(files, o.nodes, o.replicas);
    t.teardown(() => c.shutdown());
    // Should the test process end without its teardown, take the nodes along.
    const killAll = () => {
      for (const p of c.procs.values()) p.child.kill('SIGKILL');
    };
    process.once('exit', killAll);
    t.teardown(() => void process.off('exit', killAll));
    await Promise.all(startNodes.map((n) => c.startNode(n)));
    return c;
  }

  async startNode(name: string): Promise<OysterProcess> {
    if (this.procs.has(name)) throw new Error(`${name} is running`);
    const proc = await startNode(this.files, name);
    this.procs.set(name, proc);
    this.pids.set(name, [...(this.pids.get(name) ?? []), proc.child.pid!]);
    void proc.exited.then(() => {
      if (this.procs.get(name) === proc) this.procs.delete(name);
    });
    return proc;
  }

  /** SIGKILL: the node dies without closing anything. */
  async kill(name: string): Promise<void> {
    const p = this.proc(name);
    await p.kill();
    this.procs.delete(name);
  }

  /** SIGTERM and wait for a clean exit. */
  async stop(name: string): Promise<number | string> {
    const p = this.proc(name);
    const timer = setTimeout(() => p.child.kill('SIGKILL'), 15_000);
    const code = await p.stop();
    clearTimeout(timer);
    this.procs.delete(name);
    return code;
  }

  isRunning(name: string): boolean {
    const p = this.procs.get(name);
    return p !== undefined && p.child.exitCode === null && p.child.signalCode === null;
  }

  proc(name: string): OysterProcess {
    const p = this.procs.get(name);
    if (!p) throw new Error(`${name} is not running`);
    return p;
  }

  url(name: string): string {
    return this.proc(name).url;
  }

  address(name: string): string {
    return this.files.addresses[name];
  }

  /** A gRPC client of the node (its address does not change across restarts). */
  grpc(name: string): BobClient {
    let c = this.grpcClients.get(name);
    if (!c) {
      c = new BobClient(this.address(name));
      this.grpcClients.set(name, c);
    }
    return c;
  }

  /** A gRPC client of its own (a fresh channel), closed by the caller. */
  freshGrpc(name: string, deadlineMs?: number): BobClient {
    return new BobClient(this.address(name), deadlineMs);
  }

  /** The replica holders of a vdisk. */
  holders(vdisk: number): string[] {
    return [...new Set(this.replicas[vdisk])];
  }

  others(vdisk: number): string[] {
    const h = new Set(this.holders(vdisk));
    return this.names.filter((n) => !h.has(n));
  }

  diskPath(name: string): string {
    return this.files.disks[name].disk1;
  }

  /** <disk>/bob/<vdisk> on a node. */
  vdiskDir(name: string, vdisk: number): string {
    return path.join(this.diskPath(name), 'bob', String(vdisk));
  }

  /** <disk>/alien on a node. */
  alienRoot(name: string): string {
    return path.join(this.diskPath(name), 'alien');
  }

  /** Partition directories under alien/<owner>/<vdisk> on a node (from the file system). */
  alienPartitions(holder: string, owner: string, vdisk: number): string[] {
    return ls(path.join(this.alienRoot(holder), owner, String(vdisk)));
  }

  // ------------------------------------------------------------------ REST

  async rest(name: string, method: string, p: string, body?: Buffer | string): Promise<Reply> {
    const res = await fetch(this.url(name) + p, { method, body, signal: AbortSignal.timeout(20_000) });
    const buf = Buffer.from(await res.arrayBuffer());
    const text = buf.toString('utf8');
    return { status: res.status, body: buf, text, json: <T>() => JSON.parse(text) as T };
  }

  /** REST PUT of a value (POST /data/{key}); throws unless 201. */
  async put(name: string, key: string | number | bigint, value: Buffer | string): Promise<void> {
    const r = await this.rest(name, 'POST', `/data/${key}`, value);
    if (r.status !== 201) throw new Error(`POST /data/${key} via ${name}: ${r.status} ${r.text}`);
  }

  /** REST GET of a value: the body, or null on 404; throws on other statuses. */
  async get(name: string, key: string | number | bigint): Promise<Buffer | null> {
    const r = await this.rest(name, 'GET', `/data/${key}`);
    if (r.status === 404) return null;
    if (r.status !== 200) throw new Error(`GET /data/${key} via ${name}: ${r.status} ${r.text}`);
    return r.body;
  }

  async del(name: string, key: string | number | bigint): Promise<void> {
    const r = await this.rest(name, 'DELETE', `/data/${key}`);
    if (r.status !== 200) throw new Error(`DELETE /data/${key} via ${name}: ${r.status} ${r.text}`);
  }

  /** GET /vdisks/{id}/records/count on a node holding the vdisk. */
  async recordsCount(name: string, vdisk: number): Promise<number> {
    const r = await this.rest(name, 'GET', `/vdisks/${vdisk}/records/count`);
    if (r.status !== 200) throw new Error(`records count of vdisk ${vdisk} on ${name}: ${r.status} ${r.text}`);
    return r.json<number>();
  }

  /** <owner>/<vdisk>/<partition> paths listed by GET /alien/dir. */
  async alienDir(name: string): Promise<string[]> {
    const r = await this.rest(name, 'GET', '/alien/dir');
    if (r.status !== 200) throw new Error(`GET /alien/dir on ${name}: ${r.status} ${r.text}`);
    const out: string[] = [];
    const tree = r.json<Dir>();
    for (const owner of tree.children) {
      for (const vdisk of owner.children) {
        for (const part of vdisk.children) out.push(`${owner.name}/${vdisk.name}/${part.name}`);
      }
    }
    return out.sort();
  }

  // ----------------------------------------------------------------- links

  /** Whether `name` currently considers `peer` reachable (from its log). */
  sees(name: string, peer: string): boolean {
    let up = false;
    for (const line of this.proc(name).output) {
      if (!line.includes('"peer"')) continue;
      try {
        const rec = JSON.parse(line) as { peer?: string; available?: boolean };
        if (rec.peer === peer && typeof rec.available === 'boolean') up = rec.available;
      } catch {
        // not a log record
      }
    }
    return up;
  }

  /** Waits until every running node sees every other running node as reachable and the others as unreachable. */
  async waitLinks(timeoutMs = 15_000): Promise<void> {
    const running = this.names.filter((n) => this.isRunning(n));
    await waitFor(
      'the link managers to agree on who is up',
      () => running.every((a) => this.names.every((b) => a === b || this.sees(a, b) === running.includes(b))),
      timeoutMs,
    );
  }

  /** Stops every running node (SIGKILL after 15 s) and closes the gRPC clients. */
  async shutdown(): Promise<void> {
    for (const c of this.grpcClients.values()) c.close();
    this.grpcClients.clear();
    await Promise.all([...this.procs.keys()].map((n) => this.stop(n).catch(() => undefined)));
  }
}

interface Dir {
  name: string;
  children: Dir[];
}

/** Entries of a directory, empty when it does not exist. */
export function ls(dir: string): string[] {
  try {
    return fs.readdirSync(dir).sort();
  } catch {
    return [];
  }
}

/** A decimal key of vdisk `vdisk` (keys are mod-distributed), distinct per `i`. */
export function keyOn(vdisk: number, vdisks: number, i: number, base = 1000): number {
  return (base + i) * vdisks + vdisk;
}
