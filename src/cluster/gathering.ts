// Gathering: the answers of the replicas of a vdisk to one request, as they
// come. A read waits until enough replicas answered — a quorum, or every
// reachable one — and goes on without the slowest; the calls still running
// finish in the background, where read repair looks at their answers.
import { MaybePromise } from '../model/maybe-promise';

export interface ReplicaCall<T> {
  node: string;
  /** Replicas of the vdisk on that node: what its answer counts for. */
  weight: number;
  /** Its answer, or the promise of it. */
  done: MaybePromise<T>;
}

export type ReplicaOutcome<T> =
  | { node: string; weight: number; status: 'pending' }
  | { node: string; weight: number; status: 'answered'; value: T }
  | { node: string; weight: number; status: 'failed'; error: unknown };

export class Gathering<T> {
  readonly outcomes: Array<ReplicaOutcome<T>>;
  private answered = 0;
  private pending: number;
  private waiter: { enough: number; resolve: () => void } | null = null;
  private done: (() => void) | null = null;

  constructor(calls: Array<ReplicaCall<T>>) {
    this.outcomes = calls.map((c) => ({ node: c.node, weight: c.weight, status: 'pending' }));
    this.pending = calls.length;
    calls.forEach((c, i) => {
      if (!(c.done instanceof Promise)) this.settle(i, { node: c.node, weight: c.weight, status: 'answered', value: c.done });
      else
        c.done.then(
          (value) => this.settle(i, { node: c.node, weight: c.weight, status: 'answered', value }),
          (error: unknown) => this.settle(i, { node: c.node, weight: c.weight, status: 'failed', error }),
        );
    });
  }

  /** Replicas (by weight) that answered so far. */
  get answeredWeight(): number {
    return this.answered;
  }

  /** Whether every call has settled. */
  get complete(): boolean {
    return this.pending === 0;
  }

  /** Resolves once replicas of weight `enough` answered, or no call is pending. */
  until(enough: number): Promise<void> {
    if (this.answered >= enough || this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => (this.waiter = { enough, resolve }));
  }

  /** Resolves when every call has settled. */
  all(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => (this.done = resolve));
  }

  answers(): Array<{ node: string; value: T }> {
    return this.outcomes.flatMap((o) => (o.status === 'answered' ? [{ node: o.node, value: o.value }] : []));
  }

  failures(): unknown[] {
    return this.outcomes.flatMap((o) => (o.status === 'failed' ? [o.error] : []));
  }

  private settle(i: number, outcome: ReplicaOutcome<T>): void {
    this.outcomes[i] = outcome;
    this.pending--;
    if (outcome.status === 'answered') this.answered += outcome.weight;
    const w = this.waiter;
    if (w && (this.answered >= w.enough || this.pending === 0)) {
      this.waiter = null;
      w.resolve();
    }
    if (this.pending === 0 && this.done) {
      const done = this.done;
      this.done = null;
      done();
    }
  }
}
