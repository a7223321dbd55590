// node.yaml against cluster.yaml (bob's `Cluster::check`): the node must be
// one of the cluster's nodes, the quorum must be reachable on every vdisk and
// the alien disk must be one of this node's disks; plus bob's startup check
// of bind_to_ip_address against the node's cluster address. Problems are
// reported on node.yaml keys; checks whose inputs already have problems are
// skipped so that one mistake is not reported twice.
import type { ClusterConfig } from './cluster-config';
import type { NodeConfig } from './node-config';
import { HostPort, parseSocketAddress } from './address';
import type { ConfigReader } from './reader';

const LISTED_VDISKS = 10;

export function crossCheck(
  cluster: ClusterConfig,
  node: NodeConfig,
  clusterReader: ConfigReader,
  nodeReader: ConfigReader,
): void {
  const clusterFile = clusterReader.file;
  const namesKnown = cluster.nodes.length > 0 && clusterReader.allNamed('nodes', cluster.nodes.map((n) => n.name));
  const self = cluster.nodes.find((n) => n.name === node.name);

  if (!self && namesKnown && !nodeReader.failed('name')) {
    nodeReader.problem('name', `node "${node.name}" is not one of the nodes in ${clusterFile}`);
  }

  if (!nodeReader.failed('quorum') && !clusterReader.failed('vdisks')) {
    const short = cluster.vdisks.filter((v) => v.replicas.length < node.quorum);
    if (short.length > 0) {
      const listed = short.slice(0, LISTED_VDISKS).map((v) => `${v.id} (${v.replicas.length})`);
      const more = short.length > LISTED_VDISKS ? ` and ${short.length - LISTED_VDISKS} more` : '';
      const vdisks = `vdisk${short.length > 1 ? 's' : ''} ${listed.join(', ')}${more}`;
      nodeReader.problem('quorum', `quorum ${node.quorum} is more than the number of replicas of ${vdisks}`);
    }
  }

  const alienDisk = node.pearl.alienDisk;
  const disks = self?.disks.map((d) => d.name) ?? [];
  if (self && alienDisk !== undefined && !disks.includes(alienDisk) && !clusterReader.failed('nodes')) {
    nodeReader.problem(
      'pearl.alien_disk',
      `"${alienDisk}" is not a disk of node "${self.name}" in ${clusterFile} (disks: ${disks.join(', ') || 'none'})`,
    );
  }

  // bob refuses to start when both addresses are IP addresses and differ.
  if (self && node.bindToIpAddress !== undefined && !nodeReader.failed('bind_to_ip_address')) {
    const own = socketAddressOrUndefined(self.address);
    const bind = parseSocketAddress(node.bindToIpAddress);
    if (own && (own.host !== bind.host || own.port !== bind.port)) {
      nodeReader.problem(
        'bind_to_ip_address',
        `"${node.bindToIpAddress}" differs from this node's address "${self.address}" in ${clusterFile}`,
      );
    }
  }
}

function socketAddressOrUndefined(text: string): HostPort | undefined {
  try {
    return parseSocketAddress(text);
  } catch {
    return undefined;
  }
}
