// The owner hash of partition and blob names must be bob's, bit for bit.
import t from 'tap';
import { ownerHash } from '../../src/keys/owner-hash';

t.test("the reference's worked values", async (t) => {
  const cases: Array<[string, string]> = [
    ['local_node', 'edqwvkNayI'],
    ['alocal_node', 'o5QLiFejnb'],
    ['node1', 'mVmn4sgzLm'],
    ['anode1', 'Ja8JMsWbB7'],
    ['node2', '3PV8QY1ZRd'],
    ['anode2', '7FrobpyRuq'],
  ];
  for (const [identifier, hash] of cases) t.equal(ownerHash(identifier), hash, identifier);
});

t.test('truncation to hash_chars_count', async (t) => {
  const full = ownerHash('node1', 1000);
  t.equal(full.length, 43, '32 bytes: ten full groups of four and a final group of three');
  t.equal(ownerHash('node1', 10), full.slice(0, 10));
  t.equal(ownerHash('node1', 1), 'm');
  t.equal(ownerHash('node1', 0), '');
  t.equal(ownerHash('node1', 43), full);
  for (let n = 0; n <= 43; n++) t.equal(ownerHash('x', n), ownerHash('x', 43).slice(0, n));
});

t.test('only the 64 symbols of the alphabet appear', async (t) => {
  for (let i = 0; i < 200; i++) t.match(ownerHash(`node-${i}`, 43), /^[-+0-9A-Za-z]{43}$/);
});

t.test('identifiers are hashed as UTF-8', async (t) => {
  t.not(ownerHash('nöde'), ownerHash('node'));
  t.equal(ownerHash('nöde').length, 10);
});
