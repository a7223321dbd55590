// users.yaml parsing and credential checks; the permission
// matrix over real HTTP and gRPC is tested in test/auth/matrix.test.ts.
import crypto from 'node:crypto';
import t from 'tap';
import YAML from 'yaml';
import { AuthError, Authenticator } from '../../src/auth/authenticator';
import { restPermission } from '../../src/auth/permissions';
import { ALL_PERMISSIONS, Permission } from '../../src/model/permission';
import { readUsersConfig, UsersConfig } from '../../src/config/users-config';
import { ConfigReader } from '../../src/config/reader';

const hash = (password: string, salt: string) => crypto.createHash('sha512').update(password + salt).digest('hex');

const USERS = `
roles:
  admin: {read: true, write: true, read_rest: true, write_rest: true}
  reader: {read: true, read_rest: true}
password_salt: pepper
users:
  - username: default
    role: reader
  - username: admin
    password: "s3:cret"
    role: admin
  - username: custom
    password: password
    role: reader
    claims: {write: true, read_rest: false}
  - username: hashed
    password_hash: ${hash('hush', 'pepper')}
    claims: {write_rest: true, read_rest: true}
  - username: nopass
`;

function load(text: string): { users?: UsersConfig; reader: ConfigReader } {
  const reader = new ConfigReader('users.yaml');
  const users = readUsersConfig(reader, YAML.parse(text));
  reader.finish();
  return { users, reader };
}

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

t.test('users.yaml: roles, claims, hashes, defaults', async (t) => {
  const { users, reader } = load(USERS);
  t.same(reader.problems, []);
  t.same(reader.warnings, []);
  const u = users!.users;
  t.equal(users!.salt, 'pepper');
  t.equal(u.get('admin')!.permissions, ALL_PERMISSIONS);
  t.equal(u.get('default')!.permissions, Permission.read | Permission.readRest);
  t.equal(u.get('custom')!.permissions, Permission.read | Permission.write, 'claims override the role both ways');
  t.equal(u.get('hashed')!.permissions, Permission.readRest | Permission.writeRest, 'no role: only the claims');
  t.equal(u.get('nopass')!.password, '', 'neither password nor hash: the empty password');
});

t.test('users.yaml: every mistake is reported with its key', async (t) => {
  const { reader } = load(`
roles:
  admin: {read: true, sudo: true}
users:
  - username: a
    role: ghost
  - username: b
    password_hash: nothex
  - username: a
    password: x
  - username: c
    password: x
    password_hash: ${'ab'.repeat(64)}
`);
  const keys = reader.problems.map((p) => `${p.key}: ${p.reason}`);
  t.match(keys, [/users\[0\]\.role: no role named "ghost"/, /users\[1\]\.password_hash: must be 128 hexadecimal digits/, /users\[2\]\.username: user "a" is defined twice/, /users\[3\]\.password_hash: give either/]);
  t.match(reader.warnings.map((w) => w.key), ['roles.admin.sudo'], 'unknown permission names are warned about');
  const missing = load('{}').reader.problems.map((p) => p.key);
  t.same(missing.sort(), ['roles', 'users']);
});

t.test('credentials', async (t) => {
  const { users } = load(USERS);
  const auth = new Authenticator({ users: users!, nodes: new Map([['n2', '127.0.0.1:20001'], ['n3', 'localhost:20002']]), resolvePeriodMs: 5000 });
  t.same(await auth.authenticate(undefined, '10.0.0.1', 'rest'), { name: 'default', permissions: Permission.read | Permission.readRest }, 'no header: user default');
  t.equal((await auth.authenticate(basic('admin', 's3:cret'), undefined, 'rest')).permissions, ALL_PERMISSIONS, 'a password may contain ":"');
  t.equal((await auth.authenticate(`bAsIc ${Buffer.from('admin:s3:cret').toString('base64')}`, undefined, 'grpc')).name, 'admin', 'the scheme is case-insensitive');
  t.equal((await auth.authenticate(basic('hashed', 'hush'), undefined, 'rest')).name, 'hashed', 'SHA-512 of password + salt');
  t.equal((await auth.authenticate(`Basic ${Buffer.from('nopass').toString('base64')}`, undefined, 'rest')).name, 'nopass', 'no colon: empty password');
  const fails = async (header: string, status: number, iface: 'rest' | 'grpc' = 'rest', ip = '127.0.0.1') => {
    const err = await auth.authenticate(header, ip, iface).then(() => null, (e: unknown) => e);
    t.ok(err instanceof AuthError && err.status === status, `${header} -> ${status}`);
  };
  await fails(basic('admin', 'wrong'), 401);
  await fails(basic('admin', 's3'), 401);
  await fails(basic('hashed', 'hush2'), 401);
  await fails(basic('ghost', ''), 401);
  await fails('Bearer abc', 401);
  await fails('Basic !!!', 400);
  await fails(`Basic ${Buffer.from([0xff, 0xfe, 0x3a]).toString('base64')}`, 400);
  // Another node: gRPC only, and only from its configured address.
  const n2 = `InterNode ${Buffer.from('n2').toString('base64')}`;
  t.same(await auth.authenticate(n2, '127.0.0.1', 'grpc'), { name: 'node:n2', permissions: ALL_PERMISSIONS });
  t.equal((await auth.authenticate(n2, '::ffff:127.0.0.1', 'grpc')).name, 'node:n2', 'IPv4 on a dual-stack socket');
  await fails(n2, 401, 'rest');
  await fails(n2, 401, 'grpc', '10.9.9.9');
  await fails(`InterNode ${Buffer.from('stranger').toString('base64')}`, 401, 'grpc');
  t.equal((await auth.authenticate(`InterNode ${Buffer.from('n3').toString('base64')}`, '127.0.0.1', 'grpc')).name, 'node:n3', 'a host name is resolved');

  const open = new Authenticator({ users: null, nodes: new Map(), resolvePeriodMs: 0 });
  t.equal((await open.authenticate('Basic garbage', undefined, 'rest')).permissions, ALL_PERMISSIONS, 'None: everything is allowed');
});

t.test('the REST permission of each route', async (t) => {
  t.equal(restPermission('GET', '/status'), 0);
  t.equal(restPermission('GET', '/metrics'), 0);
  t.equal(restPermission('GET', '/alien'), 0);
  t.equal(restPermission('GET', '/alien/dir'), Permission.readRest);
  t.equal(restPermission('GET', '/nodes'), Permission.readRest);
  t.equal(restPermission('GET', '/data/:key'), Permission.read);
  t.equal(restPermission('HEAD', '/data/:key'), Permission.read);
  t.equal(restPermission('POST', '/data/:key'), Permission.write);
  t.equal(restPermission('DELETE', '/data/:key'), Permission.write);
  t.equal(restPermission('POST', '/disks/:name/stop'), Permission.writeRest);
  t.equal(restPermission('PUT', '/vdisks/:id/partitions/by_timestamp/:ts/:action'), Permission.writeRest);
  t.equal(restPermission('DELETE', '/blobs/outdated'), Permission.writeRest);
});
