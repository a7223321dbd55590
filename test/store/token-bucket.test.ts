// TokenBucket: takes within the burst go at once, the rate holds for takes
// larger than the burst (paid in debt), and bursts are capped.
import t from 'tap';
import { TokenBucket } from '../../src/store/token-bucket';

const seconds = async (fn: () => Promise<void>) => {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e9;
};

t.test('a full bucket lets a burst through at once', async (t) => {
  const b = new TokenBucket(1000, 500);
  t.ok((await seconds(() => b.take(500))) < 0.05, 'the burst goes at once');
  const s = await seconds(() => b.take(250));
  t.ok(s >= 0.2 && s < 0.6, `then 250 units wait for about 0.25 s (${s.toFixed(3)} s)`);
});

t.test('takes larger than the burst hold the rate', async (t) => {
  const b = new TokenBucket(10_000, 1000);
  const s = await seconds(async () => {
    for (let i = 0; i < 5; i++) await b.take(2000);
  });
  // 10,000 units at 10,000 a second, less the first burst of 1,000: 0.9 s.
  t.ok(s >= 0.8 && s < 1.6, `10,000 units in ${s.toFixed(3)} s`);
});

t.test('an idle bucket fills only up to the burst', async (t) => {
  const b = new TokenBucket(10_000, 1000);
  await b.take(1000);
  await new Promise((r) => setTimeout(r, 300));
  const s = await seconds(() => b.take(3000));
  t.ok(s < 0.05, 'a large take starts on a full bucket');
  const next = await seconds(() => b.take(500));
  t.ok(next >= 0.2, `and leaves a debt the next take waits for (${next.toFixed(3)} s)`);
});
