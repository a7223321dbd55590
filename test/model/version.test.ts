// The order of versions in TypeScript, against the table the engine's C++
// test reads too (test/fixtures/version-order.txt), and the clock that stamps
// this node's writes.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { MAX_AHEAD_US, VersionClock } from '../../src/model/clock';
import { compareRecords, compareVersions, KeyState, MAX_NODE_ID, MAX_TICK, newerOf } from '../../src/model/version';

const FIXTURE = path.resolve(__dirname, '..', '..', '..', 'test', 'fixtures', 'version-order.txt');

interface Case {
  line: number;
  a: KeyState;
  b: KeyState;
  expected: number;
}

function readCases(): Case[] {
  const cases: Case[] = [];
  fs.readFileSync(FIXTURE, 'utf8')
    .split('\n')
    .forEach((text, i) => {
      const fields = text.replace(/#.*/, '').trim().split(/\s+/).filter(Boolean);
      if (fields.length === 0) return;
      if (fields.length !== 9) throw new Error(`version-order.txt:${i + 1}: 9 fields expected, got ${fields.length}`);
      const state = (f: string[]): KeyState => {
        if (f[3] !== 'value' && f[3] !== 'tombstone') throw new Error(`version-order.txt:${i + 1}: kind ${f[3]}`);
        return { kind: f[3] === 'value' ? 'found' : 'deleted', version: { timestamp: Number(f[0]), tick: Number(f[1]), node: Number(f[2]) } };
      };
      const expected = { '<': -1, '=': 0, '>': 1 }[fields[8]];
      if (expected === undefined) throw new Error(`version-order.txt:${i + 1}: expected ${fields[8]}`);
      cases.push({ line: i + 1, a: state(fields.slice(0, 4)), b: state(fields.slice(4, 8)), expected });
    });
  return cases;
}

t.test('compareRecords follows the shared table, both ways round', async (t) => {
  const cases = readCases();
  t.ok(cases.length >= 20, `${cases.length} cases`);
  for (const c of cases) {
    for (const n of [c.a.version.timestamp, c.a.version.tick, c.b.version.timestamp, c.b.version.tick]) {
      t.ok(Number.isSafeInteger(n), `line ${c.line}: ${n} is exact in a double`);
    }
    t.equal(compareRecords(c.a, c.b), c.expected, `line ${c.line}`);
    t.equal(compareRecords(c.b, c.a), -c.expected, `line ${c.line} reversed`);
  }
});

t.test('compareVersions orders timestamp, tick, node', async (t) => {
  const v = (timestamp: number, tick: number, node: number) => ({ timestamp, tick, node });
  t.equal(compareVersions(v(1, 9, 9), v(2, 0, 0)), -1);
  t.equal(compareVersions(v(2, 1, 0), v(2, 0, 9)), 1);
  t.equal(compareVersions(v(2, 1, 3), v(2, 1, 4)), -1);
  t.equal(compareVersions(v(2, 1, 3), v(2, 1, 3)), 0);
});

t.test('newerOf keeps the first of two equal records and skips nulls', async (t) => {
  const a: KeyState = { kind: 'found', version: { timestamp: 5, tick: 0, node: 0 } };
  const b: KeyState = { kind: 'found', version: { timestamp: 5, tick: 0, node: 0 } };
  const tomb: KeyState = { kind: 'deleted', version: { timestamp: 5, tick: 0, node: 0 } };
  t.equal(newerOf(a, b), a);
  t.equal(newerOf(null, b), b);
  t.equal(newerOf(a, null), a);
  t.equal(newerOf(a, tomb), tomb, 'a tombstone wins the tie');
  t.equal(newerOf(null, null), null);
});

t.test('the clock never goes back and moves past what it sees', async (t) => {
  let wall = 1_700_000_000_000_000;
  const futures: number[] = [];
  const clock = new VersionClock(3, () => wall, (_v, ahead) => futures.push(ahead));

  const a = clock.now();
  t.same(a, { timestamp: 1_700_000_000, tick: wall, node: 3 }, 'the wall clock in µs, its second, the node id');
  const b = clock.now();
  t.ok(compareVersions(b, a) > 0 && b.tick === a.tick + 1, 'a stalled wall clock: the next stamp is one tick later');

  wall -= 5_000_000; // the wall clock steps back 5 s
  const c = clock.now();
  t.ok(compareVersions(c, b) > 0, 'a wall clock stepping back does not take the versions back');

  // A peer whose clock is 2 s ahead stamped a write this node stored.
  const peer = { timestamp: 1_700_000_002, tick: 1_700_000_002_500_000, node: 1 };
  clock.observe(peer);
  const d = clock.now();
  t.ok(compareVersions(d, peer) > 0, 'a stamp after a seen version is later than it');

  // A bob write (no tick) in a later second.
  const bob = { timestamp: 1_700_000_010, tick: 0, node: 0 };
  clock.observe(bob);
  t.ok(compareVersions(clock.now(), bob) > 0, 'later than a tickless version of a later second too');

  const e = clock.at(1_600_000_000);
  t.equal(e.timestamp, 1_600_000_000, 'a client-chosen timestamp is kept');
  t.ok(e.tick > d.tick, 'and gets the next tick');

  // Versions too far ahead are not followed.
  const before = clock.now();
  clock.observe({ timestamp: Math.floor((wall + MAX_AHEAD_US) / 1e6) + 100, tick: 0, node: 0 });
  t.equal(futures.length, 1, 'a version beyond MAX_AHEAD_US is reported');
  t.equal(clock.now().tick, before.tick + 1, 'and not followed');
  clock.observe({ timestamp: 0, tick: MAX_TICK + 10, node: 0 });
  t.equal(futures.length, 2, 'a tick past 2^52 is reported as well');
});

t.test('node ids are 1..4095', async (t) => {
  t.throws(() => new VersionClock(0));
  t.throws(() => new VersionClock(MAX_NODE_ID + 1));
  t.doesNotThrow(() => new VersionClock(MAX_NODE_ID));
});
