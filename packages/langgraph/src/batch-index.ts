// What a batch says about where things are, so that a new process reads a checkpoint without
// folding the thread: each checkpoint record names the events of its channel values (`at`) and of
// the pending writes stored before it (`wat`), and the boundary names, per namespace, the event of
// the latest checkpoint once the batch is in (`latest`). Computed from the state the append
// confirms (the batch lands only at the seq it was planned for), and written in the same atomic
// batch, so the pointers are never ahead of or behind the log they are in. While a namespace is
// one chain, each checkpoint also names the one before it and that one's writes (`prev`, `pw`),
// and the boundary says which namespaces still are (`chain`), so that a new process lists the
// newest checkpoints by walking back. A put batch also carries copies of the checkpoint's small
// values put in earlier batches, which its `at` names, so that those are read with the log's last
// events too (see CARRY_BUDGET). Pure: no I/O.
import type { BlobRecord, CheckpointRecord, LatestIndex, ThreadRecord } from './records.js';
import type { ThreadState } from './thread-state.js';
import { storedLengthAtMost } from './values.js';

/**
 * Characters of stored values (their JSON) that a put batch stores again at most: copies of small
 * values of its checkpoint put in earlier batches, so that a new process reads the checkpoint from
 * the log's last events alone instead of looking each such value up by its seq (a second lookup
 * costs a cold read about what reading and parsing several KiB more in the first does). A copy
 * is a blob of the same version and value, which a fold ignores (the first stays the one kept);
 * the checkpoint's `at` names the copy. Kept under SQLite's in-row payload of a WITHOUT ROWID row
 * (about 1,000 bytes), so a copy never takes an overflow page of its own.
 */
const CARRY_BUDGET = 768;

/** `records` (the batch, boundary last) with their pointers, for a batch stored from `firstSeq` on. */
export function indexBatch(
  state: ThreadState,
  records: readonly ThreadRecord[],
  firstSeq: number,
): ThreadRecord[] {
  const closing = records[records.length - 1];
  const key = closing?.kind === 'boundary' ? blobKey(closing.batch) : undefined;
  const copies = new Set<BlobRecord>();
  // Plain loops, not map/findIndex closures: this runs on every write (about 5 µs a put batch).
  const keyed = withCopies(state, records, copies);
  if (key !== undefined) {
    for (let i = 0; i < keyed.length; i++) {
      const record = keyed[i]!;
      if (record.kind !== 'blob' || record.blob.value === undefined) continue;
      const blob = { ...record.blob, k: key };
      if (copies.has(record.blob)) copies.add(blob);
      keyed[i] = { kind: 'blob', blob };
    }
  }
  const indexed = keyed.slice();
  for (let i = 0; i < keyed.length; i++) {
    const record = keyed[i]!;
    if (record.kind !== 'checkpoint') continue;
    const pointed = pointCheckpoint(state, keyed, copies, firstSeq, record.checkpoint, i);
    indexed[i] = { kind: 'checkpoint', checkpoint: linkCheckpoint(state, keyed, pointed, i) };
  }
  const last = indexed[indexed.length - 1];
  if (last?.kind !== 'boundary') return indexed;
  const latest = latestAfter(state, indexed, firstSeq);
  if (latest !== undefined) {
    const chain = Object.keys(latest).filter((ns) => chainAfter(state, indexed, ns));
    indexed[indexed.length - 1] = chain.length > 0 ? { ...last, latest, chain } : { ...last, latest };
  }
  return indexed;
}

/**
 * `records` with, before each checkpoint record, copies of the small values (at most
 * {@link CARRY_BUDGET} characters in all, in channel order) of its channels whose blob was stored
 * in an earlier batch; each copy is added to `copies` (it takes the batch's key like any blob).
 */
function withCopies(
  state: ThreadState,
  records: readonly ThreadRecord[],
  copies: Set<BlobRecord>,
): ThreadRecord[] {
  if (!records.some((record) => record.kind === 'checkpoint')) return [...records];
  const out: ThreadRecord[] = [];
  for (const record of records) {
    if (record.kind === 'checkpoint') {
      const { ns, vers, refs } = record.checkpoint;
      let budget = CARRY_BUDGET;
      for (const [ch, ver] of Object.entries(vers)) {
        const owner = refs?.[ch];
        const stored = state.blob(ns, ch, ver, owner);
        if (stored?.value === undefined || state.seqOf(stored) === undefined) continue;
        // Put in this batch already (a value the saver stores again is not its to copy).
        if (out.some((r) => r.kind === 'blob' && r.blob.ns === ns && r.blob.ch === ch && r.blob.ver === ver))
          continue;
        const length = storedLengthAtMost(stored.value, budget);
        if (length === undefined) continue;
        budget -= length;
        const { k: _k, ...copy } = stored;
        copies.add(copy);
        out.push({ kind: 'blob', blob: copy });
      }
    }
    out.push(record);
  }
  return out;
}

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const HEX12 = /^[0-9a-f]{12}$/i;

