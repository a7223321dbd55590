// teeValue: one value arriving from a client, handed as it comes to each
// node that stores it — this node's replicas and every peer replica — as
// one PushedValue per node. The nodes share the source's lots: a lot is
// let go of (its memory takes the next bytes) once every node still taking
// the value wrote it, so the value's memory is the source's windows
// whatever the number of nodes, and the slowest node paces the client. A
// node that cancels (its write failed) is left out from then on; once none
// is left, the source is cancelled.
import { PushedValue, ValueRoom } from '../model/pushed-value';
import { IncomingValue } from '../model/value';

export interface Tee {
  /** One per node, in order. */
  values: PushedValue[];
  /** The source's own failure (the client went away, no room for its body), once it failed. */
  failure(): Error | null;
}

/** `count` values that hold the source's bytes as they come; `budget`: what each holds its value within if it is read whole. */
export function teeValue(source: IncomingValue, count: number, budget: ValueRoom): Tee {
  let failure: Error | null = null;
  // Lots handed to every node, and how many of them each node wrote.
  let lots = 0;
  let released = 0;
  const written = new Array<number>(count).fill(0);
  let stop: (() => void) | null = null;
  const stopped = new Promise<null>((resolve) => (stop = () => resolve(null)));
  const release = () => {
    const live = values.flatMap((v, i) => (v.cancelled ? [] : [written[i]]));
    if (live.length === 0) {
      source.cancel();
      stop?.();
      return;
    }
    const upTo = Math.min(...live);
    for (; released < upTo; released++) source.written();
  };
  const values = Array.from({ length: count }, () => new PushedValue(source.size, budget, () => release()));
  void (async () => {
    for (;;) {
      let pieces: Buffer[] | null;
      try {
        pieces = await Promise.race([source.next(), stopped]);
      } catch (err) {
        failure = err as Error;
        for (const v of values) v.fail(failure);
        return;
      }
      if (pieces === null) return;
      const lot = lots++;
      values.forEach((v, i) => {
        if (v.cancelled) return;
        v.push(pieces!, () => {
          written[i] = lot + 1;
          release();
        });
      });
    }
  })();
  return { values, failure: () => failure };
}
