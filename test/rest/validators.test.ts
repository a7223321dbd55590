// The validators' text: ETag digits built from tables match the numbers'
// own decimal form over the whole range a version takes; weak ETags where
// the tick is unknown; ETag lists and their comparisons.
import t from 'tap';
import { etagOf, httpDateOf, parseEtagList, strongMatch, weakMatch } from '../../src/rest/http/validators';
import { MAX_NODE_ID, MAX_TICK } from '../../src/model/version';

t.test('etagOf spells the version in decimal', async (t) => {
  const edges = [0, 1, 999, 1000, 1001, 999_999, 2 ** 31 - 1, 2 ** 31, 1_795_626_104_973_000, MAX_TICK];
  let seed = 7;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * MAX_TICK;
  const ticks = [...edges, ...Array.from({ length: 2000 }, () => Math.floor(random()))];
  for (const tick of ticks) {
    const v = { timestamp: Math.floor(tick / 1e6), tick, node: tick % (MAX_NODE_ID + 1) };
    const want = `"${v.timestamp}-${v.tick}-${v.node}"`;
    const got = etagOf(v);
    if (got !== (tick === 0 ? `W/${want}` : want)) t.fail(`${tick}: ${got}`);
  }
  t.equal(etagOf({ timestamp: 1_700_000_000, tick: 0, node: 0 }), 'W/"1700000000-0-0"', 'weak without a tick');
  t.equal(etagOf({ timestamp: Number.MAX_SAFE_INTEGER, tick: 5, node: 1 }), `"${Number.MAX_SAFE_INTEGER}-5-1"`);
});

t.test('Last-Modified text', async (t) => {
  t.equal(httpDateOf({ timestamp: 1_700_000_000, tick: 1, node: 1 }), 'Tue, 14 Nov 2023 22:13:20 GMT');
  t.equal(httpDateOf({ timestamp: 1_700_000_000, tick: 2, node: 1 }), 'Tue, 14 Nov 2023 22:13:20 GMT', 'the same second, from the cache');
  t.equal(httpDateOf({ timestamp: Number.MAX_SAFE_INTEGER, tick: 1, node: 1 }), undefined, 'beyond what a date holds: no header');
});

t.test('ETag lists and comparisons', async (t) => {
  t.same(parseEtagList('*'), '*');
  t.same(parseEtagList(' "a", W/"b" ,junk, "c'), ['"a"', 'W/"b"']);
  t.ok(strongMatch('"a"', '"a"'));
  t.notOk(strongMatch('W/"a"', 'W/"a"'), 'weak tags never match strongly');
  t.ok(weakMatch('W/"a"', '"a"'));
  t.notOk(weakMatch('"a"', '"b"'));
});
