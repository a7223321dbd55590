// The Debian package: built with dpkg-deb from this checkout (the addon and
// dist/ as built), its control fields and contents, lintian and
// systemd-analyze where installed, the maintainer scripts' logic against
// stubbed system commands, and the installed files, extracted into a
// scratch root, running a node exactly as the unit's ExecStart does.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { freePort } from '../helpers/oysterd';
import { tempDir } from '../helpers/tmpdir';

const ROOT = path.resolve(__dirname, '..', '..', '..');
// Two, to see them split: flags an operator may give Node.js (docs/OPERATIONS.md).
const NODE_FLAGS = '--single-threaded-gc --max-semi-space-size=16';
const VERSION = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

function has(tool: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
}

/**
 * The system calls a unit's SystemCallFilter= lines allow, groups expanded by
 * systemd-analyze. As systemd applies them: the first line sets the kind of
 * filter (an allow list here), each later line adds what it lists, or with
 * "~" takes it away, in order.
 */
function unitSyscallFilter(lines: string[]): Set<string> {
  const groups = new Map<string, Set<string>>();
  const expand = (name: string): Set<string> => {
    if (!name.startsWith('@')) return new Set([name]);
    let set = groups.get(name);
    if (set) return set;
    set = new Set();
    for (const l of run('systemd-analyze', ['syscall-filter', '--no-pager', name]).split('\n').slice(1)) {
      const item = l.trim();
      if (item && !item.startsWith('#')) for (const n of expand(item)) set.add(n);
    }
    groups.set(name, set);
    return set;
  };
  const allowed = new Set<string>();
  if (lines[0]?.startsWith('~')) throw new Error('the unit filters with a deny list first; this check expects an allow list');
  for (const line of lines) {
    const deny = line.startsWith('~');
    for (const item of (deny ? line.slice(1) : line).split(/\s+/).filter(Boolean)) {
      for (const n of expand(item)) {
        if (deny) allowed.delete(n);
        else allowed.add(n);
      }
    }
  }
  return allowed;
}

function run(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): string {
  return execFileSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, ...opts });
}

