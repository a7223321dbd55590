// Key -> vdisk, bob's "Mod" distribution: the key read as an
// unsigned little-endian integer, modulo the number of vdisks.

/**
 * The vdisk id of a key among `vdiskCount` vdisks. Computed byte by byte
 * (rem += byte·256^i mod N) so that no big integer is built per request;
 * every intermediate stays below 2^41 for N up to 2^32.
 */
export function vdiskOf(key: Uint8Array, vdiskCount: number): number {
  if (!Number.isInteger(vdiskCount) || vdiskCount < 1 || vdiskCount > 2 ** 32) {
    throw new RangeError(`invalid vdisk count ${vdiskCount}`);
  }
  let rem = 0;
  let mult = 1 % vdiskCount;
  for (let i = 0; i < key.length; i++) {
    rem = (rem + mult * key[i]) % vdiskCount;
    mult = (mult * 256) % vdiskCount;
  }
  return rem;
}
