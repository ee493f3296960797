// The events a thread's session holds, and their validation on the way back in. Every operation is
// one batch: the records it adds, then one boundary event naming the batch, so the batch is
// committed (not an interrupted tail) under the store's default boundary rule and a reload can
// tell whether a batch of ours landed.
import { type JsonValue, TidemarkError } from '@tidemark/core';
import { isSerialized, type SerializedValue } from './values.js';

export { decodeBytes, encodeBytes, type SerializedValue } from './values.js';

/** Event types written by the saver. */
export const EVENT_TYPES = {
  blob: 'langgraph/blob',
  checkpoint: 'langgraph/checkpoint',
  writes: 'langgraph/writes',
} as const;

/** A channel version as LangGraph hands it over. */
export type Version = number | string;

/**
 * One channel value, stored once per (namespace, channel, version). No `value`: the channel was
 * empty. `owner` is set only when another value already held that version (a fork in the same
 * thread can reach the version numbers of the branch it left): then the value belongs to the
 * checkpoint `owner`, and the checkpoints that carry it name it in their `refs`.
 */
export interface BlobRecord {
  ns: string;
  ch: string;
  ver: Version;
  value?: SerializedValue;
  owner?: string;
  /**
   * A random key of the batch that stored the value, which checkpoints pointing at it repeat
   * (`ak`): a new process that reads the value by its seq knows it is this very one, not another
   * log's at the same seq.
   */
  k?: string;
}

/** One checkpoint, without its channel values (rebuilt from the blobs on read). */
export interface CheckpointRecord {
  ns: string;
  id: string;
  parent?: string;
  /** The checkpoint with `channel_values` emptied, serialized. */
  cp: SerializedValue;
  /** Its metadata, serialized. */
  md: SerializedValue;
  /** `channel_versions` in plain JSON, so the index can follow blobs without deserializing. */
  vers: Record<string, Version>;
  /** Channels whose value is the one owned by a checkpoint (see {@link BlobRecord.owner}). */
  refs?: Record<string, string>;
  /**
   * Where the value of each channel is: the seq of its blob event (channels with a stored value
   * only). Lets a new process read a checkpoint without folding the thread; absent in records
   * written before it was added (such threads are folded).
   */
  at?: Record<string, number>;
  /**
   * The `k` of each blob `at` names outside the checkpoint's own batch (channels whose blob has
   * one): a value put long before is read on its own, and its key says it is the one named.
   */
  ak?: Record<string, string>;
  /** Seqs of the pending writes stored for this checkpoint before it (writes that overtook its put). */
  wat?: number[];
  /**
   * The seq of the checkpoint before this one in its namespace (by id; -1: none), set only while
   * the namespace is one chain (see {@link ThreadRecord} `chain`): lets a new process list the
   * newest checkpoints without folding the thread.
   */
  prev?: number;
  /** With `prev`: the seqs of the pending writes of that previous checkpoint (all of them). */
  pw?: number[];
}

/** One pending write of a task. `idx` is negative for the special writes (errors, interrupts). */
export interface WriteEntry {
  idx: number;
  ch: string;
  value: SerializedValue;
}

/** The writes of one `putWrites` call. */
export interface WritesRecord {
  ns: string;
  /** The checkpoint the writes belong to. */
  cp: string;
  task: string;
  /** The task path (`""` when LangGraph gave none). */
  path: string;
  writes: WriteEntry[];
}

/** What one stored event says. */
export type ThreadRecord =
  | { kind: 'blob'; blob: BlobRecord }
  | { kind: 'checkpoint'; checkpoint: CheckpointRecord }
  | { kind: 'writes'; writes: WritesRecord }
  | { kind: 'boundary'; batch: string; latest?: LatestIndex; chain?: string[] };

/**
 * Carried by each batch's boundary: per namespace, the seq of the event holding its latest
 * checkpoint once the batch is in (-1: none), for the root namespace and the batch's own. Computed
 * from state the append confirmed and written in the same atomic batch, so the last event of a log
 * always says where its latest checkpoint is.
 */
export type LatestIndex = Record<string, number>;

// `chain` of a boundary: the namespaces (of its `latest`) that are one chain once the batch is in:
// every checkpoint put in ascending id order, each naming the one before (`prev`) and all of that
// one's pending writes (`pw`), and no pending write stored for a stored checkpoint other than the
// latest of its namespace (writes ahead of their checkpoint's put are named by its `wat`). Walking `prev` from the latest then meets every checkpoint newest first, with
// all its writes, as a fold gives them.

/** The `data` of an event holding `record` (the boundary carries its batch id). */
export function recordData(record: ThreadRecord): JsonValue {
  switch (record.kind) {
    case 'blob':
      return { ...record.blob } as unknown as JsonValue;
    case 'checkpoint':
      return { ...record.checkpoint } as unknown as JsonValue;
    case 'writes':
      return {
        ...record.writes,
        writes: record.writes.writes.map((w) => ({ ...w })),
      } as unknown as JsonValue;
    case 'boundary':
      return {
        langgraphBatch: record.batch,
        ...(record.latest !== undefined && { langgraphLatest: { ...record.latest } }),
        ...(record.chain !== undefined && record.chain.length > 0 && { langgraphChain: [...record.chain] }),
      };
  }
}

