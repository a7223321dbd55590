// What the REST routes need from the node.
import type { Registry } from 'prom-client';
import { MetricsFormat } from '../config/node-config';
import { BobMetricsJson } from '../metrics/bob-json';
import { DataApi } from '../model/data-api';
import { Topology } from '../model/topology';
import { Logger } from '../logging/logger';
import { Compactor } from '../store/compactor';
import { NodeStore } from '../store/node-store';
import { BodyBudget } from './body-budget';

export interface RestDeps {
  topology: Topology;
  store: NodeStore;
  data: DataApi;
  keySize: number;
  /** Largest accepted request body (node.yaml http_max_body_size). */
  bodyLimit: number;
  /** Memory of values in flight (node.yaml http_body_memory_limit). */
  bodyBudget: BodyBudget;
  /** How long an answer may wait for a client that reads nothing before its connection is closed (node.yaml http_request_timeout). */
  sendTimeoutMs: number;
  layout: {
    rootDirName: string;
    blobFileNamePrefix: string;
    /** Name under which /disks/list shows the alien directory. */
    alienDiskName: string;
    /** The alien root directory. */
    alienRoot: string;
  };
  /** Space reclamation of each disk (and of the alien directory). */
  compactors: readonly Compactor[];
  registry: Registry;
  /** bob's JSON metrics (GET /metrics/bob), and what GET /metrics answers a client that names no format. */
  bobMetrics: () => Promise<BobMetricsJson>;
  metricsFormat: MetricsFormat;
  version: { version: string; buildTime: string; engine: string };
  log: Logger;
}
