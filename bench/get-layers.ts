// npm run bench:get-layers -- [--keys=20000] [--reads=100000] [--rounds=5]
//
// Where a GET's CPU goes, layer by layer, in one process on one core: a real
// node on the built-in configuration (one disk, in a temporary directory)
// gets `--keys` values of 1 KiB, then each layer of the read path reads
// random keys of one vdisk `--reads` times per round, rounds interleaved;
// the best round of each layer counts. Each layer's figure includes the
// layers below it, so the differences are what each layer adds.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Grinder } from '../src/cluster/grinder';
import { ReadRepair } from '../src/cluster/read-repair';
import { SupportNodes } from '../src/cluster/support-nodes';
import { defaultConfig } from '../src/config/load';
import { parseRestKey } from '../src/keys/key';
import { vdiskOf } from '../src/keys/distribution';
import { silentLogger } from '../src/logging/logger';
import { instrumentData } from '../src/metrics/instrument';
import { OysterNode } from '../src/node/node';
import { arg, machine } from './lib';

const KEYS = arg('keys', 20_000);
const READS = arg('reads', 100_000);
const ROUNDS = arg('rounds', 5);

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oyster-get-layers-'));
  const config = defaultConfig(dir);
  for (const n of config.cluster.nodes) for (const d of n.disks) fs.mkdirSync(d.path, { recursive: true });
  const node = new OysterNode({ config, initFolders: true, log: silentLogger, restHost: '127.0.0.1', restPort: 0 });
  await node.start();
  try {
    const store = node.store;
    // The coordinator as the node builds it, over this node alone.
    const grinder = new Grinder({
      topology: node.topology,
      local: store,
      peers: node.peers,
      support: new SupportNodes(node.topology, node.links),
      quorum: 1,
      policy: 'quorum',
      clock: node.clock,
      isAvailable: () => true,
      budget: node.bodyBudget,
      repair: new ReadRepair({ node: () => store, load: async (key) => {
          const r = await store.get(key, 'normal');
          return r && { record: r, give: () => undefined };
        }, open: async (key) => store.get(key, 'normal', true), room: node.bodyBudget, maxInFlight: 64, log: silentLogger, onRepair: () => undefined }),
      log: silentLogger,
      onUnanswered: () => undefined,
    });
    const data = instrumentData(grinder, node.metrics, 'rest');
    const value = Buffer.alloc(1024, 1);
    const all = Array.from({ length: KEYS }, (_, i) => parseRestKey(String(i), config.cluster.keySize));
    for (let i = 0; i < KEYS; i += 100) await Promise.all(all.slice(i, i + 100).map((k) => grinder.put(k, value)));
    // One vdisk's keys, so that every layer reads the same records.
    const keys = all.filter((k) => vdiskOf(k, node.topology.vdiskCount) === 0);
    const vdisk = store.localReplicas(0)[0].vdisk();
    const layers: Array<[string, (k: Buffer) => unknown]> = [
      ['EngineSet.readNewestNow (addon)', (k) => vdisk.partitions.engines.readNewestNow(k)],
      ['Vdisk.get', (k) => vdisk.get(k)],
      ['NodeStore.get', (k) => store.get(k, 'normal')],
      ['Grinder.get', (k) => grinder.get(k)],
      ['metrics of coordinated requests', (k) => data.get(k)],
    ];
    const best = new Map<string, number>();
    for (let r = 0; r < ROUNDS; r++) {
      for (const [name, read] of layers) {
        const c0 = process.cpuUsage();
        for (let i = 0; i < READS; i++) await read(keys[(i * 7919) % keys.length]);
        const c = process.cpuUsage(c0);
        best.set(name, Math.min(best.get(name) ?? Infinity, (c.user + c.system) / READS));
      }
    }
    console.log(`# GET, layer by layer\n\n${machine()}\n${KEYS} keys of 1 KiB, ${READS} reads of ${keys.length} keys of vdisk 0 per layer and round, best of ${ROUNDS} rounds\n`);
    console.log('| layer (with those below) | CPU µs per GET | added |\n|---|---|---|');
    let below = 0;
    for (const [name] of layers) {
      const us = best.get(name)!;
      console.log(`| ${name} | ${us.toFixed(2)} | ${below === 0 ? '' : `+${(us - below).toFixed(2)}`} |`);
      below = us;
    }
  } finally {
    await node.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

void main();
