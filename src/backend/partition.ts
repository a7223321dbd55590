// Time partitions: every record goes to the partition whose interval
// [start, start + period) holds its timestamp; a partition is one directory
// named "<start>_<hash>".

const DAY = 86_400;

/**
 * Start (seconds) of the partition holding `timestamp` for a period of
 * `periodSeconds`. Periods up to a day start at 00:00 UTC and step by the
 * period within the day, as bob does (a 7 h period gives 00, 07, 14, 21 h);
 * longer periods are aligned to multiples of the period since the epoch
 * (bob's week alignment is broken).
 */
export function partitionStart(timestamp: number, periodSeconds: number): number {
  if (periodSeconds <= DAY) {
    const dayStart = timestamp - (timestamp % DAY);
    return dayStart + Math.floor((timestamp - dayStart) / periodSeconds) * periodSeconds;
  }
  return timestamp - (timestamp % periodSeconds);
}

export interface PartitionName {
  start: number;
  /** Everything after the first "_" (bob: the owner hash); empty if there is none. */
  suffix: string;
}

/** "<u64>" or "<u64>_<anything>"; null for other names. */
export function parsePartitionName(name: string): PartitionName | null {
  const m = /^(\d{1,20})(?:_(.*))?$/s.exec(name);
  if (!m) return null;
  const start = Number(m[1]);
  if (!Number.isSafeInteger(start)) return null;
  return { start, suffix: m[2] ?? '' };
}

export function partitionDirName(start: number, hash: string): string {
  return `${start}_${hash}`;
}
