// Which nodes hold alien copies for replicas that could not be written:
// nodes that do not hold the vdisk, reachable ones first. bob spreads them
// with a global round-robin counter; Oyster starts from a hash of the key
// instead, so the copies still spread evenly over the keys but every version
// of one key lands in the same alien directory: the newer one supersedes the
// older there, and the hand-off delivers one record per key instead of one
// per version.
import { keySpread } from '../keys/distribution';
import { LinkManager } from './link-manager';
import { Topology } from '../model/topology';

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
    const start = keySpread(key) % others.length;
    const rotated = [...others.slice(start), ...others.slice(0, start)];
    const reachable = rotated.filter((n) => this.links.isAvailable(n));
    const unreachable = rotated.filter((n) => !this.links.isAvailable(n));
    return [...reachable, ...unreachable].slice(0, count);
  }
}
