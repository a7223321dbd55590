// Permissions and who needs which: the data API needs the
// data permissions (read/write) on both interfaces; REST management needs
// read_rest/write_rest; a few status endpoints and gRPC Ping need nothing.
export const Permission = {
  read: 1,
  write: 2,
  readRest: 4,
  writeRest: 8,
} as const;

export type PermissionName = keyof typeof Permission;
export const ALL_PERMISSIONS = Permission.read | Permission.write | Permission.readRest | Permission.writeRest;

/** users.yaml spelling of each permission. */
export const PERMISSION_KEYS: Record<PermissionName, string> = {
  read: 'read',
  write: 'write',
  readRest: 'read_rest',
  writeRest: 'write_rest',
};

/** REST: the permission a method and route pattern (as @koa/router matched it) need; 0 = none. */
export function restPermission(method: string, route: string): number {
  if (route.startsWith('/data/')) return method === 'GET' || method === 'HEAD' ? Permission.read : Permission.write;
  if (method === 'GET' || method === 'HEAD') {
    return ['/status', '/status/space', '/metrics', '/version', '/alien'].includes(route) ? 0 : Permission.readRest;
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
};
