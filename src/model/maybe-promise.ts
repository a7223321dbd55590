// What a read returns when it may be able to answer at once: the answer
// itself when memory held everything it needed, else a promise of it. Each
// layer of a GET passes an answer in hand straight on, and waits only for a
// promise: an await, or a then, would cost every request turns of the
// microtask queue for reads that never waited. A function returning one
// never throws; its failures are rejected promises.
export type MaybePromise<T> = T | Promise<T>;

/** `f` of the answer: at once when the answer is in hand. */
export function mapAnswer<T, U>(v: MaybePromise<T>, f: (value: T) => U): MaybePromise<U> {
  return v instanceof Promise ? v.then(f) : f(v);
}
