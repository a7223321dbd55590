#!/usr/bin/env node
// Builds the Debian package of Oyster with dpkg-deb from an already built
// checkout (`npm run build`: build/Release/oyster.node and dist/src):
//
//   node packaging/build-deb.js [--out DIR]      (npm run package:deb)
//
// The package holds /usr/lib/oyster (the compiled JavaScript, the addon,
// the .proto files, the production node_modules), /usr/bin/oysterd and
// /usr/bin/oyster, the default configuration in /etc/oyster (conffiles),
// the systemd unit, the Grafana dashboard and Prometheus alerting rules in
// /usr/share/oyster, and the documentation. The version is package.json's.
// Prints the path of the .deb on standard output.
'use strict';

const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const zlib = require('node:zlib');

const ROOT = path.resolve(__dirname, '..');
const HERE = __dirname;
const LIB = 'usr/lib/oyster';
const MAINTAINER = process.env.DEB_MAINTAINER || 'Oyster maintainers <oyster@example.org>';
// Debian bookworm's nodejs (18.20) is enough: the addon uses Node-API 8 and
// every production dependency supports Node 18 (@koa/router stays on 13.x).
const NODE_MIN = '18';

function fail(message) {
  process.stderr.write(`build-deb: ${message}\n`);
  process.exit(1);
}

// The Debian packages of the tools this script runs, for a clear message when one is missing.
const PROVIDED_BY = { 'dpkg-deb': 'dpkg', dpkg: 'dpkg', 'dpkg-shlibdeps': 'dpkg-dev', strip: 'binutils', npm: 'npm' };

function run(cmd, args, options = {}) {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], ...options });
  } catch (err) {
    if (err.code === 'ENOENT') fail(`${cmd} is not installed${PROVIDED_BY[cmd] ? ` (Debian package ${PROVIDED_BY[cmd]})` : ''}`);
    throw err;
  }
}

function outDir() {
  const i = process.argv.indexOf('--out');
  if (i < 0) return path.join(ROOT, 'dist', 'packages');
  if (!process.argv[i + 1]) fail('--out needs a directory');
  return path.resolve(process.argv[i + 1]);
}

// package.json's semver as a Debian version: a pre-release sorts before the release.
function debianVersion(v) {
  if (!/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(v)) fail(`package.json version ${v} is not semver`);
  return v.replace('-', '~');
}

/** Copies a tree; keep(dirent) decides what goes. */
function copyTree(from, to, keep) {
  fs.mkdirSync(to, { recursive: true });
  for (const e of fs.readdirSync(from, { withFileTypes: true })) {
    if (!keep(e)) continue;
    const src = path.join(from, e.name);
    const dst = path.join(to, e.name);
    if (e.isDirectory()) copyTree(src, dst, keep);
    else if (e.isSymbolicLink()) fs.symlinkSync(fs.readlinkSync(src), dst);
    else if (e.isFile()) fs.copyFileSync(src, dst);
  }
}

// What a module needs at run time: not its documentation pages, TypeScript
// sources and declarations, source maps or dot-files. Directories are kept
// whatever their names (yaml's code lives in dist/doc/), except dot-
// directories and nested node_modules, which npm lists on their own.
function runtimeFile(e) {
  const name = e.name;
  if (name.startsWith('.')) return false;
  if (e.isDirectory()) return name !== 'node_modules';
  return !/\.(md|markdown|html|map|d\.ts|d\.mts|d\.cts|ts|tsbuildinfo)$/i.test(name) || /^licen[cs]e/i.test(name);
}

// The installed production dependencies, as npm sees them: the same tree the
// tests ran against, without the development packages.
function productionModules(stage) {
  let out;
  try {
    out = run('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    fail(`npm ls finds node_modules out of step with package.json (run npm install):\n${err.stderr}`);
  }
  const dirs = out.split('\n').filter((p) => p && p !== ROOT);
  if (dirs.length === 0) fail('npm ls found no production dependencies; run npm install first');
  for (const dir of dirs) {
    const rel = path.relative(ROOT, dir);
    if (!rel.startsWith(`node_modules${path.sep}`)) fail(`unexpected module location ${dir}`);
    copyTree(dir, path.join(stage, LIB, rel), runtimeFile);
  }
}

function write(file, text, mode = 0o644) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text, { mode });
}

