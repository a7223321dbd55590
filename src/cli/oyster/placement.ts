// Placing vdisk replicas on the disks of a cluster, as bob's ccg does for a
// new cluster: every replica of a vdisk on a different node, the disks used
// evenly (nodes with more disks get more replicas), and with racks the
// second replica in the first one's rack and further ones in other racks;
// and moving replicas onto the disks added to a cluster (ccg expand).

export interface PlacementNode {
  name: string;
  disks: string[];
}

export interface PlacementRack {
  name: string;
  nodes: string[];
}

export interface Replica {
  node: string;
  disk: string;
}

export interface PlacementInput {
  nodes: PlacementNode[];
  racks: PlacementRack[];
  vdisks: number;
  replicas: number;
  useRacks: boolean;
}

/** Throws with the reason when the request cannot be met. */
export function placeVDisks(p: PlacementInput): Replica[][] {
  if (p.replicas < 1) throw new Error('replicas must be at least 1');
  if (p.replicas > p.nodes.length) {
    throw new Error(`${p.replicas} replicas need as many nodes, the cluster has ${p.nodes.length}`);
  }
  const rackOf = new Map<string, string>();
  if (p.useRacks) {
    if (p.racks.length === 0) throw new Error('--use-racks needs racks in the input');
    for (const r of p.racks) for (const n of r.nodes) rackOf.set(n, r.name);
    const outside = p.nodes.filter((n) => !rackOf.has(n.name)).map((n) => n.name);
    if (outside.length > 0) throw new Error(`with --use-racks every node must be in a rack; not in any: ${outside.join(', ')}`);
  }
  const slots = p.nodes.flatMap((n) => n.disks.map((disk) => ({ node: n.name, disk })));
  if (slots.length === 0) throw new Error('the nodes have no disks');
  const rackDisks = new Map<string, number>();
  for (const s of slots) if (rackOf.has(s.node)) rackDisks.set(rackOf.get(s.node)!, (rackDisks.get(rackOf.get(s.node)!) ?? 0) + 1);
  const diskUse = new Map<string, number>();
  const nodeUse = new Map<string, number>();
  const rackUse = new Map<string, number>();
  const use = (m: Map<string, number>, k: string) => m.get(k) ?? 0;
  const slotKey = (s: Replica) => `${s.node}\u0000${s.disk}`;

  const result: Replica[][] = [];
  for (let v = 0; v < p.vdisks; v++) {
    const chosen: Replica[] = [];
    for (let r = 0; r < p.replicas; r++) {
      let candidates = slots.filter((s) => !chosen.some((c) => c.node === s.node));
      // A rack's load is per disk, so that bigger racks take more.
      if (p.useRacks) candidates = preferRacks(candidates, chosen, r, rackOf, (rack) => use(rackUse, rack) / rackDisks.get(rack)!);
      // Least-used disk first, then least-used node, then the order of the file.
      let best = candidates[0];
      for (const s of candidates) {
        const d = use(diskUse, slotKey(s)) - use(diskUse, slotKey(best));
        if (d < 0 || (d === 0 && use(nodeUse, s.node) < use(nodeUse, best.node))) best = s;
      }
      chosen.push(best);
      diskUse.set(slotKey(best), use(diskUse, slotKey(best)) + 1);
      nodeUse.set(best.node, use(nodeUse, best.node) + 1);
      if (p.useRacks) rackUse.set(rackOf.get(best.node)!, use(rackUse, rackOf.get(best.node)!) + 1);
    }
    result.push(chosen);
  }
  return result;
}

// The candidates in the rack where replica r should go: the least-loaded rack
// for the first; the first replica's rack for the second, if it has another
// node; otherwise the least-loaded rack not yet holding a replica of the vdisk
// (any rack when all hold one).
function preferRacks(
  candidates: Replica[],
  chosen: Replica[],
  r: number,
  rackOf: Map<string, string>,
  rackLoad: (rack: string) => number,
): Replica[] {
  const inRack = (rack: string) => candidates.filter((c) => rackOf.get(c.node) === rack);
  if (r === 1) {
    const same = inRack(rackOf.get(chosen[0].node)!);
    if (same.length > 0) return same;
  }
  const usedRacks = new Set(chosen.map((c) => rackOf.get(c.node)!));
  const racks = [...new Set(candidates.map((c) => rackOf.get(c.node)!))];
  const fresh = racks.filter((rack) => !usedRacks.has(rack));
  const pool = fresh.length > 0 ? fresh : racks;
  const least = pool.reduce((a, b) => (rackLoad(b) < rackLoad(a) ? b : a));
  return inRack(least);
}

/** A replica expand moved: where it was and where it goes. */
export interface Move {
  vdisk: number;
  from: Replica;
  to: Replica;
}

export interface PlacedVDisk {
  id: number;
  replicas: Replica[];
}

/**
 * Expands a placement onto more disks, as bob's `ccg expand`: the vdisks and
 * their replica counts stay, and replicas move from the most used disks to
 * the least used ones (new disks first, as they hold none) until no disk
 * holds more than one replica above another, as far as keeping each vdisk's
 * replicas on different nodes allows. Everything else stays where it is:
 * every move is data to copy.
 */
export function expandPlacement(current: readonly PlacedVDisk[], nodes: readonly PlacementNode[]): { vdisks: PlacedVDisk[]; moves: Move[] } {
  const slots = nodes.flatMap((n) => n.disks.map((disk) => ({ node: n.name, disk })));
  const key = (s: Replica) => `${s.node}\u0000${s.disk}`;
  const load = new Map(slots.map((s) => [key(s), 0]));
  for (const v of current) for (const r of v.replicas) load.set(key(r), (load.get(key(r)) ?? 0) + 1);
  const vdisks = current.map((v) => ({ id: v.id, replicas: v.replicas.map((r) => ({ node: r.node, disk: r.disk })) }));
  const moves: Move[] = [];
  // A vdisk of `from` whose other replicas are all on nodes other than to's.
  const movable = (from: Replica, to: Replica) =>
    vdisks.find((v) => v.replicas.some((r) => key(r) === key(from)) && !v.replicas.some((r) => key(r) !== key(from) && r.node === to.node));
  for (;;) {
    // The least used disk that can take a replica takes it from the most used one that can give it.
    const byLoad = [...slots].sort((a, b) => load.get(key(a))! - load.get(key(b))!);
    const move = (() => {
      for (const to of byLoad) {
        for (const from of byLoad.slice().reverse()) {
          if (load.get(key(from))! - load.get(key(to))! <= 1) break;
          const v = movable(from, to);
          if (v) return { v, from, to };
        }
      }
      return undefined;
    })();
    if (!move) return { vdisks, moves };
    const { v, from, to } = move;
    v.replicas[v.replicas.findIndex((r) => key(r) === key(from))] = { ...to };
    load.set(key(from), load.get(key(from))! - 1);
    load.set(key(to), load.get(key(to))! + 1);
    moves.push({ vdisk: v.id, from, to });
  }
}
