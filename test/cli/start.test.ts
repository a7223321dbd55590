// A newcomer's first minutes, as the README gives them: `npm start` runs a
// node on the built-in configuration that serves REST on 127.0.0.1:8000
// only (nothing is authenticated), says in its start line where it listens
// and where its data goes ($OYSTER_DATA), and stopped with SIGTERM — as a
// terminal, a supervisor or a script stops npm — leaves no oysterd behind.
// The built-in ports are fixed: the test skips, saying so, when another
// program holds one of them.
import { execFileSync } from 'node:child_process';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { startOysterd } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';

const ROOT = path.resolve(__dirname, '..', '..', '..');

function canListen(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

function connects(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port, timeout: 2000 });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
    s.once('timeout', () => {
      s.destroy();
      resolve(false);
    });
  });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

t.test('npm start', async (t) => {
  const busy = [];
  for (const port of [8000, 20000]) if (!(await canListen(port, '0.0.0.0'))) busy.push(port);
  if (busy.length > 0) {
    t.pass(`SKIP: port ${busy.join(' and ')} of the built-in configuration is in use by another program`);
    return;
  }
  const data = path.join(tempDir(t, 'oyster-start-'), 'data');
  const npm = await startOysterd('npm start', { command: ['npm', 'start'], args: [], cwd: ROOT, env: { OYSTER_DATA: data }, timeoutMs: 30_000 });
  t.teardown(() => {
    if (npm.child.exitCode === null) npm.child.kill('SIGKILL');
  });
  const serving = JSON.parse(npm.output.find((l) => l.includes('"node is serving"'))!) as Record<string, unknown>;
  t.match(serving, { level: 'info', rest: 'http://127.0.0.1:8000', grpc: '127.0.0.1:20000', authentication: 'None' }, 'the start line says where it listens');
  t.match(serving.disks, [{ name: 'disk0', path: path.join(data, 'disk0', 'bob') }, { name: 'disk0', path: path.join(data, 'disk0', 'alien') }], 'and where the data goes');
  t.equal((await fetch('http://127.0.0.1:8000/status')).status, 200, 'REST answers on 127.0.0.1');
  const outside = Object.values(os.networkInterfaces())
    .flat()
    .find((i) => i && i.family === 'IPv4' && !i.internal);
  if (outside) t.notOk(await connects(outside.address, 8000), `not on ${outside.address}: other hosts cannot reach the unauthenticated API`);
  else t.pass('SKIP the check from another address: this machine has no IPv4 address but loopback');

  // npm's child is oysterd itself (the script execs it): nothing sits between them to orphan it.
  const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(npm.child.pid)], { encoding: 'utf8' });
  const pids = children.trim().split(/\s+/).filter(Boolean).map(Number);
  t.equal(pids.length, 1, `npm has one child (${pids.join(', ')})`);
  t.equal(await npm.stop(), 0, 'npm start ends with oysterd, which stops cleanly on SIGTERM');
  await new Promise((r) => setTimeout(r, 200));
  t.same(pids.filter(alive), [], 'no oysterd is left running');
  t.ok(await canListen(8000, '127.0.0.1'), 'port 8000 is free again');
});
