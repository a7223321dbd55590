// The declarative reader: typed getters, problems at dotted paths, bob's "~"
// placeholder, unknown-key warnings.
import t from 'tap';
import YAML from 'yaml';
import { ConfigReader } from '../../src/config/reader';

function reader(yaml: string) {
  const r = new ConfigReader('f.yaml');
  return { r, root: r.root(YAML.parse(yaml)) };
}

t.test('typed getters read values and defaults', async (t) => {
  const { r, root } = reader(`
s: text
n: 42
big: 9007199254740991
b: true
d: 1h 30min
z: 8 GiB
num_as_string: 123
m:
  inner: x
l: [1, 2]
`);
  t.equal(root.string('s'), 'text');
  t.equal(root.integer('n'), 42);
  t.equal(root.integer('big'), Number.MAX_SAFE_INTEGER);
  t.equal(root.boolean('b'), true);
  t.equal(root.duration('d'), 5_400_000);
  t.equal(root.size('z'), 8 * 1024 ** 3);
  t.equal(root.string('num_as_string'), '123', 'scalars read as text, as serde_yaml does');
  t.equal(root.section('m')?.string('inner'), 'x');
  t.same(root.list('l').map((v) => v.integer()), [1, 2]);
  t.equal(root.string('absent'), undefined);
  t.equal(root.string('absent2', { default: 'dflt' }), 'dflt');
  t.equal(root.integer('absent3', { default: 7 }), 7);
  t.same(root.list('absent4'), []);
  r.finish();
  t.same(r.problems, []);
  t.same(r.warnings, []);
});

t.test('problems carry the file and the dotted key path', async (t) => {
  const { r, root } = reader(`
nodes:
  - name: a
  - name: b
    disks:
      - name: d
      - name: e
        path: 5
        size: lots
`);
  const nodes = root.list('nodes');
  for (const n of nodes) {
    const m = n.mapping();
    m?.string('name');
    for (const d of m?.list('disks') ?? []) {
      const dm = d.mapping();
      dm?.string('name');
      dm?.string('path', { required: true });
      dm?.size('size');
    }
  }
  t.same(
    r.problems.map((p) => `${p.file} ${p.key} ${p.reason}`),
    [
      'f.yaml nodes[1].disks[0].path is required',
      'f.yaml nodes[1].disks[1].size invalid character "l" at 0 in size "lots"',
    ],
  );
});

t.test('type mismatches are problems, and a required value gets a stand-in', async (t) => {
  const { r, root } = reader(`
s: [1]
n: "12"
f: 1.5
neg: -1
b: "yes"
d: 100
m: scalar
l: {a: 1}
`);
  t.equal(root.string('s', { required: true }), '');
  t.equal(root.integer('n', { required: true }), 0);
  t.equal(root.integer('f'), undefined);
  t.equal(root.integer('neg', { default: 3 }), 3);
  t.equal(root.boolean('b', { default: true }), true);
  t.equal(root.duration('d'), undefined);
  t.equal(root.section('m'), undefined);
  t.same(root.list('l'), []);
  t.same(
    r.problems.map((p) => `${p.key}: ${p.reason}`),
    [
      's: must be a string',
      'n: must be a whole number',
      'f: must be a whole number',
      'neg: must be at least 0',
      'b: must be true or false',
      'd: invalid duration "100": time unit needed, for example 100sec or 100ms',
      'm: must be a mapping of keys to values',
      'l: must be a list',
    ],
  );
});

t.test('ranges and checks', async (t) => {
  const { r, root } = reader('port: 70000\nq: 0\nname: bad\n');
  t.equal(root.integer('port', { default: 8000, max: 65535 }), 8000);
  t.equal(root.integer('q', { required: true, min: 1 }), 0);
  t.equal(root.string('name', { check: (v) => (v === 'good' ? undefined : `"${v}" is not good`) }), undefined);
  t.same(
    r.problems.map((p) => `${p.key}: ${p.reason}`),
    ['port: must be at most 65535', 'q: must be at least 1', 'name: "bad" is not good'],
  );
});

t.test('bob\'s "~" placeholder: an empty key is absent if optional, an error otherwise', async (t) => {
  const { r, root } = reader(`
optional:
optional_tilde: ~
required:
required_tilde: "~"
defaulted:
empty_string: ""
section:
list:
`);
  t.equal(root.string('optional'), undefined);
  t.equal(root.string('optional_tilde'), undefined);
  t.equal(root.has('optional'), false);
  t.equal(root.string('required', { required: true }), '');
  t.equal(root.string('required_tilde', { required: true }), '');
  t.equal(root.duration('defaulted', { default: 5 }), 5);
  t.equal(root.string('empty_string'), undefined);
  t.equal(root.section('section'), undefined);
  t.same(root.list('list'), []);
  t.same(
    r.problems.map((p) => `${p.key}: ${p.reason}`),
    [
      'required: is present but empty',
      'required_tilde: is present but empty',
      'defaulted: is present but empty',
      'empty_string: must not be empty',
    ],
  );
});

t.test('required keys and sections', async (t) => {
  const { r, root } = reader('a: 1\n');
  t.equal(root.section('pearl', { required: true }), undefined);
  t.same(root.list('disks', { required: true }), []);
  t.equal(root.boolean('flag', { required: true }), false);
  t.same(
    r.problems.map((p) => `${p.key}: ${p.reason}`),
    ['pearl: is required', 'disks: is required', 'flag: is required'],
  );
});

t.test('keys nobody asked for are reported as unknown, with their full path', async (t) => {
  const { r, root } = reader(`
known: 1
typo_key: 2
sec:
  inner: 1
  prometheus: 0.0.0.0:9000
items:
  - name: a
    colour: red
unread_section:
  x: 1
`);
  root.integer('known');
  root.section('sec')?.integer('inner');
  for (const item of root.list('items')) item.mapping()?.string('name');
  r.finish();
  t.same(r.problems, []);
  t.same(
    r.warnings.map((w) => `${w.file} ${w.key}: ${w.reason}`),
    [
      'f.yaml typo_key: unknown key, ignored',
      'f.yaml unread_section: unknown key, ignored',
      'f.yaml sec.prometheus: unknown key, ignored',
      'f.yaml items[0].colour: unknown key, ignored',
    ],
  );
});

t.test('a key read with a wrong type is not also unknown', async (t) => {
  const { r, root } = reader('n: text\n');
  root.integer('n');
  r.finish();
  t.equal(r.problems.length, 1);
  t.same(r.warnings, []);
});

t.test('the document must be a mapping; an empty document is an empty mapping', async (t) => {
  const list = reader('- a\n- b\n');
  t.same(list.r.problems, [{ file: 'f.yaml', key: '', reason: 'the file must contain a YAML mapping of keys to values' }]);
  const scalar = reader('just text\n');
  t.equal(scalar.r.problems.length, 1);
  const empty = reader('');
  t.same(empty.r.problems, []);
  t.equal(empty.root.string('x'), undefined);
});

t.test('failed() looks at a key and everything below it', async (t) => {
  const r = new ConfigReader('f.yaml');
  r.problem('nodes[1].disks[0].path', 'x');
  t.ok(r.failed('nodes'));
  t.ok(r.failed('nodes[1]'));
  t.ok(r.failed('nodes[1].disks'));
  t.ok(r.failed('nodes[1].disks[0].path'));
  t.notOk(r.failed('nodes[0]'));
  t.notOk(r.failed('node'));
  t.notOk(r.failed('vdisks'));
});
