// Large values against nginx (bench/nginx.ts) in the same run, part of
// `npm run bench:http`: GET and POST of 1 MiB values with wrk (64
// connections, rounds alternating; nginx answers PUT, WebDAV), and one
// 64 MiB value written and read by one client, against nginx and against
// `dd` writing the same bytes to the same file system, without a sync (the
// target's peer) and with one at its end (`conv=fdatasync`: the device's
// part, which oysterd's syncs every max_dirty_bytes_before_sync wait for).
// Server CPU is utime + stime of the server's processes per request.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { cpuSeconds, fmt, median, runWrk, table, WrkRun } from './lib';
import { Nginx, nginxInstalled, nginxVersion, startNginx } from './nginx';

const MiB = 1024 * 1024;
const SMALL_KEYS = 64;

interface Server {
  name: string;
  url: string;
  pids: () => number[];
  /** The method that stores a value. */
  write: 'POST' | 'PUT';
}

const cpuOf = (s: Server) => s.pids().reduce((a, p) => a + cpuSeconds(p), 0);

/** One request with a whole body, the answer's body discarded; resolves with the status and bytes received. */
function send(url: string, method: string, body?: Buffer): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, agent: false, headers: body ? { 'Content-Length': body.length, 'Content-Type': 'application/octet-stream' } : {} }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const wrk = (s: Server, script: string, seconds: number, connections: number) => runWrk({ url: s.url, pids: s.pids(), script, seconds, connections });

