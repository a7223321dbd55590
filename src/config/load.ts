// Loading the two configuration files of a node, and the built-in
// configuration `oysterd` runs with when given none.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { readUsersConfig, UsersConfig } from './users-config';
import { ClusterConfig, readClusterConfig } from './cluster-config';
import { crossCheck } from './cross-check';
import { ConfigError, Problem } from './errors';
import { NodeConfig, readNodeConfig, TlsConfig } from './node-config';
import { LogConfigLevels, readLogConfig } from './log-config';
import { ConfigReader } from './reader';

export interface LoadedConfig {
  cluster: ClusterConfig;
  node: NodeConfig;
  /** users.yaml, with authentication_type Basic; null otherwise. */
  users: UsersConfig | null;
  /** The levels log_config names, if it names any. */
  logLevels?: LogConfigLevels;
  /** The files read: cluster.yaml, node.yaml, and users.yaml and log_config where used. */
  files: ConfigFiles;
  /** Keys that were ignored, and values bob would have silently discarded. */
  warnings: Problem[];
}

export interface ConfigFiles {
  cluster: string;
  node: string;
  users?: string;
  logConfig?: string;
}

interface Source {
  reader: ConfigReader;
  /** The parsed YAML; undefined when the file could not be read or parsed. */
  document?: { value: unknown };
  /** Why the file could not be read at all. */
  unreadable?: string;
}

export interface LoadOptions {
  /** Unknown keys are problems, not warnings (oysterd --strict, oyster config check --strict). */
  strict?: boolean;
}

/**
 * Reads, validates and cross-checks cluster.yaml and node.yaml. Throws a
 * ConfigError listing every problem of both files.
 */
export function loadConfig(clusterPath: string, nodePath: string, options: LoadOptions = {}): LoadedConfig {
  return build(readYamlFile(clusterPath), readYamlFile(nodePath), options);
}

/** Warnings and problems, unknown keys among the problems when strict. */
export function sortProblems(problems: Problem[], warnings: Problem[], options: LoadOptions): { problems: Problem[]; warnings: Problem[] } {
  if (!options.strict) return { problems, warnings };
  return { problems: [...problems, ...warnings.filter((w) => w.unknownKey)], warnings: warnings.filter((w) => !w.unknownKey) };
}

/**
 * The built-in single-node configuration, data under `dataDir`:
 *
 * cluster: node `local` at `127.0.0.1:20000` with disk `disk0` at
 * `<dataDir>/disk0`; vdisks 0..3, each with one replica on local/disk0;
 * key_size 16.
 *
 * node: name `local`, quorum 1, cluster_policy quorum, backend_type pearl,
 * operation_timeout 3s, check_interval 5s, cleanup_interval 1h, REST on
 * 127.0.0.1:8000, authentication None; pearl: alien_disk `disk0`,
 * blob_file_name_prefix `bob`, settings root_dir_name `bob`,
 * alien_root_dir_name `alien`, timestamp_period 1d, create_pearl_wait_delay
 * 100ms. Everything else takes its node.yaml default (metrics off,
 * max_blob_size 1 GB, max_data_in_blob 1000000, …).
 */
export function defaultConfig(dataDir: string): LoadedConfig {
  const cluster = {
    nodes: [
      { name: 'local', address: '127.0.0.1:20000', disks: [{ name: 'disk0', path: path.join(dataDir, 'disk0') }] },
    ],
    vdisks: [0, 1, 2, 3].map((id) => ({ id, replicas: [{ node: 'local', disk: 'disk0' }] })),
    key_size: 16,
  };
  const node = {
    name: 'local',
    quorum: 1,
    operation_timeout: '3s',
    check_interval: '5s',
    cluster_policy: 'quorum',
    backend_type: 'pearl',
    cleanup_interval: '1h',
    // Nothing is authenticated: other hosts are served only when asked (--host).
    http_api_address: '127.0.0.1',
    http_api_port: 8000,
    state_dir: dataDir,
    pearl: {
      alien_disk: 'disk0',
      blob_file_name_prefix: 'bob',
      settings: {
        root_dir_name: 'bob',
        alien_root_dir_name: 'alien',
        timestamp_period: '1d',
        create_pearl_wait_delay: '100ms',
      },
    },
  };
  return build(
    { reader: new ConfigReader('(built-in cluster config)'), document: { value: cluster } },
    { reader: new ConfigReader('(built-in node config)'), document: { value: node } },
  );
}

