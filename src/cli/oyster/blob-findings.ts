// What `oyster blob check` reports about a partition: every way its files
// differ from what a clean close leaves behind, each with what the engine
// will do about it at open.
import { BlobReport, PartitionReport } from './native-tools';

export interface Finding {
  /** The file concerned (a name inside the partition directory). */
  file: string;
  text: string;
}

export interface Findings {
  problems: Finding[];
  /** Not wrong now: history such as blobs quarantined earlier. */
  notes: Finding[];
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

function indexName(b: BlobReport): string {
  return `${b.prefix}.${b.id}.index`;
}

// Older formats the engine reads and upgrades by itself: notes, not problems.
function blobNotes(b: BlobReport, out: Finding[]): void {
  if (b.header !== 'ok') return;
  if (b.version === 1 && b.active) {
    out.push({ file: b.name, text: 'format 1: the engine indexes it at open and writes new records to a new blob of format 2' });
  }
  if (b.index === 'outdated') out.push({ file: indexName(b), text: `${b.indexProblem}; the engine rebuilds it at open` });
}

function blobProblems(b: BlobReport, out: Finding[]): void {
  const add = (text: string, file = b.name): void => {
    out.push({ file, text });
  };
  switch (b.header) {
    case 'short':
      return add(`${b.headerProblem}; the engine removes it at open`);
    case 'pearl':
    case 'unsupported-version':
    case 'wrong-key-size':
      return add(`${b.headerProblem}; the engine refuses to open the partition`);
    case 'corrupt':
    case 'wrong-id':
      add(`header: ${b.headerProblem}; the engine quarantines the blob at open (oyster blob recover saves its records)`);
      break;
    case 'ok':
      break;
  }
  if (!b.scanned) {
    add('records not read: the key size is unknown (give --key-size)');
  } else {
    if (b.corruptRecords) {
      const newest = b.corruptNewest ? `, ${b.corruptNewest} of them the newest version of their key: reading those keys reports corruption` : '';
      add(`${plural(b.corruptRecords, 'record')} ${b.corruptRecords === 1 ? 'fails its' : 'fail their'} checksum${newest}`);
    }
    if (b.skippedRegions) add(`${plural(b.skippedRegions, 'damaged region')} (${plural(b.skippedBytes!, 'byte')}) between intact records`);
    if (b.tailBytes) {
      add(
        b.active
          ? `torn tail of ${plural(b.tailBytes, 'byte')} after the last record (an interrupted write; the engine cuts it off at open)`
          : `${plural(b.tailBytes, 'byte')} of garbage after the last record of a closed blob (the engine cuts them off at open)`,
      );
    }
    if (b.records === 0 && !b.active && b.header === 'ok') add('holds no record; the engine removes it at open');
  }
  if (b.header !== 'ok') return;  // the header's fate decides the index's
  if (b.index === 'invalid') add(`${b.indexProblem}; the engine rebuilds it at open`, indexName(b));
  if (b.index === 'mismatch') add(`does not describe the blob (${b.indexProblem}); the engine would use it as it is: rebuild it with oyster blob recover`, indexName(b));
  if (b.index === 'absent' && !b.active && (b.records ?? 1) > 0) {
    add('missing; the engine scans the blob and writes it at open', indexName(b));
  }
}

export function findingsOf(p: PartitionReport): Findings {
  const problems: Finding[] = [];
  for (const b of p.blobs) blobProblems(b, problems);
  for (const f of p.orphanIndexes) problems.push({ file: f, text: 'index of a blob that is not there; the engine removes it at open' });
  for (const f of p.tempIndexes) problems.push({ file: f, text: 'unfinished index build; the engine removes it at open' });
  const notes: Finding[] = [];
  for (const b of p.blobs) blobNotes(b, notes);
  if (p.quarantined.length > 0) {
    notes.push({ file: 'corrupted/', text: `${plural(p.quarantined.length, 'file')} quarantined earlier: ${p.quarantined.join(', ')}` });
  }
  return { problems, notes };
}
