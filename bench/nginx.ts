// nginx (Debian's nginx-light) as the peer of the REST API for large values:
// GET of the same bytes as files under `root`, WebDAV PUT for writes. One
// worker process, sendfile on, no access log: the plain file server an
// operator would otherwise put in front of a disk.
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export interface Nginx {
  url: string;
  /** The master and its worker: CPU is counted over both. */
  pids: () => number[];
  stop: () => Promise<void>;
}

// Debian installs it in /usr/sbin, which a non-root PATH may lack.
const NGINX = fs.existsSync('/usr/sbin/nginx') ? '/usr/sbin/nginx' : 'nginx';

export function nginxInstalled(): boolean {
  return !spawnSync(NGINX, ['-v']).error;
}

export function nginxVersion(): string {
  return (spawnSync(NGINX, ['-v'], { encoding: 'utf8' }).stderr ?? '').trim().replace(/^nginx version: /, '');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** Starts nginx serving `root` (files at /data/<key>) from a configuration written in `dir`. */
export async function startNginx(dir: string, root: string, maxBody: number): Promise<Nginx> {
  const port = await freePort();
  // A master started as root runs its worker as nobody, which must reach
  // the files (through the bench's own directory, made 0700) and write there.
  const benchDir = path.dirname(dir);
  fs.chmodSync(benchDir, fs.statSync(benchDir).mode | 0o711);
  for (const d of [dir, root, path.join(root, 'data'), path.join(dir, 'tmp')]) {
    fs.mkdirSync(d, { recursive: true });
    fs.chmodSync(d, 0o777);
  }
  const conf = path.join(dir, 'nginx.conf');
  fs.writeFileSync(
    conf,
    `worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  client_body_temp_path ${dir}/tmp;
  proxy_temp_path ${dir}/tmp; fastcgi_temp_path ${dir}/tmp; uwsgi_temp_path ${dir}/tmp; scgi_temp_path ${dir}/tmp;
  server {
    listen 127.0.0.1:${port};
    root ${root};
    client_max_body_size ${maxBody};
    client_body_buffer_size 1m;
    location /data/ { dav_methods PUT; create_full_put_path on; }
  }
}
`,
  );
  const child: ChildProcess = spawn(NGINX, ['-c', conf, '-p', dir, '-e', `${dir}/error.log`], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      await fetch(`${url}/data/`);
      break;
    } catch {
      if (i > 100) throw new Error(`nginx did not start: ${fs.existsSync(`${dir}/error.log`) ? fs.readFileSync(`${dir}/error.log`, 'utf8') : ''}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const pids = () => {
    const master = child.pid!;
    const children = fs.existsSync(`/proc/${master}/task/${master}/children`) ? fs.readFileSync(`/proc/${master}/task/${master}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number) : [];
    return [master, ...children];
  };
  return {
    url,
    pids,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGQUIT');
      }),
  };
}
