// What a batch says about where things are, so that a new process reads a checkpoint without
// folding the thread: each checkpoint record names the events of its channel values (`at`) and of
// the pending writes stored before it (`wat`), and the boundary names, per namespace, the event of
// the latest checkpoint once the batch is in (`latest`). Computed from the state the append
// confirms (the batch lands only at the seq it was planned for), and written in the same atomic
// batch, so the pointers are never ahead of or behind the log they are in. Pure: no I/O.
import type { CheckpointRecord, LatestIndex, ThreadRecord } from './records.js';
import type { ThreadState } from './thread-state.js';

/** `records` (the batch, boundary last) with their pointers, for a batch stored from `firstSeq` on. */
export function indexBatch(
  state: ThreadState,
  records: readonly ThreadRecord[],
  firstSeq: number,
): ThreadRecord[] {
  const indexed = records.map((record, i): ThreadRecord => {
    if (record.kind !== 'checkpoint') return record;
    return {
      kind: 'checkpoint',
      checkpoint: pointCheckpoint(state, records, firstSeq, record.checkpoint, i),
    };
  });
  const last = indexed[indexed.length - 1];
  if (last?.kind !== 'boundary') return indexed;
  const latest = latestAfter(state, indexed, firstSeq);
  if (latest !== undefined) indexed[indexed.length - 1] = { ...last, latest };
  return indexed;
}

/** The checkpoint with `at` (its channel values' events) and `wat` (its earlier writes' events). */
function pointCheckpoint(
  state: ThreadState,
  batch: readonly ThreadRecord[],
  firstSeq: number,
  checkpoint: CheckpointRecord,
  position: number,
): CheckpointRecord {
  const { ns } = checkpoint;
  const at: Record<string, number> = {};
  for (const [ch, ver] of Object.entries(checkpoint.vers)) {
    const owner = checkpoint.refs?.[ch];
    const inBatch = batch.findIndex(
      (r, i) =>
        i < position &&
        r.kind === 'blob' &&
        r.blob.ns === ns &&
        r.blob.ch === ch &&
        r.blob.ver === ver &&
        r.blob.owner === owner &&
        state.blob(ns, ch, ver, owner) === undefined,
    );
    if (inBatch >= 0) {
      const found = batch[inBatch];
      if (found?.kind === 'blob' && found.blob.value !== undefined) at[ch] = firstSeq + inBatch;
      continue;
    }
    const stored = state.blob(ns, ch, ver, owner);
    const seq = stored === undefined ? undefined : state.seqOf(stored);
    if (stored?.value !== undefined && seq !== undefined) at[ch] = seq;
  }
  const wat = state.writesEventSeqs(ns, checkpoint.id);
  return wat.length > 0 ? { ...checkpoint, at, wat: [...wat] } : { ...checkpoint, at };
}

/** Per namespace of the batch (and the root one), the seq of its latest checkpoint after the batch. */
function latestAfter(
  state: ThreadState,
  batch: readonly ThreadRecord[],
  firstSeq: number,
): LatestIndex | undefined {
  const namespaces = new Set<string>(['']);
  for (const record of batch) if (record.kind !== 'boundary') namespaces.add(recordNs(record));
  const latest: LatestIndex = {};
  for (const ns of namespaces) {
    let id = state.latest(ns)?.id;
    let seq = id === undefined ? -1 : state.seqOf(state.latest(ns)!);
    batch.forEach((record, i) => {
      if (
        record.kind === 'checkpoint' &&
        record.checkpoint.ns === ns &&
        (id === undefined || record.checkpoint.id >= id)
      ) {
        id = record.checkpoint.id;
        seq = firstSeq + i;
      }
    });
    // A checkpoint whose event is unknown (never the case for a folded thread): no index at all.
    if (seq === undefined) return undefined;
    latest[ns] = seq;
  }
  return latest;
}

function recordNs(record: Exclude<ThreadRecord, { kind: 'boundary' }>): string {
  switch (record.kind) {
    case 'blob':
      return record.blob.ns;
    case 'checkpoint':
      return record.checkpoint.ns;
    case 'writes':
      return record.writes.ns;
  }
}
