// From the folded index to LangGraph's tuples, in two steps: `gatherTuple` picks the records a
// tuple needs while the thread is locked (no I/O), `materializeTuple` deserializes them after.
import type { RunnableConfig } from '@langchain/core/runnables';
import {
  type Checkpoint,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  maxChannelVersion,
  type SerializerProtocol,
  TASKS,
} from '@langchain/langgraph-checkpoint';
import { isPlainJsonSerde, plainJsonText, plainJsonValue } from './plain-json.js';
import type { CheckpointRecord, SerializedValue, Version } from './records.js';
import type { StoredWrite, ThreadState } from './thread-state.js';
import { decodeForSerde, smallValueKey } from './values.js';

/** The records one tuple is made of. */
export interface GatheredTuple {
  threadId: string;
  ns: string;
  record: CheckpointRecord;
  /** The stored value of each channel of `record.vers` that has one. */
  values: [string, SerializedValue][];
  writes: readonly StoredWrite[];
  /** The parent's `__pregel_tasks` writes, for a checkpoint older than format 4. */
  parentSends: StoredWrite[];
}

/** Picks what a tuple of `record` needs from `state`. */
export function gatherTuple(
  state: ThreadState,
  threadId: string,
  ns: string,
  record: CheckpointRecord,
): GatheredTuple {
  const values: [string, SerializedValue][] = [];
  for (const ch of Object.keys(record.vers)) {
    const stored = state.channelBlob(ns, record, ch)?.value;
    if (stored !== undefined) values.push([ch, stored]);
  }
  const parentSends =
    record.parent === undefined ? [] : state.orderedWrites(ns, record.parent).filter((w) => w.ch === TASKS);
  return { threadId, ns, record, values, writes: state.orderedWrites(ns, record.id), parentSends };
}

/** The config naming one checkpoint. */
export function checkpointConfig(threadId: string, ns: string, id: string): RunnableConfig {
  return { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: id } };
}

/**
 * Deserializes a stored value: a promise of it, or the value itself when it is `json` and LangGraph's
 * own serializer would only parse or copy it (see plain-json.ts).
 */
export function loadValue(serde: SerializerProtocol, value: SerializedValue): unknown {
  const plain = plainJsonOf(serde, value);
  return plain === undefined ? deserialize(serde, value.t, decodeForSerde(value)) : plain.value;
}

/** {@link plainJsonValue} of a `json` value held as JSON (`j`), when `serde` is LangGraph's own. */
function plainJsonOf(serde: SerializerProtocol, value: SerializedValue): { value: unknown } | undefined {
  if (value.t !== 'json' || !Object.hasOwn(value, 'j') || !isPlainJsonSerde(serde)) return undefined;
  return plainJsonValue(value.j ?? null);
}

/**
 * `serde.loadsTyped(type, data)`, or for `json` text under LangGraph's own serializer a plain parse
 * of it when that is what the serializer gives ({@link plainJsonText}).
 */
function deserialize(serde: SerializerProtocol, type: string, data: Uint8Array | string): unknown {
  if (type === 'json' && typeof data === 'string' && isPlainJsonSerde(serde)) {
    const plain = plainJsonText(data);
    if (plain !== undefined) return plain.value;
  }
  return serde.loadsTyped(type, data);
}

/** Stored values this short (characters of their stored form) are remembered by their content: `null`, `1`, `""`... */
const SMALL_VALUE = 64;

const isPrimitive = (v: unknown): boolean => v === null || (typeof v !== 'object' && typeof v !== 'function');

/** A channel value decoded for the serializer, and its result when that is a primitive. */
interface DecodedEntry {
  value: SerializedValue;
  bytes: Uint8Array | string;
  primitive?: { loaded: unknown };
}

/**
 * Characters (or bytes) of decoded values a saver keeps between reads, at most. A channel value too
 * large to store inline is deflated, and every read of it inflates it again: the latest checkpoint's
 * value read by each warm `getTuple`, or an unchanged channel by each `list`.
 */
