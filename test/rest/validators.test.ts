// The validators' text: ETag digits built from tables match the numbers'
// own decimal form over the whole range a version takes; weak ETags where
// the tick is unknown; ETag lists and their comparisons.
import t from 'tap';
import { etagOf, httpDateOf, parseEtagList, parseHttpDate, strongMatch, weakMatch } from '../../src/rest/http/validators';
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

t.test('HTTP-dates: the three forms, nothing else', async (t) => {
  const t0 = Date.UTC(1994, 10, 6, 8, 49, 37);
  t.equal(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT'), t0, 'IMF-fixdate');
  t.equal(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT'), t0, 'RFC 850');
  t.equal(parseHttpDate('Sun Nov  6 08:49:37 1994'), t0, 'asctime');
  t.equal(parseHttpDate('Tue, 14 Nov 2023 22:13:20 GMT'), 1_700_000_000_000);
  t.equal(parseHttpDate('Sat, 01 Jan 0050 00:00:00 GMT'), Date.parse('0050-01-01T00:00:00Z'), 'a year below 100 is that year');
  t.equal(parseHttpDate('Wed, 31 Dec 2008 23:59:60 GMT'), Date.UTC(2008, 11, 31, 23, 59, 59), 'a leap second');
  // Two digits: more than 50 years ahead is the past century.
  const yy = (new Date().getUTCFullYear() + 60) % 100;
  t.equal(new Date(parseHttpDate(`Monday, 01-Jan-${String(yy).padStart(2, '0')} 00:00:00 GMT`)!).getUTCFullYear(), new Date().getUTCFullYear() + 60 - 100);
  for (const bad of [
    '',
    '1',
    '2020',
    '2099-01-01',
    '4102444800',
    'garbage 2099',
    'Sun, 06 Nov 1994 08:49:37 PST',
    'Sun, 06 Nov 1994 08:49:37 GMT x',
    'Sun, 6 Nov 1994 08:49:37 GMT',
    'Sun, 06 Foo 1994 08:49:37 GMT',
    'Mon, 31 Apr 2023 00:00:00 GMT',
    'Mon, 30 Apr 2023 24:00:00 GMT',
    'Mon, 30 Apr 2023 23:60:00 GMT',
    'Mon, 30 Apr 2023 23:59:61 GMT',
    'Sun Nov 6 08:49:37 1994',
  ]) {
    t.equal(parseHttpDate(bad), undefined, JSON.stringify(bad));
  }
});
