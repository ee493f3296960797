// The folded state of one thread: what its events say, indexed so that getTuple and list touch
// only the checkpoints they return. Folding is deterministic, so every process that reads the same
// log arrives at the same state.
import { compareWritesSortKeys, writesSortKey } from '@langchain/langgraph-checkpoint';
import type {
  BlobRecord,
  CheckpointRecord,
  SerializedValue,
  ThreadRecord,
  Version,
  WriteEntry,
} from './records.js';

/** One stored pending write, with what orders it. */
export interface StoredWrite {
  task: string;
  path: string;
  idx: number;
  ch: string;
  value: SerializedValue;
}

const blobKey = (ns: string, ch: string, ver: Version, owner?: string): string =>
  JSON.stringify(owner === undefined ? [ns, ch, ver] : [ns, ch, ver, owner]);
const checkpointKey = (ns: string, id: string): string => JSON.stringify([ns, id]);
const writeKey = (task: string, idx: number): string => JSON.stringify([task, idx]);

/** Index of `id` in ascending `ids`, or where it would go. */
function searchSorted(ids: readonly string[], id: string): number {
  let low = 0;
  let high = ids.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (ids[mid]! < id) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** The fold of a thread's records. */
export class ThreadState {
  /** Checkpoint ids per namespace, ascending (LangGraph's ids sort by time). */
  private readonly idsByNs = new Map<string, string[]>();
  private readonly checkpoints = new Map<string, CheckpointRecord>();
  private readonly blobs = new Map<string, BlobRecord>();
  private readonly writes = new Map<string, Map<string, StoredWrite>>();
  /** Batch ids seen, so a reload can tell whether a batch of ours landed. */
  private readonly batches = new Set<string>();

  /** Applies one record. */
  apply(record: ThreadRecord): void {
    switch (record.kind) {
      case 'blob': {
        const { ns, ch, ver, owner } = record.blob;
        const key = blobKey(ns, ch, ver, owner);
        // Stored once per version: a second copy (a retried or forked put) never replaces the first.
        if (!this.blobs.has(key)) this.blobs.set(key, record.blob);
        return;
      }
      case 'checkpoint':
        this.applyCheckpoint(record.checkpoint);
        return;
      case 'writes': {
        const { ns, cp, task, path } = record.writes;
        for (const entry of record.writes.writes) this.applyWrite(ns, cp, { task, path, ...entry });
        return;
      }
      case 'boundary':
        this.batches.add(record.batch);
        return;
    }
  }

  private applyCheckpoint(checkpoint: CheckpointRecord): void {
    const key = checkpointKey(checkpoint.ns, checkpoint.id);
    if (!this.checkpoints.has(key)) {
      let ids = this.idsByNs.get(checkpoint.ns);
      if (ids === undefined) {
        ids = [];
        this.idsByNs.set(checkpoint.ns, ids);
      }
      const at = searchSorted(ids, checkpoint.id);
      ids.splice(at, 0, checkpoint.id);
    }
    // A later put of the same id replaces the earlier one, as LangGraph's own savers do.
    this.checkpoints.set(key, checkpoint);
  }

  private applyWrite(ns: string, checkpointId: string, write: StoredWrite): void {
    const key = checkpointKey(ns, checkpointId);
    let forCheckpoint = this.writes.get(key);
    if (forCheckpoint === undefined) {
      forCheckpoint = new Map();
      this.writes.set(key, forCheckpoint);
    }
    const inner = writeKey(write.task, write.idx);
    // Regular writes are kept on retry (first wins); special writes (negative idx) are replaced.
    if (write.idx >= 0 && forCheckpoint.has(inner)) return;
    forCheckpoint.set(inner, write);
  }

  /** True when the batch with this id is in the log. */
  hasBatch(batch: string): boolean {
    return this.batches.has(batch);
  }

  /** Namespaces that hold checkpoints. */
  namespaces(): string[] {
    return [...this.idsByNs.keys()];
  }

  /** Number of checkpoints in `ns`. */
  checkpointCount(ns: string): number {
    return this.idsByNs.get(ns)?.length ?? 0;
  }

  /** The checkpoint `id` of `ns`, if stored. */
  checkpoint(ns: string, id: string): CheckpointRecord | undefined {
    return this.checkpoints.get(checkpointKey(ns, id));
  }

  /** The newest checkpoint of `ns` (the greatest id). */
  latest(ns: string): CheckpointRecord | undefined {
    const ids = this.idsByNs.get(ns);
    const id = ids?.[ids.length - 1];
    return id === undefined ? undefined : this.checkpoint(ns, id);
  }

  /** The checkpoints of `ns`, newest first, with ids below `before` when given. */
  *newestFirst(ns: string, before?: string): Generator<CheckpointRecord> {
    const ids = this.idsByNs.get(ns) ?? [];
    const end = before === undefined ? ids.length : searchSorted(ids, before);
    for (let i = end - 1; i >= 0; i -= 1) yield this.checkpoint(ns, ids[i]!)!;
  }

  /** The blob of a channel version (`value` absent: the channel was empty at that version). */
  blob(ns: string, ch: string, ver: Version, owner?: string): BlobRecord | undefined {
    return this.blobs.get(blobKey(ns, ch, ver, owner));
  }

  /** The blob holding channel `ch` of a checkpoint, following its `refs`. */
  channelBlob(ns: string, checkpoint: CheckpointRecord, ch: string): BlobRecord | undefined {
    const ver = checkpoint.vers[ch];
    return ver === undefined ? undefined : this.blob(ns, ch, ver, checkpoint.refs?.[ch]);
  }

  /** The write of `task` at `idx` for a checkpoint, if stored. */
  write(ns: string, checkpointId: string, task: string, idx: number): StoredWrite | undefined {
    return this.writes.get(checkpointKey(ns, checkpointId))?.get(writeKey(task, idx));
  }

  /** The pending writes of a checkpoint in LangGraph's order (`compareWritesSortKeys`). */
  orderedWrites(ns: string, checkpointId: string): StoredWrite[] {
    const stored = this.writes.get(checkpointKey(ns, checkpointId));
    if (stored === undefined) return [];
    const keyed = [...stored.values()].map((w) => ({ key: writesSortKey(w.path, w.task, w.idx), w }));
    keyed.sort((a, b) => compareWritesSortKeys(a.key, b.key));
    return keyed.map(({ w }) => w);
  }
}

/** The write a stored entry would be, for comparisons. */
export function sameWrite(stored: StoredWrite, path: string, entry: WriteEntry): boolean {
  return (
    stored.path === path &&
    stored.ch === entry.ch &&
    stored.value.t === entry.value.t &&
    stored.value.b === entry.value.b
  );
}
