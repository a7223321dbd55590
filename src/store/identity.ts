// Disk identity: who a disk belongs to, so that a node never fills the empty
// mount point of an unmounted disk, nor takes another node's disk for its
// own. Each disk carries an identity file at its root (docs/FORMAT.md §0.1),
// written when the node initialises it; the node records the identities of
// its disks in its state file (node.yaml state_dir), and so knows a disk it
// initialised that comes back without one.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { readJson, writeAtomically } from './json-file';

/** The identity file, at the disk's path (the mount point). */
export const IDENTITY_FILE = 'oyster-disk.json';
/** The node's record of its disks, in state_dir. */
export const STATE_FILE = 'oyster-node.json';
const FORMAT = 1;

export interface DiskIdentity {
  format: number;
  /** The node and the disk name (cluster.yaml) the disk was initialised for. */
  node: string;
  disk: string;
  /** Random, new at every initialisation: a disk replaced by another one initialised for the same name differs. */
  id: string;
  created: string;
}

export const REFUSAL_REASONS = ['no_identity', 'foreign_identity', 'unreadable_identity'] as const;

/** Why a disk is kept out of service until an operator acts (or mounts it). */
export interface Refusal {
  /** no_identity: initialised by this node but found without its identity (not mounted, replaced); foreign_identity: another node's or disk's; unreadable_identity. */
  reason: (typeof REFUSAL_REASONS)[number];
  message: string;
}

/**
 * Whether the disk at `diskPath` may serve as `disk` of `node`: 'ours' (its
 * identity says so), 'adopted' (no identity, unknown to the record, but it
 * holds a root directory: bob's disk or one from before identities — its
 * identity is written now), 'new' (never initialised: the caller initialises
 * it or not), or the refusal. The alien directory on a disk never
 * initialises or adopts it: it follows the disk.
 */
export async function checkIdentity(o: { diskPath: string; node: string; disk: string; state: NodeState; alien: boolean; hasRoot: boolean }): Promise<'ours' | 'adopted' | 'new' | Refusal> {
  const { diskPath: where, node, disk, state } = o;
  let found: DiskIdentity | null;
  try {
    found = await readIdentity(where);
  } catch (err) {
    return { reason: 'unreadable_identity', message: `disk ${disk} at ${where}: ${(err as Error).message}` };
  }
  const known = state.idOf(disk);
  if (found) {
    if (found.node !== node || found.disk !== disk) {
      return { reason: 'foreign_identity', message: `disk ${disk} at ${where} holds disk ${found.disk} of node ${found.node} (${IDENTITY_FILE}); nothing is written there` };
    }
    if (known !== undefined && known !== found.id) {
      return {
        reason: 'foreign_identity',
        message: `disk ${disk} at ${where} has id ${found.id}, but this node initialised disk ${disk} with id ${known}: another disk of that name; nothing is written there`,
      };
    }
    if (!o.alien) await state.record(disk, found.id);
    return 'ours';
  }
  if (known !== undefined || o.alien) {
    return {
      reason: 'no_identity',
      message:
        `disk ${disk} at ${where} has no ${IDENTITY_FILE}, but this node initialised it (id ${known ?? 'unknown'}): not mounted, or replaced? ` +
        `Nothing is written there. Mount it, or accept a replacement (empty, or restored from a copy) with POST /disks/${disk}/accept`,
    };
  }
  if (!o.hasRoot) return 'new';
  await initialiseDisk(where, node, disk, state);
  return 'adopted';
}

/** Gives the disk a new identity and records it. */
export async function initialiseDisk(diskPath: string, node: string, disk: string, state: NodeState): Promise<void> {
  const id = newIdentity(node, disk);
  await writeIdentity(diskPath, id);
  await state.record(disk, id.id);
}

export function newIdentity(node: string, disk: string): DiskIdentity {
  return { format: FORMAT, node, disk, id: crypto.randomUUID(), created: new Date().toISOString() };
}

/**
 * The identity file of the disk at `diskPath`: null when there is none;
 * rejects when it exists but cannot be read or is not an identity (a
 * damaged identity is not taken for a missing one).
 */
export async function readIdentity(diskPath: string): Promise<DiskIdentity | null> {
  const file = path.join(diskPath, IDENTITY_FILE);
  const v = (await readJson(file)) as Partial<DiskIdentity> | null | undefined;
  if (v === undefined) return null;
  if (!v || typeof v.node !== 'string' || typeof v.disk !== 'string' || typeof v.id !== 'string' || typeof v.format !== 'number') {
    throw new Error(`${file} is not a disk identity`);
  }
  if (v.format > FORMAT) throw new Error(`${file} has format ${v.format}; this Oyster knows format ${FORMAT}`);
  return v as DiskIdentity;
}

/** Writes the identity file of the disk at `diskPath` atomically and durably. */
export function writeIdentity(diskPath: string, identity: DiskIdentity): Promise<void> {
  return writeAtomically(path.join(diskPath, IDENTITY_FILE), `${JSON.stringify(identity, null, 2)}\n`);
}

/**
 * The node's record of the identities of its disks (disk name -> id). A
 * disk the record names is one this node initialised: found without its
 * identity it is refused, not initialised again.
 */
export class NodeState {
  private readonly file: string | null;
  private readonly disks = new Map<string, string>();

  /** The state file in `stateDir`; with no state_dir, a record kept in memory only. */
  constructor(
    stateDir: string | undefined,
    private readonly node: string,
  ) {
    this.file = stateDir === undefined ? null : path.join(stateDir, STATE_FILE);
  }

  /** Reads the state file (none yet: an empty record). Rejects on a damaged file or one of another node. */
  async load(): Promise<void> {
    if (this.file === null) return;
    await fs.promises.mkdir(path.dirname(this.file), { recursive: true });
    const v = (await readJson(this.file)) as { node?: unknown; disks?: Record<string, unknown> } | null | undefined;
    if (v === undefined) return;
    if (!v || typeof v.disks !== 'object' || v.disks === null) throw new Error(`${this.file} is not an Oyster node state file`);
    if (v.node !== this.node) throw new Error(`${this.file} belongs to node ${JSON.stringify(v.node)}, not ${JSON.stringify(this.node)}`);
    for (const [name, id] of Object.entries(v.disks)) if (typeof id === 'string') this.disks.set(name, id);
  }

  /** The id recorded for disk `name`, if the node initialised it. */
  idOf(name: string): string | undefined {
    return this.disks.get(name);
  }

  /** Records disk `name`'s identity (durably, before the disk is used). */
  async record(name: string, id: string): Promise<void> {
    if (this.disks.get(name) === id) return;
    this.disks.set(name, id);
    if (this.file === null) return;
    const disks = Object.fromEntries([...this.disks].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    await writeAtomically(this.file, `${JSON.stringify({ format: FORMAT, node: this.node, disks }, null, 2)}\n`);
  }
}