function gzip(file, text) {
  write(file, zlib.gzipSync(Buffer.from(text), { level: 9 }));
}

// The commit the package is built from, for oyster_build_info.
function revision() {
  try {
    return execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}

// A manual page made of the program's own --help text.
function manPage(program, section, summary, help, version) {
  const esc = (line) => line.replace(/\\/g, '\\e').replace(/^([.'])/, '\\&$1');
  return [
    `.TH ${program.toUpperCase()} ${section} "" "oyster ${version}" "Oyster"`,
    '.SH NAME',
    `${program} \\- ${summary}`,
    '.SH DESCRIPTION',
    '.nf',
    ...help.trimEnd().split('\n').map(esc),
    '.fi',
    '.SH SEE ALSO',
    section === '1' ? 'oysterd(8)' : 'oyster(1)',
    '.PP',
    '/usr/share/doc/oyster/',
    '',
  ].join('\n');
}

// Library dependencies of the addon, as dpkg-shlibdeps works them out.
function shlibs(addon) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'oyster-shlibs-'));
  try {
    write(path.join(tmp, 'debian', 'control'), 'Source: oyster\n\nPackage: oyster\nArchitecture: any\n');
    // Its warnings (Node-API symbols resolve against the node binary) are noise here.
    const out = run('dpkg-shlibdeps', ['-O', '-e', addon], { cwd: tmp, stdio: ['ignore', 'pipe', 'pipe'] });
    const m = /shlibs:Depends=(.*)/.exec(out);
    if (!m) fail(`dpkg-shlibdeps said nothing usable: ${out}`);
    return m[1].trim();
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

// dpkg-deb --root-owner-group makes every file root's; modes are set here:
// directories 0755, scripts and ELF executables 0755, everything else 0644.
function normalizeModes(dir) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      fs.chmodSync(p, 0o755);
      normalizeModes(p);
    } else if (e.isFile()) {
      const head = Buffer.alloc(4);
      const fd = fs.openSync(p, 'r');
      fs.readSync(fd, head, 0, 4, 0);
      fs.closeSync(fd);
      const script = head.subarray(0, 2).toString() === '#!';
      const wasExecutable = (fs.statSync(p).mode & 0o111) !== 0;
      fs.chmodSync(p, script && wasExecutable ? 0o755 : 0o644);
    }
  }
}

