// cluster.yaml: the nodes with their disks, the vdisks with
// their replicas, optional racks, and Oyster's optional key_size.
// Validation follows bob's `impl Validatable for Cluster`, reporting every
// violation rather than the first.
import { MAX_NODE_ID } from '../model/version';
import { parseHostPort } from './address';
import { ConfigReader, MapReader, Value, parsedBy } from './reader';

export type KeySize = 8 | 16 | 32;
export const KEY_SIZES: readonly KeySize[] = [8, 16, 32];
export const DEFAULT_KEY_SIZE: KeySize = 16;

export interface ClusterDisk {
  name: string;
  path: string;
}

export interface ClusterNode {
  name: string;
  /** `host:port` as written; the gRPC address of the node. */
  address: string;
  disks: ClusterDisk[];
}

export interface ClusterReplica {
  node: string;
  disk: string;
}

export interface ClusterVDisk {
  id: number;
  replicas: ClusterReplica[];
}

export interface ClusterRack {
  name: string;
  nodes: string[];
}

export interface ClusterConfig {
  nodes: ClusterNode[];
  /** In file order; ids are exactly 0..vdisks.length-1. */
  vdisks: ClusterVDisk[];
  racks: ClusterRack[];
  distributionFunc: 'Mod';
  keySize: KeySize;
}

const U32_MAX = 2 ** 32 - 1;

// A parsed list item with the path of its entry, for problems found later.
interface Entry<T> {
  path: string;
  item: T;
}

export function readClusterConfig(reader: ConfigReader, document: unknown): ClusterConfig {
  const root = reader.root(document);
  const nodes = entries(root.list('nodes'), readNode);
  const vdisks = entries(root.list('vdisks'), readVDisk);
  const racks = entries(root.list('racks'), readRack);
  root.string('distribution_func', {
    default: 'Mod',
    check: (v) => (v === 'Mod' ? undefined : `unknown distribution function "${v}", only Mod is supported`),
  });
  const keySize = root.integer('key_size', {
    default: DEFAULT_KEY_SIZE,
    check: (v) => (KEY_SIZES.includes(v as KeySize) ? undefined : 'must be 8, 16 or 32'),
  }) as KeySize;

  if (nodes.length === 0 && !reader.failed('nodes')) reader.problem('nodes', 'at least one node is required');
  if (vdisks.length === 0 && !reader.failed('vdisks')) reader.problem('vdisks', 'at least one vdisk is required');
  checkNodes(reader, nodes);
  checkVDiskIds(reader, vdisks);
  checkRacks(reader, racks, nodes);
  checkReplicas(reader, vdisks, nodes);

  return {
    nodes: nodes.map((e) => e.item),
    vdisks: vdisks.map((e) => e.item),
    racks: racks.map((e) => e.item),
    distributionFunc: 'Mod',
    keySize,
  };
}

function entries<T>(values: Value[], read: (m: MapReader) => T): Entry<T>[] {
  const result: Entry<T>[] = [];
  for (const v of values) {
    const m = v.mapping();
    if (m) result.push({ path: v.path, item: read(m) });
  }
  return result;
}

function readNode(m: MapReader): ClusterNode {
  return {
    name: m.string('name', { required: true }),
    address: m.string('address', { required: true, check: parsedBy(parseHostPort) }),
    disks: entries(m.list('disks', { required: true }), (d) => ({
      name: d.string('name', { required: true }),
      path: d.string('path', { required: true }),
    })).map((e) => e.item),
  };
}

function readVDisk(m: MapReader): ClusterVDisk {
  const id = m.integer('id', { required: true, max: U32_MAX });
  const replicas = entries(m.list('replicas'), (r) => ({
    node: r.string('node', { required: true }),
    disk: r.string('disk', { required: true }),
  })).map((e) => e.item);
  if (replicas.length === 0 && !m.reader.failed(m.keyPath('replicas'))) {
    m.reader.problem(m.keyPath('replicas'), 'a vdisk must have at least one replica');
  }
  return { id, replicas };
}

function readRack(m: MapReader): ClusterRack {
  return {
    name: m.string('name', { required: true }),
    nodes: m.list('nodes', { required: true }).map((v) => v.string() ?? ''),
  };
}

// A name that failed to read is '' (never a valid name): such entries are
// left out of the checks, and references are checked only against lists whose
// names all read (ConfigReader.allNamed).

