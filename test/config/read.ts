// Test helpers: run a config reader over YAML text and collect what it found.
import YAML from 'yaml';
import { ClusterConfig, readClusterConfig } from '../../src/config/cluster-config';
import type { Problem } from '../../src/config/errors';
import { NodeConfig, readNodeConfig } from '../../src/config/node-config';
import { ConfigReader } from '../../src/config/reader';

export interface Read<T> {
  config: T;
  problems: Problem[];
  warnings: Problem[];
  /** `key: reason` lines, for compact assertions. */
  lines: string[];
}

export function readCluster(yaml: string): Read<ClusterConfig> {
  return run('cluster.yaml', yaml, readClusterConfig);
}

export function readNode(yaml: string): Read<NodeConfig> {
  return run('node.yaml', yaml, readNodeConfig);
}

function run<T>(file: string, yaml: string, read: (r: ConfigReader, doc: unknown) => T): Read<T> {
  const reader = new ConfigReader(file);
  const config = read(reader, YAML.parse(yaml));
  reader.finish();
  return {
    config,
    problems: reader.problems,
    warnings: reader.warnings,
    lines: reader.problems.map((p) => `${p.key}: ${p.reason}`),
  };
}

/** A valid node.yaml to start from, with `extra` lines appended at top level. */
export function nodeYaml(extra = ''): string {
  return `name: n1
quorum: 1
operation_timeout: 3sec
check_interval: 5000ms
cluster_policy: quorum
backend_type: pearl
cleanup_interval: 1h
pearl:
  settings:
    root_dir_name: bob
    alien_root_dir_name: alien
    timestamp_period: 1d
    create_pearl_wait_delay: 100ms
${extra}`;
}
