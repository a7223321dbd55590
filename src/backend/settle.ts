// Promise.allSettled for the hot paths, where there is usually one promise
// (one replica): awaited directly, without allSettled's per-element machinery.
export async function settleAll<T>(promises: Array<Promise<T>>): Promise<Array<PromiseSettledResult<T>>> {
  if (promises.length !== 1) return Promise.allSettled(promises);
  try {
    return [{ status: 'fulfilled', value: await promises[0] }];
  } catch (reason) {
    return [{ status: 'rejected', reason }];
  }
}
