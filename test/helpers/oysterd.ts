// Starts real oysterd processes for integration tests: writes bob-format
// configuration files into a temporary directory, spawns bin/oysterd.js,
// waits until it serves, and stops or kills it.
import { ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import YAML from 'yaml';

const BIN = path.resolve(__dirname, '..', '..', '..', 'bin', 'oysterd.js');

/**
 * A TCP port that was free a moment ago. Taken below the kernel's range of
 * ephemeral ports: a port the kernel handed out and took back could go to
 * the next outgoing connection (of this test run's many) before the node
 * that is to listen on it starts.
 */
export async function freePort(): Promise<number> {
  const low = ephemeralLow();
  const from = Math.max(1024, low - 20000);
  for (;;) {
    const port = from + Math.floor(Math.random() * (low - from));
    if (await canListen(port)) return port;
  }
}

function ephemeralLow(): number {
  try {
    const low = Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > 2048) return low;
  } catch {
    // not Linux: its default
  }
  return 32768;
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

export interface NodeSpec {
  name: string;
  /** gRPC address in cluster.yaml; a free loopback port when omitted. */
  address?: string;
  /** Disk names; their directories are created under the test directory. Default ["disk1"]. */
  disks?: string[];
}

export interface ClusterSpec {
  nodes: NodeSpec[];
  /** vdisk id -> replicas as "node/disk"; default: `vdisks` vdisks, one replica each, round robin. */
  replicas?: string[][];
  vdisks?: number;
  keySize?: 8 | 16 | 32;
}

export interface NodeYamlOptions {
  quorum?: number;
  timestampPeriod?: string;
  maxBlobSize?: string | number;
  maxDataInBlob?: number;
  syncWrites?: boolean;
  httpMaxBodySize?: string | number;
  cleanupInterval?: string;
  operationTimeout?: string;
  checkInterval?: string;
  clusterPolicy?: 'quorum' | 'simple';
  /** Extra top-level node.yaml keys (merged last). */
  extra?: Record<string, unknown>;
  /** Extra pearl keys (merged last). */
  pearl?: Record<string, unknown>;
}

export interface ClusterFiles {
  dir: string;
  clusterYaml: string;
  /** node name -> node.yaml path */
  nodeYaml: Record<string, string>;
  /** node name -> disk name -> path */
  disks: Record<string, Record<string, string>>;
  /** node name -> gRPC address */
  addresses: Record<string, string>;
}

/** Writes cluster.yaml and one node.yaml per node under `dir`. */
export async function writeCluster(dir: string, spec: ClusterSpec, opts: NodeYamlOptions = {}): Promise<ClusterFiles> {
  const disks: ClusterFiles['disks'] = {};
  const addresses: ClusterFiles['addresses'] = {};
  const nodes: Array<{ name: string; address: string; disks: Array<{ name: string; path: string }> }> = [];
  for (const n of spec.nodes) {
    addresses[n.name] = n.address ?? `127.0.0.1:${await freePort()}`;
    disks[n.name] = {};
    for (const d of n.disks ?? ['disk1']) {
      const p = path.join(dir, n.name, d);
      fs.mkdirSync(p, { recursive: true });
      disks[n.name][d] = p;
    }
    nodes.push({ name: n.name, address: addresses[n.name], disks: Object.entries(disks[n.name]).map(([name, p]) => ({ name, path: p })) });
  }
  const count = spec.replicas?.length ?? spec.vdisks ?? 4;
  const vdisks = Array.from({ length: count }, (_, id) => {
    const reps = spec.replicas?.[id] ?? [`${nodes[id % nodes.length].name}/${nodes[id % nodes.length].disks[0].name}`];
    return { id, replicas: reps.map((r) => ({ node: r.split('/')[0], disk: r.split('/')[1] })) };
  });
  const clusterYaml = path.join(dir, 'cluster.yaml');
  fs.writeFileSync(clusterYaml, YAML.stringify({ nodes, vdisks, ...(spec.keySize ? { key_size: spec.keySize } : {}) }));
  const nodeYaml: Record<string, string> = {};
  for (const n of nodes) {
    const doc = {
      name: n.name,
      quorum: opts.quorum ?? 1,
      operation_timeout: opts.operationTimeout ?? '3s',
      check_interval: opts.checkInterval ?? '1s',
      cluster_policy: opts.clusterPolicy ?? 'quorum',
      backend_type: 'pearl',
      cleanup_interval: opts.cleanupInterval ?? '1h',
      http_api_address: '127.0.0.1',
      http_api_port: 0,
      // The node's record of its disks, beside them (not in the working directory).
      state_dir: path.join(dir, n.name),
      ...(opts.httpMaxBodySize !== undefined ? { http_max_body_size: opts.httpMaxBodySize } : {}),
      pearl: {
        alien_disk: n.disks[0].name,
        blob_file_name_prefix: 'bob',
        ...(opts.maxBlobSize !== undefined ? { max_blob_size: opts.maxBlobSize } : {}),
        ...(opts.maxDataInBlob !== undefined ? { max_data_in_blob: opts.maxDataInBlob } : {}),
        ...(opts.syncWrites !== undefined ? { sync_writes: opts.syncWrites } : {}),
        settings: {
          root_dir_name: 'bob',
          alien_root_dir_name: 'alien',
          timestamp_period: opts.timestampPeriod ?? '1d',
          create_pearl_wait_delay: '100ms',
        },
        ...opts.pearl,
      },
      ...opts.extra,
    };
    nodeYaml[n.name] = path.join(dir, `${n.name}.node.yaml`);
    fs.writeFileSync(nodeYaml[n.name], YAML.stringify(doc));
  }
  return { dir, clusterYaml, nodeYaml, disks, addresses };
}

export interface OysterProcess {
  name: string;
  child: ChildProcess;
  /** http://127.0.0.1:<port> of the REST API */
  url: string;
  /** Every line the process printed (stdout and stderr). */
  output: string[];
  /** Resolves with the exit code (or signal name) when the process ends. */
  exited: Promise<number | string>;
  /** SIGTERM and wait for the exit (code 0 expected). */
  stop(): Promise<number | string>;
  /** SIGKILL and wait. */
  kill(): Promise<number | string>;
}

export interface StartOptions {
  /** Arguments after bin/oysterd.js, e.g. ["-c", cluster, "-n", node, "--init-folders"]. */
  args: string[];
  /** What runs oysterd, if not `node bin/oysterd.js`: ["npm", "start"]. */
  command?: string[];
  cwd?: string;
  env?: Record<string, string>;
  /** How long to wait for "node is serving". */
  timeoutMs?: number;
}

/** Spawns oysterd and waits until it serves REST (its port comes from the log). */
export function startOysterd(name: string, opts: StartOptions): Promise<OysterProcess> {
  // OYSTER_NODE_FLAGS: Node.js flags for the node processes of a bench run (--cpu-prof, say).
  const flags = process.env.OYSTER_NODE_FLAGS?.split(' ').filter(Boolean) ?? [];
  const [program, ...before] = opts.command ?? [process.execPath, ...flags, BIN];
  const child = spawn(program, [...before, ...opts.args], {
    cwd: opts.cwd,
    env: { ...process.env, OYSTER_LOG_LEVEL: process.env.OYSTER_LOG_LEVEL ?? 'info', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} did not start within ${opts.timeoutMs ?? 20000} ms:\n${output.join('\n')}`));
    }, opts.timeoutMs ?? 20000);
    const onData = (chunk: Buffer) => {
      buf += chunk.toString();
      const lines = buf.split('\n');
      buf = lines.pop() ?? '';
      for (const line of lines) {
        output.push(line);
        if (!line.includes('"node is serving"')) continue;
        const rest = (JSON.parse(line) as { rest: string }).rest;
        clearTimeout(timer);
        const port = Number(rest.slice(rest.lastIndexOf(':') + 1));
        const proc: OysterProcess = {
          name,
          child,
          url: `http://127.0.0.1:${port}`,
          output,
          exited,
          stop: () => {
            child.kill('SIGTERM');
            return exited;
          },
          kill: () => {
            child.kill('SIGKILL');
            return exited;
          },
        };
        resolve(proc);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code}) before serving:\n${output.join('\n')}`));
    });
  });
}

/** Starts the node `name` of a cluster written by writeCluster. */
export function startNode(files: ClusterFiles, name: string, extra: Partial<StartOptions> = {}): Promise<OysterProcess> {
  return startOysterd(name, {
    ...extra,
    args: ['-c', files.clusterYaml, '-n', files.nodeYaml[name], '--init-folders', ...(extra.args ?? [])],
  });
}
