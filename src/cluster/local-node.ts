// LocalNode: this node's force_node operations on its own backend
// (with bob's crashes turned into errors).
import { Backend } from '../backend/backend';
import { errors, OysterError } from '../backend/errors';
import { vdiskOf } from '../keys/distribution';
import { VersionClock } from '../model/clock';
import { KeyState, StoredRecord, Version } from '../model/version';
import { DeleteOptions, GetSource, NodeApi } from '../model/node-api';
import { Topology } from '../model/topology';

export class LocalNode implements NodeApi {
  constructor(
    private readonly topology: Topology,
    private readonly backend: Backend,
    /** Sees every version written here, so that this node's next stamp is later. */
    private readonly clock: VersionClock,
  ) {}

  get name(): string {
    return this.topology.self.name;
  }

  private vdisk(key: Buffer): number {
    return vdiskOf(key, this.topology.vdiskCount);
  }

  put(key: Buffer, value: Buffer, version: Version, remoteNodes: string[]): Promise<void> {
    this.clock.observe(version);
    if (remoteNodes.length === 0) return this.backend.put(this.vdisk(key), key, version, value);
    return this.putAliens(key, value, version, remoteNodes);
  }

  private async putAliens(key: Buffer, value: Buffer, version: Version, remoteNodes: string[]): Promise<void> {
    const vdisk = this.vdisk(key);
    // Alien copies for nodes that cannot be reached; an unknown owner would
    // leave copies nobody could ever deliver.
    for (const owner of remoteNodes) {
      if (!this.topology.node(owner)) throw new OysterError('InvalidArgument', `remote node ${JSON.stringify(owner)} is not in the cluster`);
    }
    // Each owner once: a name repeated in the request needs no second copy.
    for (const owner of new Set(remoteNodes)) await this.backend.putAlien(owner, vdisk, key, version, value);
  }

  /** Whether alien copies of the vdisk's records may be held here; reads skip the alien directory otherwise. */
  holdsAliens(vdisk: number): boolean {
    return this.backend.holdsAliens(vdisk);
  }

  get(key: Buffer, source: GetSource): Promise<StoredRecord | null> {
    return this.backend.get(this.vdisk(key), key, source);
  }

  async exist(keys: Buffer[], source: GetSource): Promise<Array<KeyState | null>> {
    // One key (a coordinator asking for a version): no grouping by vdisk.
    if (keys.length === 1) return this.backend.exists(this.vdisk(keys[0]), keys, source);
    const out: Array<KeyState | null> = keys.map(() => null);
    const byVdisk = new Map<number, number[]>();
    keys.forEach((k, i) => {
      const v = this.vdisk(k);
      const list = byVdisk.get(v);
      if (list) list.push(i);
      else byVdisk.set(v, [i]);
    });
    for (const [vdisk, idx] of byVdisk) {
      const states = await this.backend.exists(vdisk, idx.map((i) => keys[i]), source);
      states.forEach((s, j) => (out[idx[j]] = s));
    }
    return out;
  }

  async delete(key: Buffer, version: Version, options: DeleteOptions): Promise<void> {
    this.clock.observe(version);
    const vdisk = this.vdisk(key);
    if (!options.isAlien) return this.backend.delete(vdisk, key, version);
    const failures: Error[] = [];
    for (const owner of this.topology.targetNodes(vdisk)) {
      try {
        await this.backend.deleteAlien(owner, vdisk, key, version, options.forceAlienNodes.includes(owner));
      } catch (err) {
        failures.push(err as Error);
      }
    }
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1) throw errors.failed(`Multiple errors detected: ${failures.map((e) => e.message).join('; ')}`);
  }
}