const DECODED_BUDGET = 16 * 1024 * 1024;

/**
 * Decoded channel values a saver keeps between reads, least recently used dropped first, within
 * {@link DECODED_BUDGET}. Keyed by the stored form object itself, which the saver's folded state
 * holds: a stored value never changes, so its decoding (and a primitive it deserializes to, which no
 * caller can change) is the same on every read; a thread read again from the store has new objects.
 */
export class DecodedValues {
  private readonly entries = new Map<SerializedValue, DecodedEntry>();
  private size = 0;

  get(value: SerializedValue): DecodedEntry | undefined {
    const entry = this.entries.get(value);
    if (entry !== undefined) {
      this.entries.delete(value);
      this.entries.set(value, entry);
    }
    return entry;
  }

  set(entry: DecodedEntry): void {
    const size = sizeOf(entry.bytes);
    if (size > DECODED_BUDGET || this.entries.has(entry.value)) return;
    this.entries.set(entry.value, entry);
    this.size += size;
    for (const [value, oldest] of this.entries) {
      if (this.size <= DECODED_BUDGET) break;
      this.entries.delete(value);
      this.size -= sizeOf(oldest.bytes);
    }
  }
}

const sizeOf = (bytes: Uint8Array | string): number =>
  typeof bytes === 'string' ? bytes.length : bytes.byteLength;

/**
 * What the tuples of one read share when deserializing. A value that the serializer turns into a
 * primitive (a string, a number, `null`, ...) is deserialized once and handed to every tuple that
 * holds the same stored value, since nothing a caller does to an immutable value can reach another
 * tuple; an object is deserialized again for each tuple, so tuples never share a mutable value.
 * Two kinds of the same value are recognised: a channel's stored value met again (`list` returns
 * newest first, and an unchanged channel carries one stored value through all its checkpoints),
 * and short values equal in content (LangGraph's branch channels and many writes hold `null` or
 * small numbers). Values of type `bytes` are left out: the serializer hands those bytes out as
 * the value itself.
 */
export class ValueMemo {
  private readonly lastOfChannel = new Map<string, DecodedEntry>();
  /** Primitives of short values, by type, then base64. */
  private readonly small = new Map<string, Map<string, unknown>>();

  /** `decoded`: the saver's decoded values, shared with its other reads. */
  constructor(private readonly decoded?: DecodedValues) {}

  /** Deserializes the stored value of channel `ch`. */
  async channel(serde: SerializerProtocol, ch: string, value: SerializedValue): Promise<unknown> {
    if (value.t === 'bytes' || smallValueKey(value, SMALL_VALUE) !== undefined)
      return this.value(serde, value);
    // A copy for each tuple: no text kept to parse again.
    const plain = plainJsonOf(serde, value);
    if (plain !== undefined) return plain.value;
    let entry = this.lastOfChannel.get(ch);
    if (entry?.value !== value) {
      entry = this.decoded?.get(value);
      if (entry === undefined) {
        entry = { value, bytes: decodeForSerde(value) };
        this.decoded?.set(entry);
      }
      this.lastOfChannel.set(ch, entry);
    }
    if (entry.primitive !== undefined) return entry.primitive.loaded;
    const loaded: unknown = await deserialize(serde, value.t, entry.bytes);
    if (isPrimitive(loaded)) entry.primitive = { loaded };
    return loaded;
  }

  /** Deserializes a stored value (a write, or a channel's). */
  async value(serde: SerializerProtocol, value: SerializedValue): Promise<unknown> {
    const key = value.t === 'bytes' ? undefined : smallValueKey(value, SMALL_VALUE);
    if (key === undefined) return loadValue(serde, value);
    const ofType = this.small.get(value.t);
    if (ofType?.has(key)) return ofType.get(key);
    const loaded = await loadValue(serde, value);
    if (isPrimitive(loaded)) {
      if (ofType === undefined) this.small.set(value.t, new Map([[key, loaded]]));
      else ofType.set(key, loaded);
    }
    return loaded;
  }
}

