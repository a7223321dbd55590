// oyster wait-ready: waits until a node serves REST, for scripts and for
// the systemd unit, whose ExecStartPost makes "active" mean "serving".
import fs from 'node:fs';
import { parseDuration } from '../../config/duration';
import { ConfigError } from '../../config/errors';
import { loadConfig } from '../../config/load';
import { RequestError } from './client';
import { Command, parsedOption, parseOptions, printHelp } from './command';
import { DEFAULT_REST } from './connection';
import { ExitCode, UsageError } from './exit-codes';
import { RestClient, RestOptions } from './rest-client';

const POLL_MS = 200;

export const waitReady: Command = {
  name: 'wait-ready',
  summary: 'wait until a node serves requests',
  help: `Usage: oyster wait-ready [-c cluster.yaml -n node.yaml | --rest URL] [--timeout DURATION] [--json]

Asks the node for GET /status until it answers 200 (a node opens its REST
port last, once its disks and gRPC are up). With -c and -n the address comes
from node.yaml (http_api_address and http_api_port; 0.0.0.0 and :: mean this
machine), over https when tls.rest is on, trusting tls.ca_cert_path for a
certificate that names tls.domain_name; otherwise from --rest (default
${DEFAULT_REST}), trusting the system's CAs for an https URL.

  -c, --cluster FILE     cluster.yaml
  -n, --node FILE        node.yaml
  --rest URL             the node's REST API
  --timeout DURATION     give up after this long (default 60s)
  --json                 print the outcome as JSON: {ready, url, waitedMs, error}

Exit codes: 0 the node serves, 1 it did not within the timeout, 2 wrong
command line or configuration.`,
  async run(argv) {
    const { values } = parseOptions(argv, {
      cluster: { type: 'string', short: 'c' },
      node: { type: 'string', short: 'n' },
      rest: { type: 'string' },
      timeout: { type: 'string' },
      json: { type: 'boolean' },
    });
    if (values.help) return printHelp(waitReady);
    if ((values.cluster === undefined) !== (values.node === undefined)) throw new UsageError('give both --cluster and --node');
    if (values.cluster !== undefined && values.rest !== undefined) throw new UsageError('give --rest or the configuration files, not both');
    const timeoutMs = values.timeout === undefined ? 60_000 : parsedOption(values.timeout, 'timeout', parseDuration);
    let url = values.rest ?? DEFAULT_REST;
    let tls: RestOptions['tls'];
    if (values.cluster !== undefined && values.node !== undefined) {
      try {
        const { node } = loadConfig(values.cluster, values.node);
        const host = node.httpApiAddress === '0.0.0.0' ? '127.0.0.1' : node.httpApiAddress === '::' ? '::1' : node.httpApiAddress;
        const https = node.tls?.rest === true;
        url = `${https ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${node.httpApiPort}`;
        if (https) tls = { ca: fs.readFileSync(node.tls!.caCertPath), servername: node.tls!.domainName };
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        process.stderr.write(`oyster wait-ready: invalid configuration\n${err.message}\n`);
        return ExitCode.usage;
      }
    }
    const client = new RestClient(url, { timeoutMs: Math.min(timeoutMs, 5000), connections: 1, tls });
    const started = Date.now();
    const deadline = started + timeoutMs;
    const report = (ready: boolean, error?: string) => {
      if (values.json) process.stdout.write(`${JSON.stringify({ ready, url, waitedMs: Date.now() - started, ...(error === undefined ? {} : { error }) })}\n`);
      else if (!ready) process.stderr.write(`oyster wait-ready: ${url} not serving after ${timeoutMs} ms (${error})\n`);
      return ready ? ExitCode.ok : ExitCode.negative;
    };
    let last = '';
    try {
      for (;;) {
        try {
          await client.ping();
          return report(true);
        } catch (err) {
          if (!(err instanceof RequestError)) throw err;
          last = err.message;
        }
        if (Date.now() + POLL_MS > deadline) break;
        await new Promise((r) => setTimeout(r, POLL_MS));
      }
    } finally {
      client.close();
    }
    return report(false, last);
  },
};
