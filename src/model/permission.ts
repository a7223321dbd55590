// What a user may do: bob's four permission flags, as bits, and their
// spelling in users.yaml.
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
