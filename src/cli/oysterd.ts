// oysterd: runs one Oyster node.
//
//   oysterd -c cluster.yaml -n node.yaml [--init-folders] [--strict] [--host HOST] [-p PORT]
//   oysterd                      a single-node cluster on the built-in configuration,
//                                data in $OYSTER_DATA or ./data, REST on 127.0.0.1:8000
//
// Exit codes: 0 stopped by SIGTERM/SIGINT, 1 fatal error, 2 bad arguments or configuration.
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError, formatProblem } from '../config/errors';
import { defaultConfig, LoadedConfig, loadConfig } from '../config/load';
import { logGrpcJsInto } from '../grpc/log';
import { createLogs } from '../logging/create';
import { OysterNode } from '../node/node';
import { versionInfo } from '../node/version';

const USAGE = `Usage: oysterd [-c|--cluster cluster.yaml -n|--node node.yaml] [--init-folders]
               [--strict] [--host ADDRESS] [-p|--port PORT] [-V|--version] [-h|--help]

With no configuration files oysterd runs a single-node cluster on its built-in
configuration, with its data in $OYSTER_DATA (default ./data) and REST on
127.0.0.1:8000 (give --host 0.0.0.0 to serve other hosts: the built-in
configuration has no authentication).

  -c, --cluster FILE   cluster.yaml (bob's format)
  -n, --node FILE      node.yaml (bob's format)
  --init-folders       create missing data directories on the node's disks
                       (bob's spelling --init_folders works too)
  --strict             refuse to start on unknown configuration keys (typos),
                       which are otherwise warnings
  --host ADDRESS       REST listen address (overrides http_api_address)
  -p, --port PORT      REST port (overrides http_api_port)
  -V, --version        print the version and exit
  -h, --help           print this help and exit

The log goes to standard output as JSON lines; its level is OYSTER_LOG_LEVEL
(trace, debug, info, warn, error, fatal, silent), else node.yaml log_config,
else info. Configuration errors go to standard error as text.

Exit codes: 0 stopped by SIGTERM/SIGINT, 1 fatal error, 2 bad arguments or configuration.`;

interface Args {
  cluster?: string;
  node?: string;
  initFolders: boolean;
  strict: boolean;
  host?: string;
  port?: number;
}

class UsageError extends Error {}

function parseArgs(argv: string[]): Args | 'help' | 'version' {
  const args: Args = { initFolders: false, strict: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const [flag, inline] = a.startsWith('--') && a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const value = () => {
      const v = inline ?? argv[++i];
      if (v === undefined || v === '') throw new UsageError(`${flag} needs a value`);
      return v;
    };
    switch (flag) {
      case '-c':
      case '--cluster':
        args.cluster = value();
        break;
      case '-n':
      case '--node':
        args.node = value();
        break;
      case '--init-folders':
      case '--init_folders':
        args.initFolders = true;
        break;
      case '--strict':
        args.strict = true;
        break;
      case '--host':
        args.host = value();
        break;
      case '-p':
      case '--port': {
        const v = value();
        const port = /^\d{1,5}$/.test(v) ? Number(v) : NaN;
        if (!(port >= 0 && port <= 65535)) throw new UsageError(`${flag}: ${JSON.stringify(v)} is not a port number`);
        args.port = port;
        break;
      }
      case '-h':
        // bob's -h is the host: a unit written for bob would print help and exit 0.
        if (argv[i + 1] !== undefined && !argv[i + 1].startsWith('-')) {
          throw new UsageError(`-h is --help here; give the REST listen address with --host ${argv[i + 1]}`);
        }
        return 'help';
      case '--help':
        return 'help';
      case '-V':
      case '--version':
        return 'version';
      default:
        throw new UsageError(`unknown argument ${JSON.stringify(a)}`);
    }
  }
  if ((args.cluster === undefined) !== (args.node === undefined)) {
    throw new UsageError('give both --cluster and --node, or neither for the built-in configuration');
  }
  return args;
}

function load(args: Args): { config: LoadedConfig; initFolders: boolean } {
  if (args.cluster && args.node) return { config: loadConfig(args.cluster, args.node, { strict: args.strict }), initFolders: args.initFolders };
  const dataDir = path.resolve(process.env.OYSTER_DATA || 'data');
  const config = defaultConfig(dataDir);
  // The built-in configuration creates what it needs, disk directories included.
  for (const n of config.cluster.nodes) for (const d of n.disks) fs.mkdirSync(d.path, { recursive: true });
  return { config, initFolders: true };
}

async function main(): Promise<number> {
  let args: Args | 'help' | 'version';
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`oysterd: ${err.message}\n\n${USAGE}\n`);
    return 2;
  }
  if (args === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (args === 'version') {
    const v = versionInfo();
    process.stdout.write(`oysterd ${v.version} (${v.engine}, built ${v.buildTime})\n`);
    return 0;
  }

  let loaded: { config: LoadedConfig; initFolders: boolean };
  try {
    loaded = load(args);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`oysterd: invalid configuration\n${err.message}\n`);
    return 2;
  }
  const { config, initFolders } = loaded;
  const env = process.env.OYSTER_LOG_LEVEL;
  const logs = createLogs(config.node.name, env ? { root: env } : { root: config.logLevels?.root ?? 'info', parts: config.logLevels?.parts });
  const log = logs.root;
  logGrpcJsInto(logs.part('grpc'));
  const configLog = logs.part('config');
  for (const w of config.warnings) configLog.warn({ file: w.file, key: w.key }, `config: ${formatProblem(w)}`);
  if (config.node.noEffect.length > 0) {
    configLog.info({ keys: config.node.noEffect }, `config: accepted for bob compatibility, no effect in Oyster: ${config.node.noEffect.join(', ')}`);
  }

  const node = new OysterNode({ config, initFolders, log, logs, restHost: args.host, restPort: args.port });
  process.on('unhandledRejection', (reason) => {
    log.error({ err: reason instanceof Error ? reason.stack : String(reason) }, 'unhandled rejection');
  });
  try {
    await node.start();
  } catch (err) {
    log.error({ err: (err as Error).message }, 'node failed to start');
    await node.stop().catch(() => undefined);
    return 1;
  }
  return new Promise<number>((resolve) => {
    let signals = 0;
    const onSignal = (signal: NodeJS.Signals) => {
      if (++signals > 1) {
        log.warn({ signal }, 'second signal: exiting without finishing');
        process.exit(1);
      }
      log.info({ signal }, 'shutting down');
      node.stop().then(
        () => resolve(0),
        (err: Error) => {
          log.error({ err: err.message }, 'shutdown failed');
          resolve(1);
        },
      );
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}

main().then(
  (code) => {
    process.exitCode = code;
    // Nothing should be left to wait for; do not let a stray timer hold the exit.
    setTimeout(() => process.exit(code), 100).unref();
  },
  (err: Error) => {
    process.stderr.write(`oysterd: ${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);