function checkNodes(reader: ConfigReader, nodes: Entry<ClusterNode>[]): void {
  // A node's position in the list is its id in the versions it stamps (12 bits).
  if (nodes.length > MAX_NODE_ID) reader.problem('nodes', `${nodes.length} nodes: a cluster has at most ${MAX_NODE_ID}`);
  const names = new Map<string, string>();
  const addresses = new Map<string, string>();
  for (const { path, item } of nodes) {
    if (item.name !== '') {
      const first = names.get(item.name);
      if (first) reader.problem(`${path}.name`, `duplicate node name "${item.name}" (also ${first})`);
      else names.set(item.name, path);
    }
    if (item.address !== '') {
      const first = addresses.get(item.address);
      if (first) reader.problem(`${path}.address`, `duplicate node address "${item.address}" (also ${first})`);
      else addresses.set(item.address, path);
    }
    const disks = new Set<string>();
    item.disks.forEach((d, i) => {
      if (d.name === '') return;
      if (disks.has(d.name)) {
        reader.problem(`${path}.disks[${i}].name`, `duplicate disk name "${d.name}" in node "${item.name}"`);
      }
      disks.add(d.name);
    });
  }
}

// bob: after sorting, the ids must be exactly 0..N-1.
function checkVDiskIds(reader: ConfigReader, vdisks: Entry<ClusterVDisk>[]): void {
  const firstPath = new Map<number, string>();
  for (const { path, item } of vdisks) {
    if (reader.failed(`${path}.id`)) continue;
    const first = firstPath.get(item.id);
    if (first) reader.problem(`${path}.id`, `duplicate vdisk id ${item.id} (also ${first})`);
    else firstPath.set(item.id, path);
  }
  const ids = [...firstPath.keys()].sort((a, b) => a - b);
  let expected = 0;
  for (const id of ids) {
    if (id > expected) {
      const missing = id - expected === 1 ? `${expected}` : `${expected}..${id - 1}`;
      reader.problem(
        `${firstPath.get(id)}.id`,
        `gap in vdisk ids before ${id} (missing ${missing}); ids must be exactly 0..N-1`,
      );
    }
    expected = id + 1;
  }
}

function checkRacks(reader: ConfigReader, racks: Entry<ClusterRack>[], nodes: Entry<ClusterNode>[]): void {
  const nodeNames = new Set(nodes.map((e) => e.item.name));
  const allNodesNamed = reader.allNamed('nodes', [...nodeNames]);
  const rackNames = new Map<string, string>();
  const rackOf = new Map<string, string>();
  for (const { path, item } of racks) {
    if (item.name !== '') {
      const first = rackNames.get(item.name);
      if (first) reader.problem(`${path}.name`, `duplicate rack name "${item.name}" (also ${first})`);
      else rackNames.set(item.name, path);
    }
    item.nodes.forEach((node, i) => {
      if (node === '') return;
      const key = `${path}.nodes[${i}]`;
      const other = rackOf.get(node);
      if (other === item.name) reader.problem(key, `node "${node}" is listed twice in rack "${item.name}"`);
      else if (other !== undefined) reader.problem(key, `node "${node}" is already in rack "${other}"`);
      else rackOf.set(node, item.name);
      if (allNodesNamed && !nodeNames.has(node)) reader.problem(key, `node "${node}" is not in nodes`);
    });
  }
}

function checkReplicas(reader: ConfigReader, vdisks: Entry<ClusterVDisk>[], nodes: Entry<ClusterNode>[]): void {
  const byName = new Map<string, Entry<ClusterNode>>();
  for (const e of nodes) if (!byName.has(e.item.name)) byName.set(e.item.name, e);
  const allNodesNamed = reader.allNamed('nodes', [...byName.keys()]);
  for (const { path, item } of vdisks) {
    const seen = new Set<string>();
    item.replicas.forEach((r, i) => {
      const key = `${path}.replicas[${i}]`;
      if (r.node === '' || r.disk === '') return;
      const pair = JSON.stringify([r.node, r.disk]);
      if (seen.has(pair)) {
        reader.problem(key, `duplicate replica (node "${r.node}", disk "${r.disk}") in vdisk ${item.id}`);
      }
      seen.add(pair);
      const node = byName.get(r.node);
      if (!node) {
        if (allNodesNamed) reader.problem(`${key}.node`, `node "${r.node}" is not in nodes`);
        return;
      }
      const disks = node.item.disks.map((d) => d.name);
      if (!disks.includes(r.disk) && reader.allNamed(`${node.path}.disks`, disks)) {
        reader.problem(`${key}.disk`, `node "${r.node}" has no disk "${r.disk}"`);
      }
    });
  }
}