function main() {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const version = debianVersion(pkg.version);
  const addon = path.join(ROOT, 'build', 'Release', 'oyster.node');
  for (const f of [addon, path.join(ROOT, 'dist', 'src', 'cli', 'oysterd.js'), path.join(ROOT, 'dist', 'src', 'cli', 'oyster.js')]) {
    if (!fs.existsSync(f)) fail(`${path.relative(ROOT, f)} is missing; run npm run build first`);
  }
  const arch = run('dpkg', ['--print-architecture']).trim();
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'oyster-deb-'));
  try {
    const lib = path.join(stage, LIB);
    // The program: what the dist/, build/ and src/ relative paths in the code expect.
    const { name, description, license, main: entry, dependencies } = pkg;
    write(path.join(lib, 'REVISION'), `${revision()}\n`);
    write(path.join(lib, 'package.json'), `${JSON.stringify({ name, version: pkg.version, description, license, private: true, main: entry, dependencies }, null, 2)}\n`);
    copyTree(path.join(ROOT, 'dist', 'src'), path.join(lib, 'dist', 'src'), (e) => e.isDirectory() || e.name.endsWith('.js'));
    for (const proto of ['bob.proto', 'oyster.proto']) write(path.join(lib, 'src', 'grpc', proto), fs.readFileSync(path.join(ROOT, 'src', 'grpc', proto)));
    write(path.join(lib, 'bin', 'oysterd.js'), fs.readFileSync(path.join(ROOT, 'bin', 'oysterd.js')), 0o755);
    write(path.join(lib, 'bin', 'oyster.js'), fs.readFileSync(path.join(ROOT, 'bin', 'oyster.js')), 0o755);
    const installedAddon = path.join(lib, 'build', 'Release', 'oyster.node');
    write(installedAddon, fs.readFileSync(addon));
    run('strip', ['--strip-unneeded', '--remove-section=.comment', '--remove-section=.note', installedAddon]);
    productionModules(stage);

    for (const prog of ['oysterd', 'oyster']) write(path.join(stage, 'usr', 'bin', prog), fs.readFileSync(path.join(HERE, 'bin', prog)), 0o755);
    for (const f of ['cluster.yaml', 'node.yaml', 'users.yaml']) write(path.join(stage, 'etc', 'oyster', f), fs.readFileSync(path.join(HERE, 'etc', f)));
    write(path.join(stage, 'lib', 'systemd', 'system', 'oyster.service'), fs.readFileSync(path.join(HERE, 'systemd', 'oyster.service')));
    // Monitoring to import: Grafana's dashboard, Prometheus's alerting rules.
    const share = path.join(stage, 'usr', 'share', 'oyster');
    write(path.join(share, 'grafana', 'oyster-dashboard.json'), fs.readFileSync(path.join(HERE, 'share', 'oyster-dashboard.json')));
    write(path.join(share, 'prometheus', 'oyster-alerts.yml'), fs.readFileSync(path.join(HERE, 'share', 'oyster-alerts.yml')));

    const doc = path.join(stage, 'usr', 'share', 'doc', 'oyster');
    write(path.join(doc, 'copyright'), fs.readFileSync(path.join(HERE, 'debian', 'copyright')));
    const date = run('date', ['-R']).trim();
    gzip(path.join(doc, 'changelog.gz'), `oyster (${version}) unstable; urgency=medium\n\n  * Oyster ${pkg.version}.\n\n -- ${MAINTAINER}  ${date}\n`);
    write(path.join(doc, 'README.md'), fs.readFileSync(path.join(ROOT, 'README.md')));
    for (const f of fs.readdirSync(path.join(ROOT, 'docs')).filter((n) => n.endsWith('.md'))) {
      write(path.join(doc, f), fs.readFileSync(path.join(ROOT, 'docs', f)));
    }
    const help = (bin) => run(process.execPath, [path.join(ROOT, 'bin', bin), '--help']);
    gzip(path.join(stage, 'usr', 'share', 'man', 'man8', 'oysterd.8.gz'), manPage('oysterd', '8', 'Oyster storage node', help('oysterd.js'), pkg.version));
    gzip(path.join(stage, 'usr', 'share', 'man', 'man1', 'oyster.1.gz'), manPage('oyster', '1', 'Oyster command-line tool', help('oyster.js'), pkg.version));

    fs.chmodSync(stage, 0o755);
    normalizeModes(stage);
    const control = path.join(stage, 'DEBIAN');
    fs.mkdirSync(control);
    const installedKiB = run('du', ['-sk', '--apparent-size', stage]).split('\t')[0];
    const fields = { VERSION: version, ARCH: arch, MAINTAINER, INSTALLED_SIZE: installedKiB, NODE_MIN, SHLIBS: shlibs(installedAddon) };
    const text = fs.readFileSync(path.join(HERE, 'debian', 'control'), 'utf8').replace(/@([A-Z_]+)@/g, (m, k) => fields[k] ?? fail(`no value for ${m}`));
    write(path.join(control, 'control'), text);
    write(path.join(control, 'conffiles'), fs.readFileSync(path.join(HERE, 'debian', 'conffiles')));
    for (const s of ['postinst', 'prerm', 'postrm']) write(path.join(control, s), fs.readFileSync(path.join(HERE, 'debian', s)), 0o755);
    fs.chmodSync(control, 0o755);

    const out = outDir();
    fs.mkdirSync(out, { recursive: true });
    const deb = path.join(out, `oyster_${version}_${arch}.deb`);
    run('dpkg-deb', ['--root-owner-group', '-Zxz', '--build', stage, deb], { stdio: ['ignore', 'ignore', 'inherit'] });
    process.stdout.write(`${deb}\n`);
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

main();