/** Deserializes stored writes as LangGraph's pending writes (through `memo` when given). */
export function loadWrites(
  serde: SerializerProtocol,
  writes: readonly StoredWrite[],
  memo?: ValueMemo,
): Promise<CheckpointPendingWrite[]> {
  return Promise.all(
    writes.map(
      async (w): Promise<CheckpointPendingWrite> => [
        w.task,
        w.ch,
        await (memo === undefined ? loadValue(serde, w.value) : memo.value(serde, w.value)),
      ],
    ),
  );
}

/**
 * The tuple of a gathered checkpoint: `channel_values` rebuilt from the blobs its
 * `channel_versions` name (decoded through `memo`, shared by the tuples of one read); for a
 * checkpoint older than format 4, the parent's pending sends moved
 * into `channel_values[TASKS]` as LangGraph's own savers do.
 */
export async function materializeTuple(
  serde: SerializerProtocol,
  gathered: GatheredTuple,
  nextVersion: (current: Version | undefined) => Version,
  memo: ValueMemo = new ValueMemo(),
): Promise<CheckpointTuple> {
  const { threadId, ns, record } = gathered;
  const checkpoint = (await loadValue(serde, record.cp)) as Checkpoint;
  const channelValues: Record<string, unknown> = {};
  for (const [ch, value] of gathered.values) channelValues[ch] = await memo.channel(serde, ch, value);
  checkpoint.channel_values = channelValues;
  if (checkpoint.v < 4 && record.parent !== undefined) {
    channelValues[TASKS] = await Promise.all(gathered.parentSends.map((w) => memo.value(serde, w.value)));
    const versions = Object.values(checkpoint.channel_versions ?? {});
    checkpoint.channel_versions = {
      ...checkpoint.channel_versions,
      [TASKS]: versions.length > 0 ? maxChannelVersion(...versions) : nextVersion(undefined),
    };
  }
  const tuple: CheckpointTuple = {
    config: checkpointConfig(threadId, ns, record.id),
    checkpoint,
    metadata: (await loadValue(serde, record.md)) as CheckpointMetadata,
    pendingWrites: await loadWrites(serde, gathered.writes, memo),
  };
  if (record.parent !== undefined) tuple.parentConfig = checkpointConfig(threadId, ns, record.parent);
  return tuple;
}

/** What a delta-history walk picked for one channel: the writes per ancestor (newest first) and the seed. */
export interface GatheredHistory {
  writesNewestFirst: StoredWrite[][];
  seed?: SerializedValue;
}

/**
 * Walks the parent chain of `id` (the target's own writes are pending for the next step and left
 * out), collecting each channel's writes until the nearest ancestor holding a stored value for it.
 */
export function gatherDeltaHistory(
  state: ThreadState,
  ns: string,
  id: string,
  channels: readonly string[],
): Map<string, GatheredHistory> {
  const result = new Map<string, GatheredHistory>(channels.map((ch) => [ch, { writesNewestFirst: [] }]));
  const remaining = new Set(channels);
  const visited = new Set<string>();
  let current = state.checkpoint(ns, id)?.parent;
  while (current !== undefined && remaining.size > 0 && !visited.has(current)) {
    visited.add(current);
    const ancestor = state.checkpoint(ns, current);
    if (ancestor === undefined) break;
    const writes = state.orderedWrites(ns, current);
    for (const ch of [...remaining]) {
      const entry = result.get(ch)!;
      entry.writesNewestFirst.push(writes.filter((w) => w.ch === ch));
      const stored = state.channelBlob(ns, ancestor, ch)?.value;
      if (stored !== undefined) {
        entry.seed = stored;
        remaining.delete(ch);
      }
    }
    current = ancestor.parent;
  }
  return result;
}
