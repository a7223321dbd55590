// Places: where the records of a vdisk are held on this node — a local
// replica, or the alien copies held for an owner — and the rule that picks
// the newest answer among them without ever taking "absent" for an answer
// when a place that could hold a newer record failed.
import { errors, isOysterError } from '../model/errors';
import { MaybePromise } from '../model/maybe-promise';
import { compareRecords, compareVersions, KeyState, newerOf, Version } from '../model/version';
import { Disk } from './disk';
import { Vdisk } from './vdisk';

/** A place holding records of a vdisk: a local replica, or an alien directory. */
export interface Place {
  readonly replica: boolean;
  /** An upper bound of the versions the place holds, when known (Vdisk.newestPossible). */
  bound(): Version | null;
  /** Runs op on the place's Vdisk under its disk's watch (Disk.use): at once when op answers at once. */
  run<T>(op: (v: Vdisk) => Promise<T>): Promise<T>;
  run<T>(op: (v: Vdisk) => MaybePromise<T>): MaybePromise<T>;
}

/** The alien copies of a vdisk held for one owner; with no Vdisk, an alien directory that cannot be read. */
export class AlienPlace implements Place {
  readonly replica = false;

  constructor(
    private readonly alien: Disk,
    private readonly vdisk: Vdisk | null,
    /** What the place held when the alien directory went out of service. */
    private readonly held: Version | null,
  ) {}

  bound(): Version | null {
    return this.held;
  }

  run<T>(op: (v: Vdisk) => Promise<T>): Promise<T>;
  run<T>(op: (v: Vdisk) => MaybePromise<T>): MaybePromise<T>;
  run<T>(op: (v: Vdisk) => MaybePromise<T>): MaybePromise<T> {
    const v = this.vdisk;
    return v === null ? Promise.reject(errors.diskNotReady(this.alien.name)) : this.alien.use(() => op(v));
  }
}

/**
 * The newest record among the places' answers (`pick` selects one key's
 * answer), or the failure of a place that could hold a newer one.
 *
 * A place that failed is passed over only when it cannot hold anything newer
 * than the answer: its bound is older than the answer (the disk went out of
 * service before that write), or it is a local replica while another local
 * replica and every alien place answered — every write acknowledged here is
 * on each local replica that was in service when it came, or in alien/<self>.
 * A record that failed its checksum is passed over only when the answer is
 * newer than it.
 */
export function newestAnswer<T, R extends KeyState>(settled: Array<PromiseSettledResult<T>>, places: readonly Place[], pick: (answer: T) => R | null): R | null {
  let best: R | null = null;
  let replicaAnswered = false;
  let alienFailed = false;
  for (const [i, s] of settled.entries()) {
    if (s.status === 'fulfilled') {
      best = newerOf(best, pick(s.value));
      if (places[i].replica) replicaAnswered = true;
    } else if (!places[i].replica) {
      alienFailed = true;
    }
  }
  for (const [i, s] of settled.entries()) {
    if (s.status === 'fulfilled') continue;
    const damaged = isOysterError(s.reason, 'Corruption') ? s.reason.version : undefined;
    if (damaged) {
      if (best !== null && compareRecords(best, { kind: 'deleted', version: damaged }) > 0) continue;
      throw s.reason;
    }
    const bound = places[i].bound();
    if (best !== null && bound !== null && compareVersions(best.version, bound) > 0) continue;
    if (places[i].replica && replicaAnswered && !alienFailed) continue;
    throw s.reason;
  }
  return best;
}

/** One local replica of a vdisk: its disk and, while the disk serves, its Vdisk. */
export class LocalReplica implements Place {
  readonly replica = true;

  constructor(
    readonly disk: Disk,
    readonly id: number,
  ) {}

  /** The replica's Vdisk; throws DCIsNotAvailable while its disk is out of service. */
  vdisk(): Vdisk {
    const v = this.disk.vdisks.replica(this.id);
    if (!v) throw errors.diskNotReady(this.disk.name);
    return v;
  }

  /** Runs an operation on the replica's Vdisk under its disk's watch (Disk.use): at once when op answers at once. */
  run<T>(op: (v: Vdisk) => Promise<T>): Promise<T>;
  run<T>(op: (v: Vdisk) => MaybePromise<T>): MaybePromise<T>;
  run<T>(op: (v: Vdisk) => MaybePromise<T>): MaybePromise<T> {
    return this.disk.use(() => op(this.vdisk()));
  }

  /** run() for an operation that adds data: refused with NoSpace while the disk is below min_free_space (Disk.write). */
  write<T>(op: (v: Vdisk) => Promise<T>): Promise<T> {
    return this.disk.write(() => op(this.vdisk()));
  }

  bound(): Version | null {
    return this.disk.newestPossible(this.id);
  }
}

export const fulfilled = <T>(value: T): PromiseSettledResult<T> => ({ status: 'fulfilled', value });
export const rejected = (reason: unknown): PromiseSettledResult<never> => ({ status: 'rejected', reason });
