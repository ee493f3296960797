// The events a thread's session holds, and their validation on the way back in. Every operation is
// one batch: the records it adds, then one boundary event naming the batch, so the batch is
// committed (not an interrupted tail) under the store's default boundary rule and a reload can
// tell whether a batch of ours landed.
import { type JsonValue, TidemarkError } from '@tidemark/core';

/** Event types written by the saver. */
export const EVENT_TYPES = {
  blob: 'langgraph/blob',
  checkpoint: 'langgraph/checkpoint',
  writes: 'langgraph/writes',
} as const;

/** A value serialized by the saver's `SerializerProtocol`: its type tag and its bytes in base64. */
export interface SerializedValue {
  t: string;
  b: string;
}

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
  | { kind: 'boundary'; batch: string };

/** Bytes to the stored form. */
export function encodeBytes(type: string, bytes: Uint8Array): SerializedValue {
  return { t: type, b: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64') };
}

/**
 * The stored form back to bytes. Values of type `bytes` are handed to the caller as they are, so
 * they get an array of their own; any other type is only read by the serializer, which can take
 * a view of the decoded buffer without a copy.
 */
export function decodeBytes(value: SerializedValue): Uint8Array {
  const decoded = Buffer.from(value.b, 'base64');
  if (value.t === 'bytes') return new Uint8Array(decoded);
  return new Uint8Array(decoded.buffer, decoded.byteOffset, decoded.byteLength);
}

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
      return { langgraphBatch: record.batch };
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
const isSerialized = (v: unknown): v is SerializedValue =>
  isObject(v) && typeof v.t === 'string' && typeof v.b === 'string';

function isVersionMap(v: unknown): v is Record<string, Version> {
  return isObject(v) && Object.values(v).every(isVersion);
}

function isWriteEntry(v: unknown): v is WriteEntry {
  return isObject(v) && Number.isInteger(v.idx) && typeof v.ch === 'string' && isSerialized(v.value);
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
    if (isObject(data) && typeof data.langgraphBatch === 'string')
      return { kind: 'boundary', batch: data.langgraphBatch };
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
    return { kind: 'blob', blob: data as unknown as BlobRecord };
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
    return { kind: 'checkpoint', checkpoint: data as unknown as CheckpointRecord };
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
