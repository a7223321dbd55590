// Key -> vdisk, bob's "Mod" distribution: the key read as an
// unsigned little-endian integer, modulo the number of vdisks. And a hash
// that spreads the keys of one vdisk over the nodes that serve it.

/**
 * The vdisk id of a key among `vdiskCount` vdisks. Computed piecewise
 * (rem += piece·base^i mod N) so that no big integer is built per request:
 * by 32-bit words while every product stays below 2^53 (N up to 2^21), by
 * bytes beyond (every intermediate below 2^41 for N up to 2^32).
 */
export function vdiskOf(key: Uint8Array, vdiskCount: number): number {
  if (!Number.isInteger(vdiskCount) || vdiskCount < 1 || vdiskCount > 2 ** 32) {
    throw new RangeError(`invalid vdisk count ${vdiskCount}`);
  }
  let rem = 0;
  let mult = 1 % vdiskCount;
  let i = 0;
  if (vdiskCount <= 2 ** 21) {
    const wordStep = 2 ** 32 % vdiskCount;
    for (; i + 4 <= key.length; i += 4) {
      const word = (key[i] | (key[i + 1] << 8) | (key[i + 2] << 16) | (key[i + 3] << 24)) >>> 0;
      rem = (rem + mult * word) % vdiskCount;
      mult = (mult * wordStep) % vdiskCount;
    }
  }
  for (; i < key.length; i++) {
    rem = (rem + mult * key[i]) % vdiskCount;
    mult = (mult * 256) % vdiskCount;
  }
  return rem;
}

/**
 * FNV-1a (32 bits) of the key: for choices among the nodes of one vdisk
 * (support nodes, the replica a read asks first). The keys of one vdisk share
 * their residue modulo the vdisk count, so the key's own value would not
 * spread them.
 */
export function keySpread(key: Uint8Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key[i], 0x01000193) >>> 0;
  return h;
}

/** The positions of `keys` grouped by their vdisk (first appearance order). */
export function groupByVdisk(keys: readonly Uint8Array[], vdiskCount: number): Map<number, number[]> {
  const byVdisk = new Map<number, number[]>();
  keys.forEach((k, i) => {
    const v = vdiskOf(k, vdiskCount);
    const list = byVdisk.get(v);
    if (list) list.push(i);
    else byVdisk.set(v, [i]);
  });
  return byVdisk;
}
