// What the REST routes need from the node.
import type { Registry } from 'prom-client';
import { DataApi } from '../model/data-api';
import { Topology } from '../model/topology';
import { Logger } from '../logging/logger';
import { NodeStore } from '../store/node-store';
import { BodyBudget } from './body-budget';

export interface RestDeps {
  topology: Topology;
  store: NodeStore;
  data: DataApi;
  keySize: number;
  /** Largest accepted request body (node.yaml http_max_body_size). */
  bodyLimit: number;
  /** Memory of request bodies in flight (node.yaml http_body_memory_limit). */
  bodyBudget: BodyBudget;
  layout: {
    rootDirName: string;
    blobFileNamePrefix: string;
    /** Name under which /disks/list shows the alien directory. */
    alienDiskName: string;
    /** The alien root directory. */
    alienRoot: string;
  };
  registry: Registry;
  version: { version: string; buildTime: string; engine: string };
  log: Logger;
}