function build(clusterSource: Source, nodeSource: Source, options: LoadOptions = {}): LoadedConfig {
  const { reader: clusterReader } = clusterSource;
  const { reader: nodeReader } = nodeSource;
  const cluster = clusterSource.document && readClusterConfig(clusterReader, clusterSource.document.value);
  const node = nodeSource.document && readNodeConfig(nodeReader, nodeSource.document.value);
  if (cluster && node) crossCheck(cluster, node, clusterReader, nodeReader);
  clusterReader.finish();
  nodeReader.finish();

  const readers = [clusterReader, nodeReader];
  const files: ConfigFiles = { cluster: clusterReader.file, node: nodeReader.file };
  let users: UsersConfig | null = null;
  if (node?.authenticationType === 'Basic') {
    if (node.usersConfig === undefined) {
      nodeReader.problem('users_config', 'is required with authentication_type: Basic');
    } else {
      files.users = relativeTo(nodeReader.file, node.usersConfig);
      const source = readYamlFile(files.users);
      if (source.unreadable !== undefined) {
        // The mistake is in node.yaml: it names a file that is not there.
        nodeReader.problem('users_config', `${node.usersConfig}: ${source.unreadable}${lookedAt(nodeReader.file, node.usersConfig)}`);
      } else {
        if (source.document) users = readUsersConfig(source.reader, source.document.value);
        source.reader.finish();
        readers.push(source.reader);
      }
    }
  }
  if (node?.logConfig !== undefined) files.logConfig = relativeTo(nodeReader.file, node.logConfig);
  const logLevels = node?.logConfig === undefined ? undefined : readLogConfig(files.logConfig!, `${node.logConfig}: file not found${lookedAt(nodeReader.file, node.logConfig)}`, nodeReader);
  if (node?.tls && (node.tls.rest || node.tls.grpc)) {
    const tls = node.tls;
    tls.caCertPath = relativeTo(nodeReader.file, tls.caCertPath);
    if (tls.certPath !== undefined) tls.certPath = relativeTo(nodeReader.file, tls.certPath);
    if (tls.pkeyPath !== undefined) tls.pkeyPath = relativeTo(nodeReader.file, tls.pkeyPath);
    checkTlsFiles(tls, nodeReader);
  }

  const { problems, warnings } = sortProblems(
    readers.flatMap((r) => r.problems),
    readers.flatMap((r) => r.warnings),
    options,
  );
  if (!cluster || !node || problems.length > 0) throw new ConfigError(problems, warnings);
  return { cluster, node, users, logLevels, files, warnings };
}

/** A certificate that expires within this many days is named in a warning at start. */
export const CERT_WARNING_DAYS = 30;

/**
 * The TLS files are read when the node starts; a file that is missing,
 * unreadable, not PEM of the right kind, a key that does not belong to the
 * certificate, or a certificate (the node's or the CA's) that is expired or
 * not yet valid is a configuration error now, before anything listens: the
 * first symptom would otherwise be peers and clients that cannot connect.
 */
function checkTlsFiles(tls: TlsConfig, nodeReader: ConfigReader): void {
  const read = (key: string, file: string | undefined): Buffer | undefined => {
    if (file === undefined) return undefined;
    try {
      return fs.readFileSync(file);
    } catch (err) {
      nodeReader.problem(key, `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      return undefined;
    }
  };
  const parse = <T>(key: string, file: string | undefined, bytes: Buffer | undefined, what: string, fn: (b: Buffer) => T): T | undefined => {
    if (bytes === undefined) return undefined;
    try {
      return fn(bytes);
    } catch (err) {
      nodeReader.problem(key, `${file} does not hold a PEM ${what} (${(err as Error).message})`);
      return undefined;
    }
  };
  const cert = parse('tls.cert_path', tls.certPath, read('tls.cert_path', tls.certPath), 'certificate', (b) => new crypto.X509Certificate(b));
  const key = parse('tls.pkey_path', tls.pkeyPath, read('tls.pkey_path', tls.pkeyPath), 'private key', (b) => crypto.createPrivateKey(b));
  const ca = parse('tls.ca_cert_path', tls.caCertPath, read('tls.ca_cert_path', tls.caCertPath), 'CA certificate', (b) => new crypto.X509Certificate(b));
  if (cert && key && !cert.checkPrivateKey(key)) {
    nodeReader.problem('tls.pkey_path', `${tls.pkeyPath} is not the private key of the certificate in ${tls.certPath}`);
  }
  if (cert) checkValidity('tls.cert_path', tls.certPath!, cert, nodeReader);
  if (ca) checkValidity('tls.ca_cert_path', tls.caCertPath, ca, nodeReader);
}

function checkValidity(key: string, file: string, cert: crypto.X509Certificate, nodeReader: ConfigReader): void {
  const now = Date.now();
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  const day = 86_400_000;
  if (now < from) nodeReader.problem(key, `the certificate in ${file} is not valid before ${new Date(from).toISOString()}`);
  else if (now >= to) nodeReader.problem(key, `the certificate in ${file} expired on ${new Date(to).toISOString()}`);
  else if (to - now < CERT_WARNING_DAYS * day) {
    nodeReader.warning(key, `the certificate in ${file} expires on ${new Date(to).toISOString()}, in ${Math.floor((to - now) / day)} days`);
  }
}

/**
 * A path named in node.yaml: relative paths are looked up next to node.yaml
 * first (a service's working directory is usually /), then in the working
 * directory, where bob looks.
 */
/** Where relativeTo looked for a relative path, for a message about a missing file. */
function lookedAt(nodeYaml: string, file: string): string {
  if (path.isAbsolute(file)) return '';
  return ` (looked for ${path.resolve(path.dirname(nodeYaml), file)} and ${path.resolve(file)})`;
}

function relativeTo(nodeYaml: string, file: string): string {
  if (path.isAbsolute(file)) return file;
  const beside = path.resolve(path.dirname(nodeYaml), file);
  return fs.existsSync(beside) ? beside : path.resolve(file);
}

function readYamlFile(file: string): Source {
  const reader = new ConfigReader(file);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const unreadable = e.code === 'ENOENT' ? 'file not found' : `cannot read the file: ${e.message}`;
    reader.problem('', unreadable);
    return { reader, unreadable };
  }
  const doc = YAML.parseDocument(text);
  if (doc.errors.length > 0) {
    // The first line of a yaml error names the problem and its line and column.
    for (const e of doc.errors) reader.problem('', `YAML syntax error: ${e.message.split('\n')[0].replace(/:$/, '')}`);
    return { reader };
  }
  try {
    return { reader, document: { value: doc.toJS() } };
  } catch (err) {
    reader.problem('', `YAML error: ${(err as Error).message}`);
    return { reader };
  }
}
