// OysterNode: one running node — storage, the coordinator, the REST server
// and the periodic cleaner — with an orderly start and stop.
import http from 'node:http';
import net, { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { Authenticator } from '../auth/authenticator';
import { DiskState } from '../store/disk';
import { REFUSAL_REASONS } from '../store/identity';
import { NodeStore } from '../store/node-store';
import { AlienHandoff } from '../cluster/alien-handoff';
import { AntiEntropy } from '../cluster/anti-entropy';
import { Grinder } from '../cluster/grinder';
import { LinkManager } from '../cluster/link-manager';
import { PEER_OPERATIONS, PeerClient } from '../grpc/peer-client';
import { ReadRepair } from '../cluster/read-repair';
import { SupportNodes } from '../cluster/support-nodes';
import { Topology } from '../model/topology';
import { BobApiService, ReplicasService } from '../grpc/proto';
import { ANSWER_CODES } from '../grpc/status';
import { replicasDefinition, replicasService } from '../grpc/replicas-service';
import { OperationsEndpoint } from '../grpc/operations-service';
import { bobDefinition, bobService, createGrpcServer } from '../grpc/server';
import { CallLimit } from '../grpc/call-limit';
import { ServingPort } from '../link/port';
import { parseHostPort } from '../config/address';
import { LoadedConfig } from '../config/load';
import { LogPart, Logs } from '../logging/create';
import { Logger } from '../logging/logger';
import { compactionObserver, instrumentData, instrumentLocal, peerObserver, scrubObserver, storageObserver } from '../metrics/instrument';
import { BobMetrics } from '../metrics/bob-json';
import { Compactor } from '../store/compactor';
import { startMetricsListener } from '../metrics/listener';
import { createMetrics, NodeMetrics } from '../metrics/registry';
import { registerReadCacheMetrics } from '../metrics/read-cache';
import { registerStorageGauges } from '../metrics/storage-gauges';
import { startAtZero } from '../metrics/zeros';
import { createRestApp } from '../rest/app';
import { createRestServer } from '../rest/server';
import { BodyBudget } from '../rest/body-budget';
import { NodeApi } from '../model/node-api';
import { takeWhole } from '../model/pushed-value';
import { alienLocation, createNodeStore } from './storage';
import { grpcChannel, grpcServerCredentials, readTls, TlsMaterial } from './tls';
import { versionInfo } from './version';
import { VersionClock } from '../model/clock';
import { formatVersion } from '../model/version';

export interface NodeOptions {
  config: LoadedConfig;
  initFolders: boolean;
  log: Logger;
  /** Loggers of the node's parts, whose levels may differ (log_config's loggers); `log` for all when absent. */
  logs?: Pick<Logs, 'part'>;
  /** Overrides node.yaml http_api_address / http_api_port (bob's -h / -p). */
  restHost?: string;
  restPort?: number;
}

export class OysterNode {
  readonly topology: Topology;
  readonly store: NodeStore;
  readonly metrics: NodeMetrics;
  readonly peers = new Map<string, PeerClient>();
  readonly links: LinkManager;
  readonly handoff: AlienHandoff;
  readonly antiEntropy: AntiEntropy;
  /** One per disk and for the alien directory: gives back the space of overwritten and deleted values. */
  readonly compactors: Compactor[];
  readonly clock: VersionClock;
  private readonly bobMetrics: BobMetrics;
  readonly bodyBudget: BodyBudget;
  private readonly batchBudget: BodyBudget;
  private callLimit?: CallLimit;
  private readonly tls: TlsMaterial | null;
  private rest: http.Server | null = null;
  private metricsListener: http.Server | null = null;
  private grpc: grpc.Server | null = null;
  private port: ServingPort | null = null;
  private operations: OperationsEndpoint | null = null;
  private grpcPort: number | null = null;
  private cleaner: NodeJS.Timeout | null = null;
  private stopping: Promise<void> | null = null;

  constructor(private readonly options: NodeOptions) {
    const { config, log } = options;
    const cluster = this.logPart('cluster');
    this.topology = new Topology(config.cluster, config.node.name);
    const version = versionInfo();
    this.metrics = createMetrics({ version: version.version, revision: version.revision });
    this.tls = readTls(config.node.tls);
    if (this.tls) for (const [certificate, at] of Object.entries(this.tls.expires)) this.metrics.tlsCertExpiry.set({ certificate }, at);
    const metrics = this.metrics;
    // Values in flight, REST bodies and answers, gRPC messages and bob peers' answers alike.
    this.bodyBudget = new BodyBudget(
      config.node.httpBodyMemoryLimit,
      (bytes) => metrics.restBodyBytes.set(bytes),
      () => metrics.restBodyRefused.inc(),
    );
    // Peers' batches apart: the writes this node coordinates hold room while
    // they wait for their peers, whose batches must never wait for writes
    // the peers coordinate — waiting for this node's batches in turn.
    this.batchBudget = new BodyBudget(config.node.httpBodyMemoryLimit, (bytes) => metrics.peerBatchBytes.set(bytes));
    let lastFutureLog = 0;
    this.clock = new VersionClock(this.topology.selfId, undefined, (v, aheadUs) => {
      metrics.futureVersions.inc();
      if (Date.now() - lastFutureLog < 60_000) return;
      lastFutureLog = Date.now();
      log.warn({ version: formatVersion(v), aheadSeconds: Math.round(aheadUs / 1e6) }, "a version far ahead of this node's clock was seen; check the clocks of the cluster and the timestamps clients send");
    });
    // Parts built further down hear of disk state changes through this list.
    const diskStateListeners: Array<(disk: string, alien: boolean, state: DiskState) => void> = [
      (disk, alien, state) => metrics.diskReady.set({ disk, alien: String(alien) }, state === 'Ready' ? 1 : 0),
    ];
    this.store = createNodeStore({
      config,
      topology: this.topology,
      initFolders: options.initFolders,
      log: this.logPart('store'),
      onDiskWritable: (disk, alien, writable) => metrics.diskWritable.set({ disk, alien: String(alien) }, writable ? 1 : 0),
      onDiskRefusal: (disk, alien, refusal) => {
        for (const reason of REFUSAL_REASONS) metrics.diskRefused.set({ disk, alien: String(alien), reason }, refusal?.reason === reason ? 1 : 0);
      },
      onDiskState: (disk, alien, state) => {
        for (const l of diskStateListeners) l(disk, alien, state);
      },
      observer: (disk) => storageObserver(metrics, disk),
      clock: this.clock,
    });
    for (const d of [...this.store.disks, this.store.alien]) {
      metrics.diskWritable.set({ disk: d.name, alien: String(d.alien) }, 1);
      for (const reason of REFUSAL_REASONS) metrics.diskRefused.set({ disk: d.name, alien: String(d.alien), reason }, 0);
    }
    const links = new LinkManager(this.topology.self.name, config.node.checkInterval, cluster);
    this.links = links;
    const channel = this.tls && config.node.tls?.grpc ? grpcChannel(this.tls) : null;
    for (const n of this.topology.nodes) {
      if (n.name === this.topology.self.name) continue;
      metrics.peerUp.set({ peer: n.name }, 0);
      metrics.peerStreams.inc({ peer: n.name }, 0);
      metrics.peerLinks.inc({ peer: n.name }, 0);
      const peer = new PeerClient({
        name: n.name,
        address: n.address,
        selfName: this.topology.self.name,
        operationTimeoutMs: config.node.operationTimeout,
        maxReconnectBackoffMs: Math.max(100, Math.min(config.node.checkInterval, 5000)),
        isAvailable: () => links.isAvailable(n.name),
        credentials: channel?.credentials,
        channelOptions: channel?.options,
        observe: peerObserver(metrics, n.name),
        onStreamOpened: (link) => {
          metrics.peerStreams.inc({ peer: n.name });
          if (link) metrics.peerLinks.inc({ peer: n.name });
        },
        links: !(this.tls && config.node.tls?.grpc),
        budget: this.bodyBudget,
      });
      this.peers.set(n.name, peer);
      metrics.peerWaiting.set(n.name, () => peer.waiting);
      links.add(peer);
    }
    for (const outcome of ['accepted', 'refused']) metrics.linksAccepted.inc({ outcome }, 0);
    startAtZero(metrics, {
      peers: [...this.peers.keys()],
      peerOperations: PEER_OPERATIONS,
      grpcMethods: [...Object.keys(BobApiService), ...Object.keys(ReplicasService)],
      grpcCodes: ANSWER_CODES,
      disks: [...this.store.disks, this.store.alien].map((d) => d.name),
      owners: this.topology.nodes.map((n) => n.name),
      sources: antiEntropySources(this.topology),
    });
    this.bobMetrics = new BobMetrics(metrics, this.store);
    const antiEntropy = new AntiEntropy({
      topology: this.topology,
      store: this.store,
      peers: this.peers,
      isAvailable: (n) => links.isAvailable(n),
      clock: this.clock,
      keySize: config.cluster.keySize,
      intervalMs: config.node.antiEntropy.interval,
      rateBytesPerSecond: config.node.antiEntropy.rate,
      log: cluster,
      onCopied: (source, records, bytes) => {
        metrics.antiEntropyRecords.inc({ source }, records);
        metrics.antiEntropyBytes.inc(bytes);
      },
      onExchanged: (bytes) => metrics.antiEntropyExchanged.inc(bytes),
      onPass: (startedMs, seconds) => {
        metrics.antiEntropyLastPass.set(startedMs / 1000 + seconds);
        metrics.antiEntropyPassSeconds.set(seconds);
      },
    });
    this.antiEntropy = antiEntropy;
    this.compactors = [...this.store.disks, this.store.alien].map(
      (disk) =>
        new Compactor({
          disk,
          config: config.node.compaction,
          log: this.logPart('store'),
          // An alien directory out of service may hold anything.
          aliensOf: (vdisk) => !this.store.alien.isReady || this.store.holdsAliens(vdisk),
          observer: compactionObserver(metrics, disk.name, disk.alien),
          repair: (d, vdisk, damage) => antiEntropy.repair(d, vdisk, damage),
          scrubObserver: scrubObserver(metrics, disk.name),
        }),
    );
    // A disk that comes (back) into service holds its own scrub's place.
    diskStateListeners.push((name, alien, state) => {
      if (state !== 'Ready') return;
      for (const c of this.compactors) if (c.disk.name === name && c.disk.alien === alien) void c.scrubber.diskReady();
    });
    const handoff = new AlienHandoff({
      topology: this.topology,
      store: this.store,
      nodeApi: (owner) => this.nodeApi(owner),
      links,
      log: cluster,
      intervalMs: Math.max(1000, config.node.checkInterval),
      concurrency: 8,
      room: this.bodyBudget,
      onDelivered: (owner, records) => metrics.aliensHandedOver.inc({ owner }, records),
    });
    this.handoff = handoff;
    // A disk back in service (or replaced by an empty one) catches up, as does a peer that returns.
    diskStateListeners.push((_disk, alien, state) => {
      if (state === 'Ready' && !alien) antiEntropy.trigger();
    });
    links.onChange((peer, up) => {
      metrics.peerUp.set({ peer }, up ? 1 : 0);
      if (up) {
        handoff.trigger(peer);
        antiEntropy.trigger();
      }
    });
  }

  /** The gRPC port once listening. */
  get grpcBoundPort(): number | null {
    return this.grpcPort;
  }

  get log(): Logger {
    return this.options.log;
  }

  /** The storage of a node of the cluster: this one's, or a peer's client; undefined for a name that is neither. */
  private nodeApi(name: string): NodeApi | undefined {
    return name === this.topology.self.name ? this.store : this.peers.get(name);
  }

  private logPart(part: LogPart): Logger {
    return this.options.logs?.part(part) ?? this.options.log;
  }

  /** The REST server's address once listening. */
  get restAddress(): AddressInfo | null {
    return (this.rest?.address() as AddressInfo | null) ?? null;
  }

  async start(): Promise<void> {
    const { config, log } = this.options;
    const { node } = config;
    const cluster = this.logPart('cluster');
    await this.store.start();
    this.bobMetrics.start();
    const bodyBudget = this.bodyBudget;
    const grinder = new Grinder({
      topology: this.topology,
      local: this.store,
      peers: this.peers,
      support: new SupportNodes(this.topology, this.links),
      quorum: node.quorum,
      policy: node.clusterPolicy,
      clock: this.clock,
      isAvailable: (n) => this.links.isAvailable(n),
      budget: bodyBudget,
      repair: new ReadRepair({
        node: (n) => this.nodeApi(n)!,
        maxInFlight: 64,
        // A large value is read whole for its repair, once the memory for values in flight has room for it.
        load: async (key, from, size) => {
          await takeWhole(bodyBudget, size);
          let held = true;
          const give = () => {
            if (held) bodyBudget.give(size);
            held = false;
          };
          try {
            const r = await this.nodeApi(from.node)?.get(key, from.store);
            if (!r) give();
            return r ? { record: r, give } : null;
          } catch (err) {
            give();
            throw err;
          }
        },
        open: async (key, from) => (await this.nodeApi(from.node)?.get(key, from.store, true)) ?? null,
        room: bodyBudget,
        log: cluster,
        onRepair: (outcome) => this.metrics.readRepairs.inc({ outcome }),
      }),
      log: cluster,
      onUnanswered: (operation) => this.metrics.unansweredReads.inc({ operation }),
    });
    const auth = new Authenticator({
      users: config.users,
      nodes: new Map(this.topology.nodes.map((n) => [n.name, n.address])),
      resolvePeriodMs: node.hostnameResolvePeriodMs,
    });
    const calls = { auth, log: this.logPart('grpc'), onAnswer: (method: string, code: string) => this.metrics.grpcRequests.child(method, code).inc() };
    this.operations = new OperationsEndpoint({ ...calls, local: instrumentLocal(this.store, this.metrics), keySize: config.cluster.keySize, budget: bodyBudget, batchBudget: this.batchBudget, partsIdleMs: node.httpRequestTimeout });
    // A gRPC value is held whole: bounded by the REST body limit and by the
    // memory of bodies in flight; 64 KiB covers key, meta and options.
    const maxMessageBytes = Math.min(2 ** 31 - 1, Math.min(node.httpMaxBodySize, node.httpBodyMemoryLimit) + 65536);
    const operations = this.operations;
    this.callLimit = new CallLimit({
      maxCalls: node.grpcMaxCalls,
      receiveTimeoutMs: node.httpRequestTimeout,
      onOpen: (open) => this.metrics.grpcOpenCalls.set(open),
      onRefused: (reason) => this.metrics.grpcCallsRefused.inc({ reason }),
    });
    const grpcServer = createGrpcServer(
      [
        {
          definition: bobDefinition,
          implementation: bobService({
            ...calls,
            local: instrumentLocal(this.store, this.metrics),
            grinder: instrumentData(grinder, this.metrics, 'grpc'),
            heardFrom: (peer) => this.links.heardFrom(peer),
            keySize: config.cluster.keySize,
            budget: bodyBudget,
            sendTimeoutMs: node.httpRequestTimeout,
          }),
        },
        {
          definition: replicasDefinition,
          implementation: replicasService({ ...calls, store: this.store, operations }),
        },
      ],
      maxMessageBytes,
      this.callLimit,
      { messages: bodyBudget, batches: this.batchBudget },
      node.httpRequestTimeout,
    );
    this.grpc = grpcServer;
    const serving = await ServingPort.start({
      address: grpcBindAddress(this.topology.self.address, node.bindToIpAddress),
      grpc: grpcServer,
      credentials: this.tls && node.tls?.grpc ? grpcServerCredentials(this.tls) : null,
      auth,
      log: calls.log,
      maxMessageBytes,
      maxConnections: node.grpcMaxConnections,
      budget: this.batchBudget,
      receiveTimeoutMs: node.httpRequestTimeout,
      serve: operations.handle,
      onLink: (accepted) => this.metrics.linksAccepted.inc({ outcome: accepted ? 'accepted' : 'refused' }),
    });
    this.port = serving;
    this.grpcPort = serving.port;
    const where = alienLocation(config, this.topology);
    const app = createRestApp(
      {
        topology: this.topology,
        store: this.store,
        data: instrumentData(grinder, this.metrics, 'rest'),
        keySize: config.cluster.keySize,
        bodyLimit: node.httpMaxBodySize,
        bodyBudget,
        sendTimeoutMs: node.httpRequestTimeout,
        compactors: this.compactors,
        layout: {
          rootDirName: node.pearl.settings.rootDirName,
          blobFileNamePrefix: node.pearl.blobFileNamePrefix,
          alienDiskName: where.name,
          alienRoot: where.root,
        },
        registry: this.metrics.registry,
        bobMetrics: () => this.bobMetrics.json(),
        metricsFormat: node.metrics.restFormat,
        version: versionInfo(),
        log,
      },
      this.metrics,
      auth,
    );
    registerStorageGauges(this.metrics.registry, this.store);
    registerReadCacheMetrics(this.metrics.registry, this.store.readCache);
    const server = createRestServer(
      app,
      { maxConnections: node.httpMaxConnections, headersTimeoutMs: node.httpHeadersTimeout, requestTimeoutMs: node.httpRequestTimeout },
      this.tls && node.tls?.rest ? this.tls : undefined,
    );
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.restPort ?? node.httpApiPort, this.options.restHost ?? node.httpApiAddress, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.rest = server;
    if (node.metrics.graphiteEnabled) log.warn('metrics.graphite_enabled is set, but Oyster exports Prometheus metrics only; graphite is ignored');
    if (node.metrics.prometheusEnabled) {
      this.metricsListener = await startMetricsListener(this.metrics.registry, node.metrics.prometheusAddr);
    }
    this.cleaner = setInterval(() => void this.closeOutdatedActiveBlobs(), node.cleanupInterval);
    this.cleaner.unref();
    this.links.start();
    this.handoff.start();
    if (node.antiEntropy.enabled) this.antiEntropy.start();
    await Promise.all(this.compactors.map((c) => c.start()));
    // The one line that tells where everything is: what runs, from which
    // files, where it listens and where its data goes.
    const addr = this.restAddress!;
    const restTls = Boolean(this.tls && node.tls?.rest);
    const grpcAddress = grpcBindAddress(this.topology.self.address, node.bindToIpAddress);
    this.logPart('node').info(
      {
        version: versionInfo().version,
        config: config.files,
        rest: `${restTls ? 'https' : 'http'}://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`,
        grpc: `${grpcAddress.slice(0, grpcAddress.lastIndexOf(':'))}:${serving.port}`,
        metrics: node.metrics.prometheusEnabled ? `http://${node.metrics.prometheusAddr}/metrics` : null,
        tls: { rest: restTls, grpc: Boolean(this.tls && node.tls?.grpc) },
        authentication: node.authenticationType,
        disks: [...this.store.disks, this.store.alien].map((d) => ({ name: d.name, path: d.options.root, alien: d.alien, state: d.state })),
      },
      'node is serving',
    );
  }

  /** Stops accepting requests, lets those in flight finish, closes every partition. */
  stop(graceMs = 30_000): Promise<void> {
    this.stopping ??= (async () => {
      if (this.cleaner) clearInterval(this.cleaner);
      this.bobMetrics.stop();
      this.links.stop();
      await this.handoff.stop();
      await this.antiEntropy.stop();
      await Promise.all(this.compactors.map((c) => c.stop()));
      const grpcServer = this.grpc;
      this.port?.close();
      this.callLimit?.close();
      // Peers keep their operation streams open; the graceful shutdown waits for them.
      this.operations?.close();
      const grpcDone = grpcServer
        ? new Promise<void>((resolve) => {
            const force = setTimeout(() => {
              grpcServer.forceShutdown();
              this.port?.destroyLinks();
            }, graceMs);
            grpcServer.tryShutdown(() => {
              clearTimeout(force);
              resolve();
            });
          })
        : Promise.resolve();
      const server = this.rest;
      if (server) {
        // Keep-alive clients must not hold the shutdown open: answers from now
        // on close their connection, and connections that go idle are closed.
        server.prependListener('request', (_req: http.IncomingMessage, res: http.ServerResponse) => {
          res.shouldKeepAlive = false;
        });
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        const idle = setInterval(() => server.closeIdleConnections(), 100);
        const force = setTimeout(() => server.closeAllConnections(), graceMs);
        await closed;
        clearInterval(idle);
        clearTimeout(force);
      }
      await grpcDone;
      this.metricsListener?.close();
      for (const p of this.peers.values()) p.close();
      await this.store.close();
      this.logPart('node').info('node stopped');
    })();
    return this.stopping;
  }

  private async closeOutdatedActiveBlobs(): Promise<void> {
    const now = Date.now();
    for (const c of [...this.store.disks, this.store.alien]) {
      if (!c.isReady) continue;
      for (const g of c.vdisks.all()) {
        try {
          await c.use(() => g.admin((ps) => ps.closeOutdatedActiveBlobs(now)));
        } catch (err) {
          this.logPart('store').warn({ disk: c.name, vdisk: g.id, err: (err as Error).message }, 'closing outdated active blobs failed');
        }
      }
    }
  }
}

/** The replicas anti-entropy may copy from, as oyster_anti_entropy_records_total names them. */
function antiEntropySources(topology: Topology): string[] {
  const sources = new Set<string>();
  for (const v of topology.vdisks) {
    const here = topology.localReplicas(v.id);
    if (here.length === 0) continue;
    for (const r of v.replicas) {
      if (r.node !== topology.self.name) sources.add(r.node);
      else if (here.length > 1) sources.add(`${r.node}/${r.disk}`);
    }
  }
  return [...sources];
}

/**
 * Where the gRPC server listens: bind_to_ip_address if set,
 * else the cluster address if it is an IP address, else all interfaces on
 * its port.
 */
export function grpcBindAddress(clusterAddress: string, bindToIpAddress?: string): string {
  if (bindToIpAddress) return bindToIpAddress;
  const { host, port } = parseHostPort(clusterAddress);
  return net.isIP(host) ? clusterAddress : `0.0.0.0:${port}`;
}
