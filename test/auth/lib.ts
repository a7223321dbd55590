// Shared by the authentication tests: a users.yaml covering the combinations
// of the four permissions, the identities a request can
// carry, and what each of them may do.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';

export const R = 1; // read
export const W = 2; // write
export const RR = 4; // read_rest
export const WR = 8; // write_rest

export const SALT = 'pepper';
export const sha512Hex = (password: string, salt: string) => crypto.createHash('sha512').update(password + salt, 'utf8').digest('hex');

/** users.yaml: every user's permissions are given in the comment. */
export const USERS_YAML = {
  roles: {
    admin: { read: true, write: true, read_rest: true, write_rest: true },
    reader: { read: true, read_rest: true },
    data: { read: true, write: true },
    rest: { read_rest: true, write_rest: true },
    viewer: { read_rest: true },
    writer: { write: true, write_rest: true },
  },
  password_salt: SALT,
  users: [
    { username: 'default', role: 'viewer' }, // RR
    { username: 'admin', password: 'admin-pw', role: 'admin' }, // R W RR WR
    { username: 'reader', password: 'reader-pw', role: 'reader' }, // R RR
    { username: 'data', password: 'data-pw', role: 'data' }, // R W
    { username: 'restonly', password: 'rest-pw', role: 'rest' }, // RR WR
    { username: 'hashed', password_hash: sha512Hex('hashed-pw', SALT), role: 'writer' }, // W WR
    // claims override the role both ways: reader minus read, plus write and write_rest
    { username: 'claimed', password: 'claimed-pw', role: 'reader', claims: { read: false, write: true, write_rest: true } }, // W RR WR
  ],
};

/** Writes users.yaml into `dir`; returns its path. */
export function writeUsers(dir: string): string {
  const file = path.join(dir, 'users.yaml');
  fs.writeFileSync(file, YAML.stringify(USERS_YAML));
  return file;
}

export const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
export const interNode = (node: string) => `InterNode ${Buffer.from(node).toString('base64')}`;

export type Refusal = 'unauthenticated' | 'malformed';

export interface Who {
  label: string;
  /** The Authorization header (none: user default). */
  header?: string;
  /** Granted permissions, or why the credentials are refused. */
  grants: number | Refusal;
}

/** The credentials every cell of the matrix is tried with. */
export function identities(selfNode: string): { rest: Who[]; grpc: Who[] } {
  const common: Who[] = [
    { label: 'admin', header: basic('admin', 'admin-pw'), grants: R | W | RR | WR },
    { label: 'reader', header: basic('reader', 'reader-pw'), grants: R | RR },
    { label: 'data', header: basic('data', 'data-pw'), grants: R | W },
    { label: 'restonly', header: basic('restonly', 'rest-pw'), grants: RR | WR },
    { label: 'hashed (SHA-512 of password + salt)', header: basic('hashed', 'hashed-pw'), grants: W | WR },
    { label: 'claimed (claims over a role)', header: basic('claimed', 'claimed-pw'), grants: W | RR | WR },
    { label: 'no credentials (user default)', grants: RR },
    { label: 'default by name', header: basic('default', ''), grants: RR },
    { label: 'wrong password', header: basic('admin', 'admin-PW'), grants: 'unauthenticated' },
    { label: 'wrong password of the hashed user', header: basic('hashed', 'hashed-pw' + SALT), grants: 'unauthenticated' },
    { label: 'unknown user', header: basic('ghost', 'admin-pw'), grants: 'unauthenticated' },
    { label: 'other scheme', header: 'Bearer abcdef', grants: 'unauthenticated' },
    { label: 'malformed base64', header: 'Basic %%%not-base64%%%', grants: 'malformed' },
    { label: 'not UTF-8', header: `Basic ${Buffer.from([0xff, 0xfe, 0x3a, 0x41]).toString('base64')}`, grants: 'malformed' },
  ];
  return {
    // Node credentials are for gRPC only: on REST even the right node from the right address is refused.
    rest: [...common, { label: 'InterNode on REST', header: interNode(selfNode), grants: 'unauthenticated' }],
    grpc: [
      ...common,
      { label: `InterNode ${selfNode} from its address`, header: interNode(selfNode), grants: R | W | RR | WR },
      { label: 'InterNode of an unknown node', header: interNode('stranger'), grants: 'unauthenticated' },
    ],
  };
}
