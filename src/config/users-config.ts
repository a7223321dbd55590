// users.yaml: roles (sets of permissions), users with a
// plain password or a SHA-512 hash of password + salt, a role and per-flag
// claims that override the role.
import { ConfigReader } from './reader';
import { Permission, PERMISSION_KEYS, PermissionName } from '../model/permission';

export interface User {
  username: string;
  /** Plain password, or undefined when a hash is given. */
  password?: string;
  /** SHA-512(password + salt), 64 bytes. */
  passwordHash?: Buffer;
  permissions: number;
}

export interface UsersConfig {
  salt: string;
  users: Map<string, User>;
}

function flags(reader: ReturnType<ConfigReader['root']>, base: number): number {
  let p = base;
  for (const [name, key] of Object.entries(PERMISSION_KEYS) as Array<[PermissionName, string]>) {
    const v = reader.boolean(key);
    if (v === true) p |= Permission[name];
    if (v === false) p &= ~Permission[name];
  }
  return p;
}

export function readUsersConfig(reader: ConfigReader, document: unknown): UsersConfig {
  const root = reader.root(document);
  const salt = root.string('password_salt', { default: 'bob' });
  const roles = new Map<string, number>();
  const rolesSection = root.section('roles', { required: true });
  if (rolesSection) {
    for (const name of rolesSection.unread()) {
      const role = rolesSection.section(name);
      roles.set(name, role ? flags(role, 0) : 0);
    }
  }
  const users = new Map<string, User>();
  root.list('users', { required: true }).forEach((entry) => {
    const u = entry.mapping();
    if (!u) return;
    const username = u.string('username', { required: true });
    const roleName = u.string('role');
    const password = u.string('password');
    const hashText = u.string('password_hash', {
      check: (h) => (/^[0-9a-fA-F]{128}$/.test(h) ? undefined : 'must be 128 hexadecimal digits (a SHA-512 hash)'),
    });
    let permissions = 0;
    if (roleName !== undefined) {
      if (roles.has(roleName)) permissions = roles.get(roleName)!;
      else u.reader.problem(u.keyPath('role'), `no role named ${JSON.stringify(roleName)} in roles`);
    }
    const claims = u.section('claims');
    if (claims) permissions = flags(claims, permissions);
    if (password !== undefined && hashText !== undefined) {
      u.reader.problem(u.keyPath('password_hash'), 'give either password or password_hash, not both');
    }
    if (username === '') return;
    if (users.has(username)) {
      u.reader.problem(u.keyPath('username'), `user ${JSON.stringify(username)} is defined twice`);
      return;
    }
    users.set(username, {
      username,
      // A user with neither password nor hash has the empty password, as in bob.
      password: hashText === undefined ? (password ?? '') : undefined,
      passwordHash: hashText === undefined ? undefined : Buffer.from(hashText, 'hex'),
      permissions,
    });
  });
  return { salt, users };
}
