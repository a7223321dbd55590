// JSON shapes shared by several routes.
import fs from 'node:fs';
import path from 'node:path';
import { VDisk } from '../model/topology';

export interface VDiskJson {
  id: number;
  replicas: Array<{ node: string; disk: string; path: string }>;
}

export function vdiskJson(v: VDisk, onlyNode?: string): VDiskJson {
  return {
    id: v.id,
    replicas: v.replicas.filter((r) => onlyNode === undefined || r.node === onlyNode).map((r) => ({ node: r.node, disk: r.disk, path: r.path })),
  };
}

export interface DirJson {
  name: string;
  path: string;
  children: DirJson[];
}

/** The directory tree under `dir`, directories only (bob's Dir). */
export async function dirTree(dir: string): Promise<DirJson> {
  const entries = await fs.promises.readdir(dir, { withFileTypes: true }).catch(() => []);
  const children = await Promise.all(
    entries
      .filter((e) => e.isDirectory())
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((e) => dirTree(path.join(dir, e.name))),
  );
  return { name: path.basename(dir), path: dir, children };
}