t.test('the .deb package', async (t) => {
  const work = tempDir(t, 'oyster-deb-test-');
  const deb = run(process.execPath, [path.join(ROOT, 'packaging', 'build-deb.js'), '--out', work]).trim();
  const arch = run('dpkg', ['--print-architecture']).trim();
  t.equal(deb, path.join(work, `oyster_${VERSION.replace('-', '~')}_${arch}.deb`), 'named after package.json version');

  await t.test('control fields', async (t) => {
    const field = (name: string) => run('dpkg-deb', ['-f', deb, name]).trim();
    t.equal(field('Package'), 'oyster');
    t.equal(field('Version'), VERSION.replace('-', '~'));
    t.equal(field('Architecture'), arch);
    const depends = field('Depends').split(/,\s*/);
    t.ok(depends.includes('nodejs (>= 18)'), `Depends on Debian's nodejs: ${depends}`);
    t.ok(depends.includes('adduser'));
    t.ok(depends.some((d) => d.startsWith('libc6')), 'the addon\'s libraries, from dpkg-shlibdeps');
    const info = run('dpkg-deb', ['-I', deb]);
    for (const script of ['postinst', 'prerm', 'postrm']) t.match(info, new RegExp(`\\d+ bytes,\\s+\\d+ lines\\s+\\*\\s+${script}\\s+#!/bin/sh`), `${script}, executable`);
    t.same(run('dpkg-deb', ['--ctrl-tarfile', deb]).length > 0, true);
    const control = tempDir(t);
    run('dpkg-deb', ['-e', deb, control]);
    t.equal(fs.readFileSync(path.join(control, 'conffiles'), 'utf8'), '/etc/oyster/cluster.yaml\n/etc/oyster/node.yaml\n/etc/oyster/users.yaml\n');
    for (const s of ['postinst', 'prerm', 'postrm']) t.equal(spawnSync('sh', ['-n', path.join(control, s)]).status, 0, `${s} parses`);
  });

  await t.test('contents', async (t) => {
    const listing = run('dpkg-deb', ['-c', deb]);
    const entries = new Map<string, string>();
    for (const line of listing.trim().split('\n')) {
      const parts = line.split(/\s+/);
      entries.set(parts.slice(5).join(' ').replace(/^\.\//, '/').replace(/ -> .*$/, ''), `${parts[0]} ${parts[1]}`);
    }
    for (const [file, mode] of [
      ['/usr/bin/oysterd', '-rwxr-xr-x root/root'],
      ['/usr/bin/oyster', '-rwxr-xr-x root/root'],
      ['/etc/oyster/cluster.yaml', '-rw-r--r-- root/root'],
      ['/etc/oyster/node.yaml', '-rw-r--r-- root/root'],
      ['/etc/oyster/users.yaml', '-rw-r--r-- root/root'],
      ['/lib/systemd/system/oyster.service', '-rw-r--r-- root/root'],
      ['/usr/lib/oyster/build/Release/oyster.node', '-rw-r--r-- root/root'],
      ['/usr/lib/oyster/dist/src/cli/oysterd.js', '-rw-r--r-- root/root'],
      ['/usr/lib/oyster/dist/src/cli/oyster.js', '-rw-r--r-- root/root'],
      ['/usr/lib/oyster/src/grpc/bob.proto', '-rw-r--r-- root/root'],
      ['/usr/lib/oyster/package.json', '-rw-r--r-- root/root'],
      ['/usr/lib/oyster/node_modules/koa/package.json', '-rw-r--r-- root/root'],
      ['/usr/lib/oyster/node_modules/@grpc/grpc-js/package.json', '-rw-r--r-- root/root'],
      ['/usr/share/oyster/grafana/oyster-dashboard.json', '-rw-r--r-- root/root'],
      ['/usr/share/oyster/prometheus/oyster-alerts.yml', '-rw-r--r-- root/root'],
      ['/usr/lib/oyster/REVISION', '-rw-r--r-- root/root'],
      ['/usr/share/doc/oyster/copyright', '-rw-r--r-- root/root'],
      ['/usr/share/doc/oyster/changelog.gz', '-rw-r--r-- root/root'],
      ['/usr/share/man/man8/oysterd.8.gz', '-rw-r--r-- root/root'],
      ['/usr/share/man/man1/oyster.1.gz', '-rw-r--r-- root/root'],
    ]) {
      t.equal(entries.get(file), mode, file);
    }
    const names = [...entries.keys()];
    for (const dev of ['tap', 'typescript', 'cmake-js', 'node-addon-api', '@types/koa']) {
      t.notOk(names.some((n) => n.startsWith(`/usr/lib/oyster/node_modules/${dev}/`)), `no development package ${dev}`);
    }
    t.notOk(names.some((n) => n.startsWith('/usr/lib/oyster/dist/test/') || n.startsWith('/usr/lib/oyster/dist/bench/')), 'only dist/src');
    t.notOk(names.some((n) => n.endsWith('.map') || n.endsWith('.ts')), 'no source maps or TypeScript');
    t.notOk(names.some((n) => n.startsWith('/var/')), 'the data directory is made by postinst, owned by the service user');
  });

  await t.test('lintian', { skip: has('lintian') ? false : 'lintian is not installed' }, async (t) => {
    const args = os.userInfo().uid === 0 ? ['--allow-root', deb] : [deb];
    const r = spawnSync('lintian', args, { encoding: 'utf8' });
    const tags = r.stdout.trim().split('\n').filter(Boolean);
    t.same(tags.filter((l) => l.startsWith('E:')), [], 'no errors');
    // Warnings vary with lintian's version (bookworm's reports none): shown, not failed on.
    for (const w of tags.filter((l) => l.startsWith('W:'))) t.comment(w);
  });

  const root = tempDir(t, 'oyster-root-');
  run('dpkg-deb', ['-x', deb, root]);
  const unit = fs.readFileSync(path.join(root, 'lib', 'systemd', 'system', 'oyster.service'), 'utf8');
  const directive = (name: string) => unit.split('\n').filter((l) => l.startsWith(`${name}=`)).map((l) => l.slice(name.length + 1));

  await t.test('the unit', async (t) => {
    t.same(directive('Type'), ['exec']);
    t.same(directive('User'), ['oyster']);
    t.same(directive('ExecStart'), ['/usr/bin/oysterd -c /etc/oyster/cluster.yaml -n /etc/oyster/node.yaml --init-folders']);
    t.same(directive('ExecStartPost'), ['/usr/bin/oyster wait-ready -c /etc/oyster/cluster.yaml -n /etc/oyster/node.yaml --timeout 30min']);
    t.same(directive('ExecReload'), [], 'no reload: configuration is read at start only');
    t.same(directive('Restart'), ['on-failure']);
    t.same(directive('LimitNOFILE'), ['1048576']);
    t.same(directive('TimeoutStopSec'), ['90s']);
    for (const [k, v] of [
      ['NoNewPrivileges', 'yes'],
      ['ProtectSystem', 'strict'],
      ['ReadWritePaths', '/var/lib/oyster'],
      ['ProtectHome', 'yes'],
      ['PrivateTmp', 'yes'],
    ]) {
      t.same(directive(k), [v], `${k}=${v}`);
    }
    t.same(directive('WantedBy'), ['multi-user.target']);
  });

  await t.test('systemd-analyze verify', { skip: has('systemd-analyze') ? false : 'systemd-analyze is not installed' }, async (t) => {
    // The commands must exist: point them at the extracted copies.
    const dir = tempDir(t);
    fs.writeFileSync(path.join(dir, 'oyster.service'), unit.replaceAll('/usr/bin/', `${root}/usr/bin/`));
    const r = spawnSync('systemd-analyze', ['verify', '--man=no', path.join(dir, 'oyster.service')], { encoding: 'utf8' });
    t.equal(r.status, 0, r.stderr);
    t.equal(r.stderr.trim(), '', 'no complaints');
  });

  await t.test('systemd-analyze security', { skip: has('systemd-analyze') ? false : 'systemd-analyze is not installed' }, async (t) => {
    const dir = tempDir(t);
    fs.writeFileSync(path.join(dir, 'oyster.service'), unit);
    const r = spawnSync('systemd-analyze', ['security', '--offline=true', '--no-pager', path.join(dir, 'oyster.service')], { encoding: 'utf8' });
    const exposure = Number(/Overall exposure level for oyster\.service: ([\d.]+)/.exec(r.stdout)?.[1]);
    t.ok(exposure <= 1.5, `exposure ${exposure} at most 1.5`);
  });

  await t.test('maintainer scripts, against stubbed system commands', async (t) => {
    const control = tempDir(t);
    run('dpkg-deb', ['-e', deb, control]);
    const stubs = tempDir(t);
    const log = path.join(stubs, 'calls.log');
    // Each stub logs its call; getent answers from the users the stubs created.
    // (rm is a stub too: the stubs themselves use /bin/rm.)
    const stub = (name: string, body = '') =>
      fs.writeFileSync(path.join(stubs, name), `#!/bin/sh\necho "${name} $*" >> ${log}\n${body}\nexit 0\n`, { mode: 0o755 });
    stub('getent', `grep -qx "$2" ${stubs}/users 2>/dev/null || exit 2`);
    stub('adduser', `echo oyster >> ${stubs}/users`);
    stub('deluser', `/bin/rm -f ${stubs}/users`);
    stub('delgroup');
    stub('dpkg-statoverride', `case "$1" in --list) [ -f ${stubs}/override ] || exit 1;; --update) touch ${stubs}/override;; --remove) /bin/rm -f ${stubs}/override;; esac`);
    for (const s of ['install', 'rm', 'deb-systemd-helper', 'deb-systemd-invoke', 'systemctl', 'userdel', 'groupdel']) stub(s);
    const script = (name: string, ...args: string[]) => {
      fs.writeFileSync(log, '');
      const r = spawnSync('sh', [path.join(control, name), ...args], { env: { PATH: `${stubs}:/usr/bin:/bin` }, encoding: 'utf8' });
      t.equal(r.status, 0, `${name} ${args.join(' ')} exits 0: ${r.stderr}`);
      return fs.readFileSync(log, 'utf8').trim().split('\n').filter(Boolean);
    };
    const first = script('postinst', 'configure');
    t.ok(first.some((c) => c.startsWith('adduser --system --group --home /var/lib/oyster')), 'creates the system user');
    t.ok(first.includes('dpkg-statoverride --update --add root oyster 0640 /etc/oyster/users.yaml'), 'users.yaml readable by the service only');
    t.ok(first.includes('deb-systemd-helper enable oyster.service'), 'enables the unit on a first installation');
    const again = script('postinst', 'configure', VERSION);
    t.notOk(again.some((c) => c.startsWith('adduser') || c.startsWith('dpkg-statoverride --update')), 'a second run creates nothing twice');
    t.notOk(script('prerm', 'upgrade', VERSION).some((c) => c.startsWith('rm')), 'an upgrade removes nothing');
    const remove = script('postrm', 'remove');
    t.notOk(remove.some((c) => c.startsWith('rm') || c.startsWith('deluser')), 'remove keeps data and user');
    const purge = script('postrm', 'purge');
    t.ok(purge.includes('rm -rf /var/lib/oyster'), 'purge deletes the data');
    t.ok(purge.includes('deluser --system --quiet oyster'), 'purge deletes the user');
    t.ok(purge.includes('dpkg-statoverride --remove /etc/oyster/users.yaml'));
    const purgeAgain = script('postrm', 'purge');
    t.notOk(purgeAgain.some((c) => c.startsWith('deluser') || c.startsWith('dpkg-statoverride --remove')), 'purging again is harmless');
  });

  await t.test('the installed node runs as ExecStart does and serves REST', async (t) => {
    // What postinst and the configuration paths provide, moved into the scratch root.
    const data = path.join(root, 'var', 'lib', 'oyster');
    fs.mkdirSync(path.join(data, 'disk0'), { recursive: true });
    const [restPort, grpcPort] = [await freePort(), await freePort()];
    const rewrite = (file: string, edits: Array<[string, string]>) => {
      let text = fs.readFileSync(file, 'utf8');
      for (const [from, to] of edits) {
        t.ok(text.includes(from), `${path.basename(file)} has ${from}`);
        text = text.replaceAll(from, to);
      }
      fs.writeFileSync(file, text);
    };
    const etc = path.join(root, 'etc', 'oyster');
    rewrite(path.join(etc, 'cluster.yaml'), [['/var/lib/oyster', data], ['127.0.0.1:20000', `127.0.0.1:${grpcPort}`]]);
    rewrite(path.join(etc, 'node.yaml'), [['/var/lib/oyster', data], ['/etc/oyster', etc], ['http_api_port: 8000', `http_api_port: ${restPort}`]]);
    const inRoot = (command: string) => command.split(' ').map((w) => (w.startsWith('/') ? path.join(root, w) : w));
    const [bin, ...args] = inRoot(directive('ExecStart')[0]);
    // Under strace where it and systemd-analyze are installed: every system
    // call the node makes is checked against the unit's SystemCallFilter.
    const traced = has('strace') && has('systemd-analyze');
    const calls = path.join(tempDir(t), 'calls.txt');
    const node = traced
      ? spawn('strace', ['-f', '-qq', '-c', '-U', 'name,calls', '-o', calls, bin, ...args], { cwd: data, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, OYSTER_NODE_FLAGS: NODE_FLAGS } })
      : spawn(bin, args, { cwd: data, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, OYSTER_NODE_FLAGS: NODE_FLAGS } });
    const output: string[] = [];
    node.stdout.on('data', (c: Buffer) => output.push(c.toString()));
    node.stderr.on('data', (c: Buffer) => output.push(c.toString()));
    const exited = new Promise<number | null>((resolve) => node.on('exit', (code) => resolve(code)));
    t.teardown(() => node.kill('SIGKILL'));

    const [post, ...postArgs] = inRoot(directive('ExecStartPost')[0].replace('--timeout 30min', '--timeout 60s'));
    t.equal(spawnSync(post, postArgs, { encoding: 'utf8' }).status, 0, `ExecStartPost: the node serves\n${output.join('')}`);

    const url = `http://127.0.0.1:${restPort}`;
    const put = await fetch(`${url}/data/42`, { method: 'POST', body: 'from the package' });
    t.equal(put.status, 201);
    t.equal(await (await fetch(`${url}/data/42`)).text(), 'from the package');
    const oyster = path.join(root, 'usr', 'bin', 'oyster');
    t.equal(run(oyster, ['get', '42', '--grpc', `127.0.0.1:${grpcPort}`]), 'from the package', 'the installed oyster, over gRPC');
    run(oyster, ['put', '43', '--value', 'via the cli', '--rest', url]);
    t.equal(await (await fetch(`${url}/data/43`)).text(), 'via the cli');
    t.ok(fs.existsSync(path.join(data, 'disk0', 'bob')), '--init-folders made the data directory on disk0');

    // The node itself, not strace, gets the SIGTERM systemd would send.
    const nodePid = traced ? Number(fs.readFileSync(`/proc/${node.pid}/task/${node.pid}/children`, 'utf8').trim().split(' ')[0]) : node.pid!;
    const argv = fs.readFileSync(`/proc/${nodePid}/cmdline`, 'utf8').split('\0');
    t.same(argv.slice(1, 3), NODE_FLAGS.split(' '), 'OYSTER_NODE_FLAGS (from /etc/default/oyster) go to Node.js');
    const stopping = Date.now();
    process.kill(nodePid, 'SIGTERM');
    t.equal(await exited, 0, 'SIGTERM: a clean exit 0');
    t.ok(Date.now() - stopping < 90_000, 'within TimeoutStopSec');
    t.equal(run(oyster, ['blob', 'check', data]).split('\n').at(-2)?.endsWith('no problems'), true, 'the stopped node left clean partitions');
    if (traced) {
      const used = fs
        .readFileSync(calls, 'utf8')
        .split('\n')
        .map((l) => l.trim().split(/\s+/)[0])
        .filter((n) => /^[a-z_0-9]+$/.test(n) && n !== 'total' && n !== 'syscall');
      const allowed = unitSyscallFilter(directive('SystemCallFilter'));
      t.ok(used.length > 30, `${used.length} system calls seen`);
      t.same(used.filter((n) => !allowed.has(n)), [], "every system call the node made is allowed by the unit's SystemCallFilter");
    }
  });
});