/**
 * The `k` of a batch's blobs: 48 random bits of its batch id (a random UUID), in base64url (what
 * `Buffer.from(hex, 'hex').toString('base64url')` gives, spelled here without the buffer).
 */
function blobKey(batch: string): string | undefined {
  const hex =
    batch.length === 36 && batch[8] === '-'
      ? batch.slice(0, 8) + batch.slice(9, 13)
      : batch.replace(/-/g, '').slice(0, 12);
  if (!HEX12.test(hex)) return undefined;
  let key = '';
  for (let i = 0; i < 12; i += 3) {
    const bits = Number.parseInt(hex.slice(i, i + 3), 16);
    key += BASE64URL[bits >> 6]! + BASE64URL[bits & 63]!;
  }
  return key;
}

/**
 * The checkpoint with `prev` and `pw` when it continues its namespace's chain: the namespace is
 * one chain, the checkpoint is the first record of its namespace in the batch, and its id is above
 * every id stored (it becomes the latest).
 */
function linkCheckpoint(
  state: ThreadState,
  batch: readonly ThreadRecord[],
  checkpoint: CheckpointRecord,
  position: number,
): CheckpointRecord {
  const { ns } = checkpoint;
  if (!state.isChain(ns)) return checkpoint;
  if (batch.slice(0, position).some((r) => r.kind !== 'blob' && r.kind !== 'boundary' && recordNs(r) === ns))
    return checkpoint;
  const before = state.latest(ns);
  if (before === undefined) return { ...checkpoint, prev: -1 };
  const seq = state.seqOf(before);
  if (seq === undefined || checkpoint.id <= before.id) return checkpoint;
  const pw = state.writesEventSeqs(ns, before.id);
  return pw.length > 0 ? { ...checkpoint, prev: seq, pw: [...pw] } : { ...checkpoint, prev: seq };
}

/** True when `ns` is still one chain once `batch` is in (as {@link ThreadState.apply} will judge). */
function chainAfter(state: ThreadState, batch: readonly ThreadRecord[], ns: string): boolean {
  if (!state.isChain(ns)) return false;
  let latestId = state.latest(ns)?.id;
  const put = new Set<string>();
  for (const record of batch) {
    if (record.kind === 'checkpoint' && record.checkpoint.ns === ns) {
      if (record.checkpoint.prev === undefined) return false;
      latestId = record.checkpoint.id;
      put.add(latestId);
    } else if (record.kind === 'writes' && record.writes.ns === ns) {
      const { cp } = record.writes;
      if (cp !== latestId && (put.has(cp) || state.checkpoint(ns, cp) !== undefined)) return false;
    }
  }
  return true;
}

/** The checkpoint with `at` (its channel values' events) and `wat` (its earlier writes' events). */
function pointCheckpoint(
  state: ThreadState,
  batch: readonly ThreadRecord[],
  copies: ReadonlySet<BlobRecord>,
  firstSeq: number,
  checkpoint: CheckpointRecord,
  position: number,
): CheckpointRecord {
  const { ns } = checkpoint;
  const at: Record<string, number> = {};
  const ak: Record<string, string> = {};
  let keys = false;
  for (const ch in checkpoint.vers) {
    const ver = checkpoint.vers[ch]!;
    const owner = checkpoint.refs?.[ch];
    const stored = state.blob(ns, ch, ver, owner);
    let inBatch = -1;
    for (let i = 0; i < position; i++) {
      const r = batch[i]!;
      if (
        r.kind === 'blob' &&
        r.blob.ns === ns &&
        r.blob.ch === ch &&
        r.blob.ver === ver &&
        r.blob.owner === owner &&
        (stored === undefined || copies.has(r.blob))
      ) {
        inBatch = i;
        break;
      }
    }
    if (inBatch >= 0) {
      const found = batch[inBatch];
      // A value of the checkpoint's own batch is read with it (see cold-read.ts): no key needed.
      if (found?.kind === 'blob' && found.blob.value !== undefined) at[ch] = firstSeq + inBatch;
      continue;
    }
    const seq = stored === undefined ? undefined : state.seqOf(stored);
    if (stored?.value !== undefined && seq !== undefined) {
      at[ch] = seq;
      if (stored.k !== undefined) {
        ak[ch] = stored.k;
        keys = true;
      }
    }
  }
  const wat = state.writesEventSeqs(ns, checkpoint.id);
  const withKeys = keys ? { ak } : {};
  return wat.length > 0
    ? { ...checkpoint, at, ...withKeys, wat: [...wat] }
    : { ...checkpoint, at, ...withKeys };
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
