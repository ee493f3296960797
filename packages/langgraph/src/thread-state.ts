// The folded state of one thread: what its events say, indexed so that getTuple and list touch
// only the checkpoints they return. Folding is deterministic, so every process that reads the same
// log arrives at the same state.
import { compareWritesSortKeys, type WritesSortKey, writesSortKey } from '@langchain/langgraph-checkpoint';
import type {
  BlobRecord,
  CheckpointRecord,
  SerializedValue,
  ThreadRecord,
  Version,
  WriteEntry,
} from './records.js';
import { sameSerialized } from './values.js';

/** One stored pending write, with what orders it. */
export interface StoredWrite {
  task: string;
  path: string;
  idx: number;
  ch: string;
  value: SerializedValue;
}

/** The pending writes of one checkpoint, by task and index, and their order once asked for. */
interface CheckpointWrites {
  byTask: Map<string, Map<number, StoredWrite>>;
  /** `orderedWrites`' answer, dropped whenever a write is applied. */
  ordered?: StoredWrite[];
}

/** The blobs of one channel version: the plain one, and those owned by a checkpoint. */
interface VersionBlobs {
  plain?: BlobRecord;
  owned?: Map<string, BlobRecord>;
}

/** `map.get(key)`, first setting it to `make()` when absent. */
function getOrSet<K, V>(map: Map<K, V>, key: K, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
  }
  return value;
}

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
  // Nested maps, not composite string keys: a cold fold applies thousands of records, and a Map
  // keyed by version tells 1 from "1" without encoding it.
  /** Checkpoints by namespace, then id. */
  private readonly checkpoints = new Map<string, Map<string, CheckpointRecord>>();
  /** Blobs by namespace, channel, then version. */
  private readonly blobs = new Map<string, Map<string, Map<Version, VersionBlobs>>>();
  /** Pending writes by namespace, then checkpoint id. */
  private readonly writes = new Map<string, Map<string, CheckpointWrites>>();
  /** Batch ids seen, so a reload can tell whether a batch of ours landed. */
  private readonly batches = new Set<string>();
  /** The seq of the event holding each kept blob and checkpoint record. */
  private readonly seqs = new WeakMap<object, number>();
  /** Seqs of the writes events of each checkpoint, by namespace, then checkpoint id. */
  private readonly writesSeqs = new Map<string, Map<string, number[]>>();
  /** Namespaces that stopped being one chain (see `chain` in records.ts); once out, never back. */
  private readonly unchained = new Set<string>();

  /** Applies one record, stored in the event `seq`. */
  apply(record: ThreadRecord, seq: number): void {
    switch (record.kind) {
      case 'blob': {
        const { ns, ch, ver, owner } = record.blob;
        const byVersion = getOrSet(
          getOrSet(this.blobs, ns, () => new Map()),
          ch,
          () => new Map(),
        );
        const slot = getOrSet(byVersion, ver, (): VersionBlobs => ({}));
        // Stored once per version: a second copy (a retried or forked put) never replaces the first.
        if (owner === undefined) {
          if (slot.plain !== undefined) return;
          slot.plain = record.blob;
        } else {
          slot.owned ??= new Map();
          if (slot.owned.has(owner)) return;
          slot.owned.set(owner, record.blob);
        }
        this.seqs.set(record.blob, seq);
        return;
      }
      case 'checkpoint':
        if (!this.links(record.checkpoint)) this.unchained.add(record.checkpoint.ns);
        this.applyCheckpoint(record.checkpoint);
        this.seqs.set(record.checkpoint, seq);
        return;
      case 'writes': {
        const { ns, cp, task, path } = record.writes;
        // A write for a stored checkpoint other than the latest (a late one) is not one that `pw`
        // of the next checkpoint names: the chain ends here. A write ahead of its checkpoint's put
        // is named by that checkpoint's `wat`.
        if (this.latest(ns)?.id !== cp && this.checkpoint(ns, cp) !== undefined) this.unchained.add(ns);
        getOrSet(
          getOrSet(this.writesSeqs, ns, () => new Map<string, number[]>()),
          cp,
          (): number[] => [],
        ).push(seq);
        for (const entry of record.writes.writes) this.applyWrite(ns, cp, { task, path, ...entry });
        return;
      }
      case 'boundary':
        this.batches.add(record.batch);
        return;
    }
  }

  /** True when `checkpoint`, about to be applied, continues its namespace's chain. */
  private links(checkpoint: CheckpointRecord): boolean {
    const { ns, prev, pw } = checkpoint;
    if (prev === undefined || this.unchained.has(ns)) return false;
    const before = this.latest(ns);
    if (before === undefined) return prev === -1 && (pw?.length ?? 0) === 0;
    const writes = this.writesEventSeqs(ns, before.id);
    return (
      checkpoint.id > before.id &&
      prev === this.seqOf(before) &&
      (pw?.length ?? 0) === writes.length &&
      writes.every((seq, i) => pw![i] === seq)
    );
  }

  /**
   * True while `ns` is one chain: every checkpoint put in ascending id order naming the one before
   * and all its writes, and no write for a stored checkpoint other than the latest (true for a
   * namespace not seen).
   */
  isChain(ns: string): boolean {
    return !this.unchained.has(ns);
  }

  private applyCheckpoint(checkpoint: CheckpointRecord): void {
    const inNs = getOrSet(this.checkpoints, checkpoint.ns, () => new Map<string, CheckpointRecord>());
    if (!inNs.has(checkpoint.id)) {
      const ids = getOrSet(this.idsByNs, checkpoint.ns, (): string[] => []);
      // Ids mostly arrive in ascending order: appending is then the common case.
      if (ids.length === 0 || ids[ids.length - 1]! < checkpoint.id) ids.push(checkpoint.id);
      else ids.splice(searchSorted(ids, checkpoint.id), 0, checkpoint.id);
    }
    // A later put of the same id replaces the earlier one, as LangGraph's own savers do.
    inNs.set(checkpoint.id, checkpoint);
  }

  private applyWrite(ns: string, checkpointId: string, write: StoredWrite): void {
    const forCheckpoint = getOrSet(
      getOrSet(this.writes, ns, () => new Map<string, CheckpointWrites>()),
      checkpointId,
      (): CheckpointWrites => ({ byTask: new Map() }),
    );
    const byIdx = getOrSet(forCheckpoint.byTask, write.task, () => new Map<number, StoredWrite>());
    // Regular writes are kept on retry (first wins); special writes (negative idx) are replaced.
    if (write.idx >= 0 && byIdx.has(write.idx)) return;
    byIdx.set(write.idx, write);
    forCheckpoint.ordered = undefined;
  }

  /** The seq of the event holding a blob or checkpoint record of this state. */
  seqOf(record: BlobRecord | CheckpointRecord): number | undefined {
    return this.seqs.get(record);
  }

  /** Seqs of the writes events stored for a checkpoint, ascending. */
  writesEventSeqs(ns: string, checkpointId: string): readonly number[] {
    return this.writesSeqs.get(ns)?.get(checkpointId) ?? [];
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
    return this.checkpoints.get(ns)?.get(id);
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
    const slot = this.blobs.get(ns)?.get(ch)?.get(ver);
    return owner === undefined ? slot?.plain : slot?.owned?.get(owner);
  }

  /** The blob holding channel `ch` of a checkpoint, following its `refs`. */
  channelBlob(ns: string, checkpoint: CheckpointRecord, ch: string): BlobRecord | undefined {
    const ver = checkpoint.vers[ch];
    return ver === undefined ? undefined : this.blob(ns, ch, ver, checkpoint.refs?.[ch]);
  }

  /** The write of `task` at `idx` for a checkpoint, if stored. */
  write(ns: string, checkpointId: string, task: string, idx: number): StoredWrite | undefined {
    return this.writes.get(ns)?.get(checkpointId)?.byTask.get(task)?.get(idx);
  }

  /**
   * The pending writes of a checkpoint in LangGraph's order (`compareWritesSortKeys`). Kept until
   * the next write to that checkpoint: `list` asks for each checkpoint's writes twice (its own,
   * and as its child's parent sends). The array is shared: callers must not change it.
   */
  orderedWrites(ns: string, checkpointId: string): readonly StoredWrite[] {
    const stored = this.writes.get(ns)?.get(checkpointId);
    if (stored === undefined) return [];
    if (stored.ordered === undefined) {
      const keyed: { key: WritesSortKey; w: StoredWrite }[] = [];
      for (const byIdx of stored.byTask.values())
        for (const w of byIdx.values()) keyed.push({ key: writesSortKey(w.path, w.task, w.idx), w });
      keyed.sort((a, b) => compareWritesSortKeys(a.key, b.key));
      stored.ordered = keyed.map(({ w }) => w);
    }
    return stored.ordered;
  }
}

/** The write a stored entry would be, for comparisons. */
export function sameWrite(stored: StoredWrite, path: string, entry: WriteEntry): boolean {
  return stored.path === path && stored.ch === entry.ch && sameSerialized(stored.value, entry.value);
}
