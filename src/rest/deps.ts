// What the REST routes need from the node.
import type { Registry } from 'prom-client';
import { Backend } from '../backend/backend';
import { DataApi } from '../model/data-api';
import { Topology } from '../model/topology';
import { Logger } from '../logging/logger';

export interface RestDeps {
  topology: Topology;
  backend: Backend;
  data: DataApi;
  keySize: number;
  /** Largest accepted request body (node.yaml http_max_body_size). */
  bodyLimit: number;
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
