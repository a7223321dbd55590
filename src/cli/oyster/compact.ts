// oyster compact: asks a node to compact a vdisk's replicas now (POST
// /vdisks/{id}/compact) or tells where compaction stands (--status).
import { parseDuration } from '../../config/duration';
import { RequestError } from './client';
import { Command, integerOption, parsedOption, parseOptions, printHelp } from './command';
import { DEFAULT_REST } from './connection';
import { ExitCode, Failure, UsageError } from './exit-codes';
import { RestClient } from './rest-client';

interface DiskState {
  disk: string;
  running: boolean;
  blobsCompacted: number;
  bytesReclaimed: number;
  current?: { partition: string; blob: number; visited: number; entries: number };
  lastPass?: { finished: number; compacted: number; skipped: number };
}

export const compact: Command = {
  name: 'compact',
  summary: "give back the space of a vdisk's overwritten and deleted values now",
  help: `Usage: oyster compact VDISK [--rest URL] [-u USER] [--no-wait | --status] [--json]

Compacts every closed blob of the vdisk's replicas on the node that has
anything to reclaim, whatever its garbage ratio, and prints what each disk
did. Reads and writes go on meanwhile; the node paces the work by
compaction.rate (docs/OPERATIONS.md, "Compaction").

  --rest URL           the node's REST API (default ${DEFAULT_REST})
  -u, --user NAME      Basic authentication user
  --password TEXT      its password (or set OYSTER_PASSWORD)
  --timeout DURATION   how long to wait for the compaction (default 1h)
  --no-wait            start it and return at once
  --status             only show where compaction of the vdisk's disks stands
  --json               print the node's answer as JSON

Exit codes: 0 done, 2 wrong command line, 3 the node refused or is unreachable.`,
  async run(argv) {
    const { values, positionals } = parseOptions(
      argv,
      {
        rest: { type: 'string' },
        user: { type: 'string', short: 'u' },
        password: { type: 'string' },
        timeout: { type: 'string' },
        'no-wait': { type: 'boolean' },
        status: { type: 'boolean' },
        json: { type: 'boolean' },
      },
      true,
    );
    if (values.help) return printHelp(compact);
    if (positionals.length !== 1) throw new UsageError('give one vdisk id');
    const vdisk = integerOption(positionals[0] as string, 'vdisk', 0, 0, 2 ** 32 - 1);
    if (values['no-wait'] && values.status) throw new UsageError('give --no-wait or --status, not both');
    const timeoutMs = values.timeout === undefined ? 3_600_000 : parsedOption(values.timeout as string, 'timeout', parseDuration);
    const user = values.user as string | undefined;
    const client = new RestClient((values.rest as string | undefined) ?? DEFAULT_REST, {
      user,
      password: (values.password as string | undefined) ?? process.env.OYSTER_PASSWORD,
      timeoutMs,
      connections: 1,
    });
    try {
      const answer = (values.status
        ? await client.call('GET', `/vdisks/${vdisk}/compact`)
        : await client.call('POST', `/vdisks/${vdisk}/compact${values['no-wait'] ? '?wait=false' : ''}`, [200, 202])) as { disks: DiskState[] };
      if (values.json) {
        process.stdout.write(`${JSON.stringify(answer, null, 2)}\n`);
      } else {
        for (const d of answer.disks) process.stdout.write(`${describe(vdisk, d)}\n`);
      }
      return ExitCode.ok;
    } catch (err) {
      if (err instanceof RequestError) throw new Failure(`compact vdisk ${vdisk}: ${err.message}`);
      throw err;
    } finally {
      client.close();
    }
  },
};

function describe(vdisk: number, d: DiskState): string {
  const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;
  const now = d.current ? `, compacting ${d.current.partition} blob ${d.current.blob} (${d.current.visited}/${d.current.entries} records)` : '';
  const last = d.lastPass ? `; last pass: ${d.lastPass.compacted} blob(s) compacted, ${d.lastPass.skipped} left` : '';
  return `vdisk ${vdisk} on disk ${d.disk}: ${d.running ? 'running' : 'idle'}${now}; ${d.blobsCompacted} blob(s) compacted since start, ${mib(d.bytesReclaimed)} reclaimed${last}`;
}
