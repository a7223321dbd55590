// Authenticator: who a request comes from and what they may do.
// With authentication_type None everyone may do
// everything. With Basic: no Authorization header means the user "default";
// "Basic base64(user:password)" a configured user; "InterNode
// base64(node name)" another node of the cluster, accepted only on gRPC and
// only from that node's configured address.
import crypto from 'node:crypto';
import dns from 'node:dns';
import net from 'node:net';
import { ALL_PERMISSIONS } from '../model/permission';
import { parseHostPort } from '../config/address';
import { UsersConfig } from '../config/users-config';

export interface Identity {
  /** The user name, or "node:<name>" for another node. */
  name: string;
  permissions: number;
}

/** A request whose credentials could not be used: 400 (malformed) or 401. */
export class AuthError extends Error {
  constructor(
    readonly status: 400 | 401,
    message: string,
  ) {
    super(message);
  }
}

export interface AuthenticatorOptions {
  users: UsersConfig | null; // null: authentication_type None
  /** Cluster node name -> configured address (host:port). */
  nodes: Map<string, string>;
  /** How long a resolved host name is trusted (hostname_resolve_period_ms). */
  resolvePeriodMs: number;
}

export type Interface = 'rest' | 'grpc';

export class Authenticator {
  private readonly resolved = new Map<string, { ips: string[]; at: number }>();

  constructor(private readonly options: AuthenticatorOptions) {}

  get enabled(): boolean {
    return this.options.users !== null;
  }

  /** Identifies the sender of a request; `remoteIp` is the TCP peer's address. */
  async authenticate(authorization: string | undefined, remoteIp: string | undefined, iface: Interface): Promise<Identity> {
    const users = this.options.users;
    if (users === null) return { name: 'anonymous', permissions: ALL_PERMISSIONS };
    if (authorization === undefined || authorization === '') return this.user(users, 'default', '');
    const space = authorization.indexOf(' ');
    const scheme = (space < 0 ? authorization : authorization.slice(0, space)).toLowerCase();
    const payload = space < 0 ? '' : authorization.slice(space + 1).trim();
    if (scheme !== 'basic' && scheme !== 'internode') {
      throw new AuthError(401, `Unauthorized request: unsupported authorization scheme ${JSON.stringify(scheme)}`);
    }
    const decoded = decodeBase64(payload);
    if (scheme === 'basic') {
      // Split at the first colon (RFC 7617): unlike bob, a password may contain ':'.
      const colon = decoded.indexOf(':');
      return colon < 0 ? this.user(users, decoded, '') : this.user(users, decoded.slice(0, colon), decoded.slice(colon + 1));
    }
    if (iface !== 'grpc') throw new AuthError(401, 'Unauthorized request: node credentials are accepted on gRPC only');
    return this.node(decoded, remoteIp);
  }

  private user(users: UsersConfig, name: string, password: string): Identity {
    const u = users.users.get(name);
    if (!u) {
      // Hash anyway, so that the answer's timing does not tell which user names exist.
      equal(crypto.createHash('sha512').update(password + users.salt, 'utf8').digest(), UNKNOWN_USER_HASH);
      throw new AuthError(401, 'Unauthorized request');
    }
    const ok =
      u.passwordHash !== undefined
        ? equal(crypto.createHash('sha512').update(password + users.salt, 'utf8').digest(), u.passwordHash)
        : equal(sha256(password), sha256(u.password ?? ''));
    if (!ok) throw new AuthError(401, 'Unauthorized request');
    return { name, permissions: u.permissions };
  }

  private async node(name: string, remoteIp: string | undefined): Promise<Identity> {
    const address = this.options.nodes.get(name);
    if (address === undefined || remoteIp === undefined) throw new AuthError(401, 'Unauthorized request');
    const ips = await this.ipsOf(parseHostPort(address).host);
    if (!ips.includes(normalizeIp(remoteIp))) throw new AuthError(401, `Unauthorized request: not from ${name}'s address`);
    return { name: `node:${name}`, permissions: ALL_PERMISSIONS };
  }

  private async ipsOf(host: string): Promise<string[]> {
    if (net.isIP(host)) return [normalizeIp(host)];
    const cached = this.resolved.get(host);
    if (cached && Date.now() - cached.at < this.options.resolvePeriodMs) return cached.ips;
    try {
      const found = await dns.promises.lookup(host, { all: true });
      const ips = found.map((a) => normalizeIp(a.address));
      this.resolved.set(host, { ips, at: Date.now() });
      return ips;
    } catch {
      return cached?.ips ?? [];
    }
  }
}

const UNKNOWN_USER_HASH = Buffer.alloc(64);

function decodeBase64(text: string): string {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 === 1) {
    throw new AuthError(400, 'malformed credentials: not base64');
  }
  const bytes = Buffer.from(text, 'base64');
  const s = bytes.toString('utf8');
  if (!Buffer.from(s, 'utf8').equals(bytes)) throw new AuthError(400, 'malformed credentials: not UTF-8');
  return s;
}

// Both sides are fixed-size digests, so the comparison takes the same time
// whatever the password's length and content.
function equal(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}

function sha256(text: string): Buffer {
  return crypto.createHash('sha256').update(text, 'utf8').digest();
}

// "::ffff:127.0.0.1" (an IPv4 peer on a dual-stack socket) is 127.0.0.1.
function normalizeIp(ip: string): string {
  return ip.startsWith('::ffff:') && net.isIPv4(ip.slice(7)) ? ip.slice(7) : ip;
}
