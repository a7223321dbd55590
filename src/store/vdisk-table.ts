// VdiskTable: the vdisks one disk serves, found the ways the data path asks
// for them — a replica by vdisk id, the alien copies of a vdisk for every
// owner — kept in step as vdisks are opened and closed with the disk.
import { Vdisk } from './vdisk';

export interface AlienVdisk {
  owner: string;
  vdisk: Vdisk;
}

const NONE: readonly AlienVdisk[] = [];

export class VdiskTable {
  // Keyed "<vdisk>" (a replica) or "<owner>/<vdisk>" (alien copies).
  private readonly byKey = new Map<string, Vdisk>();
  // The replicas by id: looked up on every request.
  private readonly replicas = new Map<number, Vdisk>();
  // aliensOf's index, rebuilt after a change.
  private aliensById: Map<number, AlienVdisk[]> | null = null;

  /** The replica of vdisk `id` on this disk, while the disk serves. */
  replica(id: number): Vdisk | undefined {
    return this.replicas.get(id);
  }

  /** The alien copies of vdisk `id` held for `owner`. */
  alien(owner: string, id: number): Vdisk | undefined {
    return this.byKey.get(`${owner}/${id}`);
  }

  /** Every alien vdisk with its owner. */
  aliens(): AlienVdisk[] {
    const out: AlienVdisk[] = [];
    for (const [key, vdisk] of this.byKey) if (key.includes('/')) out.push({ owner: key.slice(0, key.lastIndexOf('/')), vdisk });
    return out;
  }

  /** The alien vdisks of vdisk `id`, of every owner. */
  aliensOf(id: number): readonly AlienVdisk[] {
    if (this.aliensById === null) {
      this.aliensById = new Map();
      for (const a of this.aliens()) {
        const list = this.aliensById.get(a.vdisk.id);
        if (list) list.push(a);
        else this.aliensById.set(a.vdisk.id, [a]);
      }
    }
    return this.aliensById.get(id) ?? NONE;
  }

  /** Whether alien copies of vdisk `id` (of any owner) are held in open partitions. */
  holdsAliensOf(id: number): boolean {
    for (const a of this.aliensOf(id)) if (a.vdisk.hasPartitions) return true;
    return false;
  }

  all(): Vdisk[] {
    return [...this.byKey.values()];
  }

  get size(): number {
    return this.byKey.size;
  }

  /** Adds a replica (owner undefined) or the alien copies held for `owner`. */
  add(v: Vdisk, owner?: string): void {
    this.byKey.set(owner === undefined ? `${v.id}` : `${owner}/${v.id}`, v);
    if (owner === undefined) this.replicas.set(v.id, v);
    this.aliensById = null;
  }

  /** Empties the table; returns what it held. */
  clear(): Vdisk[] {
    const all = this.all();
    this.byKey.clear();
    this.replicas.clear();
    this.aliensById = null;
    return all;
  }
}