export async function largeValues(dir: string, oyster: { url: string; pid: number }, o: { rounds: number; wrkSeconds: number; connections: number; maxDirty: string }): Promise<void> {
  if (!nginxInstalled() || spawnSync('wrk', ['--version']).error) {
    console.log('\nnginx or wrk: not installed (Debian: apt-get install nginx-light wrk); the comparison of large values with nginx is skipped');
    return;
  }
  const base = path.join(dir, 'nginx');
  fs.mkdirSync(base, { recursive: true });
  let nginx: Nginx | null = null;
  try {
    nginx = await startNginx(base, path.join(base, 'root'), 128 * MiB);
    const servers: Server[] = [
      { name: 'oysterd', url: oyster.url, pids: () => [oyster.pid], write: 'POST' },
      { name: 'nginx', url: nginx.url, pids: nginx.pids, write: 'PUT' },
    ];
    const value = Buffer.alloc(MiB, 'w');
    for (const s of servers) {
      for (let k = 0; k < SMALL_KEYS; k++) {
        const r = await send(`${s.url}/data/${k}`, s.write, value);
        if (r.status !== 201 && r.status !== 204) throw new Error(`${s.name} ${s.write} /data/${k}: ${r.status}`);
      }
    }
    const scripts = {
      GET: path.join(dir, 'get-1m.lua'),
      POST: path.join(dir, 'post-1m.lua'),
      PUT: path.join(dir, 'put-1m.lua'),
    };
    fs.writeFileSync(scripts.GET, `request = function() return wrk.format("GET", "/data/" .. math.random(0, ${SMALL_KEYS - 1})) end\n`);
    for (const m of ['POST', 'PUT'] as const) {
      fs.writeFileSync(scripts[m], `local body = string.rep("w", ${MiB})\nrequest = function() return wrk.format("${m}", "/data/" .. math.random(0, ${SMALL_KEYS - 1}), {["Content-Type"] = "application/octet-stream"}, body) end\n`);
    }
    const rows: Array<Record<string, string>> = [];
    for (const what of ['GET', 'write'] as const) {
      const runs = servers.map(() => [] as WrkRun[]);
      for (let round = 0; round < o.rounds; round++) {
        for (const [i, s] of servers.entries()) runs[i].push(wrk(s, what === 'GET' ? scripts.GET : scripts[s.write], o.wrkSeconds, o.connections));
      }
      const ratios = runs[0].map((x, r) => x.rps / runs[1][r].rps);
      rows.push({
        operation: what === 'GET' ? 'GET 1 MiB' : 'POST 1 MiB (nginx: PUT)',
        'oysterd ops/s': fmt(median(runs[0].map((x) => x.rps))),
        'oysterd CPU µs/op': fmt(median(runs[0].map((x) => x.cpuUs))),
        'nginx ops/s': fmt(median(runs[1].map((x) => x.rps))),
        'nginx CPU µs/op': fmt(median(runs[1].map((x) => x.cpuUs))),
        'oysterd / nginx, per round': ratios.map((x) => `${fmt(x, 2)}×`).join(' '),
        median: `${fmt(median(ratios), 2)}×`,
      });
    }
    console.log(`\nLarge values against nginx ${nginxVersion()} (one worker, sendfile, WebDAV PUT) with wrk, ${o.connections} connections, ${o.wrkSeconds} s per round, ${o.rounds} rounds alternating (medians):\n`);
    console.log(table(rows));

    // One 64 MiB value at a time, one client, against dd to the same file system.
    const big = Buffer.alloc(64 * MiB, 'b');
    const ddFile = path.join(dir, 'dd-64m');
    const ddRuns: number[] = [];
    const ddSyncRuns: number[] = [];
    const dd = (...extra: string[]): number => {
      const t0 = performance.now();
      execFileSync('dd', ['if=/dev/zero', `of=${ddFile}`, 'bs=1M', 'count=64', ...extra], { stdio: 'ignore' });
      const rate = big.length / ((performance.now() - t0) / 1000);
      fs.rmSync(ddFile);
      return rate;
    };
    const one = servers.map(() => ({ write: [] as number[], read: [] as number[], writeCpu: [] as number[], readCpu: [] as number[] }));
    for (let round = 0; round < o.rounds; round++) {
      ddRuns.push(dd());
      ddSyncRuns.push(dd('conv=fdatasync'));
      for (const [i, s] of servers.entries()) {
        let c0 = cpuOf(s);
        let t0 = performance.now();
        const w = await send(`${s.url}/data/1000000`, s.write, big);
        if (w.status !== 201 && w.status !== 204) throw new Error(`${s.name} ${s.write} 64 MiB: ${w.status}`);
        one[i].write.push(big.length / ((performance.now() - t0) / 1000));
        one[i].writeCpu.push(cpuOf(s) - c0);
        c0 = cpuOf(s);
        t0 = performance.now();
        const r = await send(`${s.url}/data/1000000`, 'GET');
        if (r.status !== 200 || r.bytes !== big.length) throw new Error(`${s.name} GET 64 MiB: ${r.status}, ${r.bytes} bytes`);
        one[i].read.push(big.length / ((performance.now() - t0) / 1000));
        one[i].readCpu.push(cpuOf(s) - c0);
      }
    }
    const mbs = (x: number) => fmt(x / 1e6);
    const ms = (seconds: number) => fmt(seconds * 1000);
    console.log(
      `\nOne 64 MiB value, one client, ${o.rounds} rounds alternating (medians; CPU: the server's, per transfer; oysterd's max_dirty_bytes_before_sync ${o.maxDirty}):\n`,
    );
    console.log(
      table([
        {
          'dd write MB/s (no sync / fdatasync)': `${mbs(median(ddRuns))} / ${mbs(median(ddSyncRuns))}`,
          'oysterd write MB/s': mbs(median(one[0].write)),
          'nginx PUT MB/s': mbs(median(one[1].write)),
          'oysterd / dd': `${fmt(median(one[0].write.map((x, r) => x / ddRuns[r])), 2)}×`,
          'oysterd / dd fdatasync': `${fmt(median(one[0].write.map((x, r) => x / ddSyncRuns[r])), 2)}×`,
          'oysterd / nginx write': `${fmt(median(one[0].write.map((x, r) => x / one[1].write[r])), 2)}×`,
          'write CPU ms oysterd / nginx': `${ms(median(one[0].writeCpu))} / ${ms(median(one[1].writeCpu))}`,
          'oysterd read MB/s': mbs(median(one[0].read)),
          'nginx GET MB/s': mbs(median(one[1].read)),
          'oysterd / nginx read': `${fmt(median(one[0].read.map((x, r) => x / one[1].read[r])), 2)}×`,
          'read CPU ms oysterd / nginx': `${ms(median(one[0].readCpu))} / ${ms(median(one[1].readCpu))}`,
        },
      ]),
    );
    console.log('\ntargets: GET 1 MiB ≥ 0.8× nginx, POST 1 MiB ≥ 1.0× nginx PUT; 64 MiB written at ≥ 0.5× dd and ≥ 1.0× nginx PUT, read at ≥ 0.8× nginx GET');
  } finally {
    await nginx?.stop();
  }
}
