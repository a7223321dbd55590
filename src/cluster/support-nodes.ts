// Which nodes hold alien copies for replicas that could not be written
// (reference §2.4): nodes that do not hold the vdisk, reachable ones first.
// bob spreads them with a global round-robin counter; Oyster starts from a
// hash of the key instead, so the copies still spread evenly over the keys
// but every version of one key (put, then delete or put again within the
// same second) lands in the same alien directory, where the later write
// wins. Spread per request, two same-second versions would sit on two nodes
// with equal timestamps, and whichever was read or handed over last would win.
import { LinkManager } from './link-manager';
import { Topology } from './topology';

export class SupportNodes {
  constructor(
    private readonly topology: Topology,
    private readonly links: LinkManager,
  ) {}

  /** Up to `count` nodes, in the order the copies of `key` should go. */
  choose(vdisk: number, count: number, key: Buffer): string[] {
    const targets = new Set(this.topology.targetNodes(vdisk));
    const others = this.topology.nodes.map((n) => n.name).filter((n) => !targets.has(n));
    if (others.length === 0 || count <= 0) return [];
    const start = fnv1a(key) % others.length;
    const rotated = [...others.slice(start), ...others.slice(0, start)];
    const reachable = rotated.filter((n) => this.links.isAvailable(n));
    const unreachable = rotated.filter((n) => !this.links.isAvailable(n));
    return [...reachable, ...unreachable].slice(0, count);
  }
}

// FNV-1a (32 bits): keys of one vdisk share their residue modulo the vdisk
// count, so the key's own integer value would not spread them.
function fnv1a(key: Buffer): number {
  let h = 0x811c9dc5;
  for (const b of key) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h;
}