function corrupt(sessionId: string, seq: number, what: string): TidemarkError {
  return new TidemarkError('CORRUPT', `session ${sessionId} event ${seq}: ${what}`, {
    sessionId,
    location: { seq },
  });
}

type Fields = Record<string, unknown>;
const isObject = (v: unknown): v is Fields => typeof v === 'object' && v !== null && !Array.isArray(v);
const isVersion = (v: unknown): v is Version =>
  typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));

const isSeq = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= -1;
const isSeqList = (v: unknown): v is number[] => Array.isArray(v) && v.every(isSeq);
function isSeqMap(v: unknown): v is Record<string, number> {
  return isObject(v) && Object.values(v).every(isSeq);
}

function isStringMap(v: unknown): v is Record<string, string> {
  return isObject(v) && Object.values(v).every((s) => typeof s === 'string');
}

function isVersionMap(v: unknown): v is Record<string, Version> {
  return isObject(v) && Object.values(v).every(isVersion);
}

function isWriteEntry(v: unknown): v is WriteEntry {
  return isObject(v) && Number.isInteger(v.idx) && typeof v.ch === 'string' && isSerialized(v.value);
}

/**
 * A checkpoint with its hints of where things are (`at`, `ak`, `wat`, `prev`, `pw`), or without
 * them when one does not have its shape: a hint is never trusted blindly (the thread is folded).
 */
function withValidHints(checkpoint: CheckpointRecord): CheckpointRecord {
  const data = checkpoint as unknown as Fields;
  if (
    (data.at !== undefined && !isSeqMap(data.at)) ||
    (data.ak !== undefined && !isStringMap(data.ak)) ||
    (data.wat !== undefined && !isSeqList(data.wat)) ||
    (data.prev !== undefined && !isSeq(data.prev)) ||
    (data.pw !== undefined && !isSeqList(data.pw))
  ) {
    const { at: _at, ak: _ak, wat: _wat, prev: _prev, pw: _pw, ...rest } = checkpoint;
    return rest;
  }
  return checkpoint;
}

/**
 * Reads one stored event back into a record; `undefined` for an event the saver did not write (a
 * boundary of another writer, another program's events). A saver event that does not have its
 * shape is CORRUPT: it is never skipped, since skipping would present an older state as current.
 */
export function parseRecord(
  sessionId: string,
  event: { seq: number; type: string; data: JsonValue },
): ThreadRecord | undefined {
  const { seq, type, data } = event;
  if (!type.startsWith('langgraph/')) {
    if (isObject(data) && typeof data.langgraphBatch === 'string') {
      const latest = data.langgraphLatest;
      const chain = data.langgraphChain;
      // An index that does not have its shape is only a missing hint: the thread is folded instead.
      if (!isSeqMap(latest)) return { kind: 'boundary', batch: data.langgraphBatch };
      return Array.isArray(chain) && chain.every((ns) => typeof ns === 'string')
        ? { kind: 'boundary', batch: data.langgraphBatch, latest, chain }
        : { kind: 'boundary', batch: data.langgraphBatch, latest };
    }
    return undefined;
  }
  if (!isObject(data) || typeof data.ns !== 'string')
    throw corrupt(sessionId, seq, `${type} without a namespace`);
  if (type === EVENT_TYPES.blob) {
    if (
      typeof data.ch !== 'string' ||
      !isVersion(data.ver) ||
      (data.owner !== undefined && typeof data.owner !== 'string') ||
      (data.value !== undefined && !isSerialized(data.value))
    ) {
      throw corrupt(sessionId, seq, 'malformed channel value');
    }
    const blob = data as unknown as BlobRecord;
    if (blob.k !== undefined && typeof blob.k !== 'string') {
      const { k: _k, ...rest } = blob;
      return { kind: 'blob', blob: rest };
    }
    return { kind: 'blob', blob };
  }
  if (type === EVENT_TYPES.checkpoint) {
    const parentOk = data.parent === undefined || typeof data.parent === 'string';
    const refsOk =
      data.refs === undefined ||
      (isObject(data.refs) && Object.values(data.refs).every((r) => typeof r === 'string'));
    if (
      typeof data.id !== 'string' ||
      !parentOk ||
      !isSerialized(data.cp) ||
      !isSerialized(data.md) ||
      !isVersionMap(data.vers) ||
      !refsOk
    ) {
      throw corrupt(sessionId, seq, 'malformed checkpoint');
    }
    return { kind: 'checkpoint', checkpoint: withValidHints(data as unknown as CheckpointRecord) };
  }
  if (type === EVENT_TYPES.writes) {
    const entriesOk = Array.isArray(data.writes) && data.writes.every(isWriteEntry);
    if (
      typeof data.cp !== 'string' ||
      typeof data.task !== 'string' ||
      typeof data.path !== 'string' ||
      !entriesOk
    ) {
      throw corrupt(sessionId, seq, 'malformed pending writes');
    }
    return { kind: 'writes', writes: data as unknown as WritesRecord };
  }
  throw new TidemarkError(
    'UNSUPPORTED_FORMAT',
    `session ${sessionId} event ${seq}: event type ${type} is newer than this version of @tidemark/langgraph knows`,
    { sessionId, location: { seq } },
  );
}
