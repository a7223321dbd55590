// The network address forms of bob's configuration files: cluster node
// addresses (`host:port`, what http::Uri accepts as an authority with a port)
// and socket addresses (`ip:port`, Rust's SocketAddr). Parsers throw with the
// reason, like parseDuration and parseSize.
import { isIP, isIPv4, isIPv6 } from 'node:net';

export interface HostPort {
  /** Host name or IP address; an IPv6 address without its brackets. */
  host: string;
  port: number;
}

// RFC 3986 reg-name characters (unreserved, sub-delims, percent-encoding).
const REG_NAME = /^[A-Za-z0-9\-._~!$&'()*+,;=%]+$/;

/** A cluster node address: `host:port`, `ip:port` or `[ipv6]:port`. */
export function parseHostPort(text: string): HostPort {
  if (text.includes('://')) throw new Error(`"${text}" must be host:port, without a scheme`);
  if (/[/?#@\s]/.test(text)) throw new Error(`"${text}" must be host:port`);
  const { host, port } = splitPort(text);
  if (host.startsWith('[')) {
    const inner = host.slice(1, -1);
    if (!host.endsWith(']') || !isIPv6(inner)) throw new Error(`"${text}" has an invalid IPv6 address`);
    return { host: inner, port };
  }
  if (!REG_NAME.test(host)) throw new Error(`"${text}" has an invalid host name`);
  return { host, port };
}

/** A socket address: `a.b.c.d:port` or `[ipv6]:port`. */
export function parseSocketAddress(text: string): HostPort {
  const { host, port } = splitPort(text);
  if (host.startsWith('[') && host.endsWith(']') && isIPv6(host.slice(1, -1))) return { host: host.slice(1, -1), port };
  if (isIPv4(host)) return { host, port };
  throw new Error(`"${text}" must be an IP address and port, like 0.0.0.0:9000 or [::1]:9000`);
}

/** An IP address without port (IPv4 or IPv6). */
export function parseIp(text: string): string {
  if (isIP(text) === 0) throw new Error(`"${text}" is not an IP address`);
  return text;
}

function splitPort(text: string): HostPort {
  const colon = text.lastIndexOf(':');
  // "[::1]" alone: its last colon is inside the brackets, so there is no port.
  if (colon < 0 || text.indexOf(']', colon) >= 0) throw new Error(`"${text}" has no port`);
  const digits = text.slice(colon + 1);
  if (digits === '') throw new Error(`"${text}" has no port`);
  if (!/^[0-9]+$/.test(digits) || Number(digits) > 65535) throw new Error(`"${text}" has an invalid port (0-65535)`);
  const host = text.slice(0, colon);
  if (host === '') throw new Error(`"${text}" has no host`);
  return { host, port: Number(digits) };
}
