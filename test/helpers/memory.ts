// The memory a process took, as the tests that bound the node's memory read it.
import { readFileSync } from 'node:fs';

/** Peak resident set of process `pid` so far (VmHWM), in bytes. */
export function peakRss(pid: number): number {
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
}
