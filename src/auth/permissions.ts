// Who needs which permission: the data API needs the
// data permissions (read/write) on both interfaces; REST management needs
// read_rest/write_rest; a few status endpoints and gRPC Ping need nothing.
import { Permission } from '../model/permission';

/** REST: the permission a method and route pattern (as @koa/router matched it) need; 0 = none. */
export function restPermission(method: string, route: string): number {
  if (route.startsWith('/data/')) return method === 'GET' || method === 'HEAD' ? Permission.read : Permission.write;
  if (method === 'GET' || method === 'HEAD') {
    return ['/status', '/status/space', '/metrics', '/metrics/bob', '/version', '/alien'].includes(route) ? 0 : Permission.readRest;
  }
  return Permission.writeRest;
}

/** gRPC: the permission each method needs (BobApi, and Oyster's Replicas); Ping needs none. */
export const GRPC_PERMISSION: Record<string, number> = {
  Put: Permission.write,
  Delete: Permission.write,
  Get: Permission.read,
  Exist: Permission.read,
  Ping: 0,
  Digest: Permission.read,
  Entries: Permission.read,
  Files: Permission.read,
  ReadFile: Permission.read,
  Operations: Permission.read | Permission.write,
};
