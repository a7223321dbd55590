// Topology: who holds which vdisk, from cluster.yaml.
export interface TopologyDisk {
  name: string;
  path: string;
}
export interface TopologyNode {
  name: string;
  address: string;
  disks: TopologyDisk[];
}
export interface Replica {
  node: string;
  disk: string;
  path: string;
}
export interface VDisk {
  id: number;
  replicas: Replica[];
}

export interface ClusterShape {
  nodes: Array<{ name: string; address: string; disks: TopologyDisk[] }>;
  vdisks: Array<{ id: number; replicas: Array<{ node: string; disk: string }> }>;
}

export class Topology {
  readonly nodes: TopologyNode[];
  readonly vdisks: VDisk[];
  readonly self: TopologyNode;
  /**
   * This node's id, the last tie-breaker of the versions it stamps: its
   * position in cluster.yaml's node list, from 1 (every node reads the same list).
   */
  readonly selfId: number;
  private readonly byNode = new Map<string, TopologyNode>();
  // vdisk id -> distinct node names holding it, in the order of `nodes`
  private readonly targets = new Map<number, string[]>();

  constructor(cluster: ClusterShape, selfName: string) {
    this.nodes = cluster.nodes.map((n) => ({ name: n.name, address: n.address, disks: n.disks.map((d) => ({ ...d })) }));
    for (const n of this.nodes) this.byNode.set(n.name, n);
    const self = this.byNode.get(selfName);
    if (!self) throw new Error(`node ${selfName} is not in the cluster`);
    this.self = self;
    this.selfId = this.nodes.indexOf(self) + 1;
    this.vdisks = [...cluster.vdisks]
      .sort((a, b) => a.id - b.id)
      .map((v) => ({
        id: v.id,
        replicas: v.replicas.map((r) => ({
          node: r.node,
          disk: r.disk,
          path: this.byNode.get(r.node)?.disks.find((d) => d.name === r.disk)?.path ?? '',
        })),
      }));
    for (const v of this.vdisks) {
      const holders = new Set(v.replicas.map((r) => r.node));
      this.targets.set(
        v.id,
        this.nodes.filter((n) => holders.has(n.name)).map((n) => n.name),
      );
    }
  }

  get vdiskCount(): number {
    return this.vdisks.length;
  }

  vdisk(id: number): VDisk | undefined {
    return Number.isInteger(id) && id >= 0 && id < this.vdisks.length ? this.vdisks[id] : undefined;
  }

  node(name: string): TopologyNode | undefined {
    return this.byNode.get(name);
  }

  /** Distinct nodes holding the vdisk, in cluster.yaml order. */
  targetNodes(vdisk: number): string[] {
    return this.targets.get(vdisk) ?? [];
  }

  replicasOn(vdisk: number, node: string): Replica[] {
    return this.vdisk(vdisk)?.replicas.filter((r) => r.node === node) ?? [];
  }

  localReplicas(vdisk: number): Replica[] {
    return this.replicasOn(vdisk, this.self.name);
  }

  isOnNode(vdisk: number, node: string): boolean {
    return this.targetNodes(vdisk).includes(node);
  }

  /** vdisks with a replica on the given disk of this node. */
  vdisksOnLocalDisk(disk: string): number[] {
    return this.vdisks.filter((v) => v.replicas.some((r) => r.node === this.self.name && r.disk === disk)).map((v) => v.id);
  }
}
