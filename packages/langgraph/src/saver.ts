// TidemarkSaver: LangGraph's BaseCheckpointSaver over any tidemark SessionStore. One session per
// thread; put, putWrites and deleteThread are one store operation each (a batch, or the delete),
// so a crash never applies one half-way; reads fold the thread's log into an index kept per thread.
import type { RunnableConfig } from '@langchain/core/runnables';
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
  copyCheckpoint,
  type DeltaChannelHistory,
  getCheckpointId,
  type PendingWrite,
  type SerializerProtocol,
  WRITES_IDX_MAP,
} from '@langchain/langgraph-checkpoint';
import { listAll, type SessionStore, TidemarkError } from '@tidemark/core';
import { Handouts, NO_CHECKPOINT } from './handouts.js';
import { coldListable, metadataMatches, selectCheckpoints } from './listing.js';
import {
  type BlobRecord,
  type CheckpointRecord,
  encodeBytes,
  type ThreadRecord,
  type Version,
  type WriteEntry,
} from './records.js';
import { isThreadSessionId, sessionIdOfThread } from './thread-ids.js';
import { THREAD_ATTR, ThreadLog } from './thread-log.js';
import { sameWrite, type ThreadState } from './thread-state.js';
import {
  checkpointConfig,
  DecodedValues,
  type GatheredTuple,
  gatherDeltaHistory,
  gatherTuple,
  loadValue,
  loadWrites,
  materializeTuple,
  ValueMemo,
} from './tuples.js';
import { sameSerialized } from './values.js';

/** Options of {@link TidemarkSaver}. */
export interface TidemarkSaverOptions {
  /** How values become bytes; LangGraph's `JsonPlusSerializer` by default. */
  serde?: SerializerProtocol;
  /**
   * Threads whose folded index is kept in memory (least recently used dropped first). A thread not
   * in memory is folded from its log on its next use. Default 64.
   */
  maxCachedThreads?: number;
}

/**
 * A LangGraph checkpointer that keeps each thread as one tidemark session, on any backend.
 *
 * Channel values are stored once per (namespace, channel, version), only for the channels a
 * `put` names in `newVersions`; `channel_values` is rebuilt from `channel_versions` on read. A
 * storage fault rejects the call with a `TidemarkError`, which LangGraph reports from the run;
 * another process writing the same thread at the same time is such an error (CONFLICT), never a
 * checkpoint silently lost.
 */
export class TidemarkSaver extends BaseCheckpointSaver {
  private readonly log: ThreadLog;
  /** Channel values decoded by earlier reads (a cache of pure decodings of stored values). */
  private readonly decoded = new DecodedValues();
  private readonly handouts: Handouts;

  /** @param store - any tidemark store; the saver does not close it. */
  constructor(
    private readonly store: SessionStore,
    options: TidemarkSaverOptions = {},
  ) {
    super(options.serde);
    this.log = new ThreadLog(store, options.maxCachedThreads ?? 64);
    this.handouts = new Handouts(Math.max(1024, options.maxCachedThreads ?? 64));
  }

  /** The checkpoint named by `config` (the thread's newest in its namespace without a `checkpoint_id`). */
  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const threadId = threadIdOf(config);
    if (threadId === undefined) return undefined;
    const ns = namespaceOf(config);
    const id = getCheckpointId(config);
    const sessionId = sessionIdOfThread(threadId);
    const pick = (state: ThreadState) => {
      const record = id ? state.checkpoint(ns, id) : state.latest(ns);
      // Marked inside the thread's queue, in the order of the reads and writes it answers.
      if (id) this.handouts.mark(sessionId, ns, id, 'explicit');
      else this.handouts.mark(sessionId, ns, record?.id ?? NO_CHECKPOINT, 'latest');
      return record === undefined ? undefined : gatherTuple(state, threadId, ns, record);
    };
    if (id) {
      const gathered = await this.log.read(threadId, sessionId, pick);
      return gathered === undefined ? undefined : this.materialize(gathered);
    }
    const latest = await this.log.readLatest(threadId, sessionId, ns, async (state, cold) => {
      const gathered = pick(state);
      return { gathered, cold };
    });
    if (latest.gathered === undefined) return undefined;
    const tuple = await this.materialize(latest.gathered);
    // A checkpoint older than format 4 takes its parent's pending sends, which a cold read leaves out.
    if (latest.cold && tuple.checkpoint.v < 4 && tuple.parentConfig !== undefined) {
      const gathered = await this.log.read(threadId, sessionId, pick);
      return gathered === undefined ? undefined : this.materialize(gathered);
    }
    return tuple;
  }

  /**
   * The checkpoints of a thread (every thread without `thread_id`), newest first, filtered by
   * namespace, `before`, metadata `filter` (each key equal) and cut at `limit`.
   */
  async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const { limit, filter } = options;
    let remaining = limit ?? Number.POSITIVE_INFINITY;
    if (remaining <= 0) return;
    const threadId = threadIdOf(config);
    const ns: unknown = config.configurable?.checkpoint_ns;
    if (threadId !== undefined && typeof ns === 'string' && coldListable(config, options)) {
      // The newest checkpoints of one namespace: a saver that does not hold the thread walks them
      // back from the latest instead of folding it.
      yield* this.listNewest(threadId, ns, config, options, remaining);
      return;
    }
    const threads = threadId === undefined ? this.listThreads() : oneThread(threadId);
    for await (const thread of threads) {
      const wanted =
        filter === undefined || Object.keys(filter).length === 0 ? remaining : Number.POSITIVE_INFINITY;
      const gathered = await this.log.read(thread, sessionIdOfThread(thread), (state) =>
        selectCheckpoints(state, thread, config, options, wanted),
      );
      const memo = new ValueMemo(this.decoded);
      for (const candidate of gathered) {
        const tuple = await this.materialize(candidate, memo);
        if (filter !== undefined && !metadataMatches(tuple.metadata, filter)) continue;
        yield tuple;
        remaining -= 1;
        if (remaining <= 0) return;
      }
    }
  }

  /** `list` of the newest `limit` checkpoints of one namespace of a thread (no filter, no `before`). */
  private async *listNewest(
    threadId: string,
    ns: string,
    config: RunnableConfig,
    options: CheckpointListOptions,
    limit: number,
  ): AsyncGenerator<CheckpointTuple> {
    const sessionId = sessionIdOfThread(threadId);
    const select = (state: ThreadState) => selectCheckpoints(state, threadId, config, options, limit);
    const { gathered, cold } = await this.log.readNewest(threadId, sessionId, ns, limit, (state, cold) => ({
      gathered: select(state),
      cold,
    }));
    const memo = new ValueMemo(this.decoded);
    const tuples: CheckpointTuple[] = [];
    for (const candidate of gathered) tuples.push(await this.materialize(candidate, memo));
    // A checkpoint older than format 4 takes its parent's pending sends, which a walk may not hold.
    if (cold && tuples.some((tuple) => tuple.checkpoint.v < 4 && tuple.parentConfig !== undefined)) {
      const folded = await this.log.read(threadId, sessionId, select);
      const again = new ValueMemo(this.decoded);
      for (const candidate of folded) yield await this.materialize(candidate, again);
      return;
    }
    yield* tuples;
  }

  /** Stores a checkpoint and the channel values of `newVersions` as one batch. */
  async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    const threadId = requireThreadId(config, 'put');
    const ns = namespaceOf(config);
    if (typeof checkpoint.id !== 'string' || checkpoint.id === '')
      throw new Error('put: the checkpoint has no id');
    const copy = copyCheckpoint(checkpoint);
    const parent: unknown = config.configurable?.checkpoint_id;
    const parentId = typeof parent === 'string' && parent !== '' ? parent : undefined;
    const sessionId = sessionIdOfThread(threadId);
    const serialized = this.serializeCheckpoint(ns, copy, metadata, newVersions, parentId);
    let prepared: Awaited<typeof serialized> | undefined;
    await this.log.write(
      threadId,
      sessionId,
      (state) => {
        const { record, values } = prepared!;
        const { blobs, refs } = placeBlobs(state, record, values);
        const placed: CheckpointRecord = Object.keys(refs).length > 0 ? { ...record, refs } : record;
        const stored = state.checkpoint(ns, record.id);
        // The same checkpoint again (a retry of a put that landed): nothing to store.
        if (blobs.length === 0 && stored !== undefined && sameCheckpoint(stored, placed)) return [];
        this.requireLatest(state, threadId, sessionId, ns, parentId ?? NO_CHECKPOINT, 'put');
        return [
          ...blobs.map((blob): ThreadRecord => ({ kind: 'blob', blob })),
          { kind: 'checkpoint', checkpoint: placed },
        ];
      },
      serialized.then((done) => {
        prepared = done;
      }),
    );
    this.handouts.put(sessionId, ns, checkpoint.id);
    return checkpointConfig(threadId, ns, checkpoint.id);
  }

  /**
   * Stores the writes of one task against a checkpoint as one batch. A retry stores nothing twice:
   * regular writes already stored are kept, special writes (errors, interrupts) are replaced.
   */
  async putWrites(
    config: RunnableConfig,
    writes: PendingWrite[],
    taskId: string,
    taskPath?: string,
  ): Promise<void> {
    const threadId = requireThreadId(config, 'putWrites');
    const checkpointId = config.configurable?.checkpoint_id;
    if (typeof checkpointId !== 'string' || checkpointId === '') {
      throw new Error('putWrites: the config has no "checkpoint_id" in its "configurable"');
    }
    const ns = namespaceOf(config);
    const path = taskPath ?? '';
    const sessionId = sessionIdOfThread(threadId);
    let entries: WriteEntry[] = [];
    const serialized = Promise.all(
      writes.map(
        async ([ch, value], i): Promise<WriteEntry> => ({
          idx: WRITES_IDX_MAP[ch] ?? i,
          ch,
          value: encodeBytes(...(await this.serde.dumpsTyped(value))),
        }),
      ),
    );
    await this.log.write(
      threadId,
      sessionId,
      (state) => {
        const fresh = entries.filter((entry) => {
          const stored = state.write(ns, checkpointId, taskId, entry.idx);
          if (stored === undefined) return true;
          return entry.idx < 0 && !sameWrite(stored, path, entry);
        });
        if (fresh.length === 0) return [];
        // Writes a run makes for a checkpoint it already built on (this saver's last put has it
        // as its parent) arrive late, not from a stale run.
        const latest = state.latest(ns);
        const ownChild =
          latest !== undefined &&
          latest.parent === checkpointId &&
          this.handouts.lastPut(sessionId, ns) === latest.id;
        if (!ownChild) this.requireLatest(state, threadId, sessionId, ns, checkpointId, 'putWrites');
        return [{ kind: 'writes', writes: { ns, cp: checkpointId, task: taskId, path, writes: fresh } }];
      },
      serialized.then((done) => {
        entries = done;
      }),
    );
  }

  /** Deletes every checkpoint and write of a thread (its session), in one store operation. */
  async deleteThread(threadId: string): Promise<void> {
    const sessionId = sessionIdOfThread(String(threadId));
    await this.log.delete(sessionId);
    this.handouts.forget(sessionId);
  }

  /**
   * Per channel, the writes along the parent chain of the checkpoint back to the nearest ancestor
   * that stored a value for it (the seed), oldest first, from the folded index.
   */
  override async getDeltaChannelHistory(options: {
    config: RunnableConfig;
    channels: string[];
  }): Promise<Record<string, DeltaChannelHistory>> {
    const { config, channels } = options;
    if (channels.length === 0) return {};
    const threadId = threadIdOf(config);
    const ns = namespaceOf(config);
    const gathered =
      threadId === undefined
        ? undefined
        : await this.log.read(threadId, sessionIdOfThread(threadId), (state) => {
            const id = getCheckpointId(config) || state.latest(ns)?.id;
            return id ? gatherDeltaHistory(state, ns, id, channels) : undefined;
          });
    const result: Record<string, DeltaChannelHistory> = {};
    for (const ch of channels) {
      const history = gathered?.get(ch);
      const oldestFirst = [...(history?.writesNewestFirst ?? [])].reverse().flat();
      const entry: DeltaChannelHistory = { writes: await loadWrites(this.serde, oldestFirst) };
      if (history?.seed !== undefined) entry.seed = await loadValue(this.serde, history.seed);
      result[ch] = entry;
    }
    return result;
  }

  /**
   * Refuses a write that builds on `parentId` (or on an empty namespace, {@link NO_CHECKPOINT})
   * when this saver handed that out as the latest of its namespace and it no longer is: another
   * run got there first, and writing would fork the thread and hide that run's checkpoints.
   */
  private requireLatest(
    state: ThreadState,
    threadId: string,
    sessionId: string,
    ns: string,
    parentId: string,
    operation: string,
  ): void {
    if (!this.handouts.handedAsLatest(sessionId, ns, parentId)) return;
    const latest = state.latest(ns)?.id ?? NO_CHECKPOINT;
    if (latest === parentId) return;
    const built = parentId === NO_CHECKPOINT ? 'an empty thread' : `checkpoint ${parentId}`;
    throw new TidemarkError(
      'CONFLICT',
      `${operation}: thread ${JSON.stringify(threadId)} (namespace ${JSON.stringify(ns)}) moved on: this write builds on ${built}, read as the latest, but the latest is now ${latest === NO_CHECKPOINT ? 'none (the thread was deleted)' : latest}, written by another run; nothing was written. Run the graph again to continue from the latest checkpoint, or pass a checkpoint_id to fork from an earlier one.`,
      { sessionId, retryable: true },
    );
  }

  /** A put's checkpoint record (without refs) and channel values, serialized. */
  private async serializeCheckpoint(
    ns: string,
    copy: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
    parentId: string | undefined,
  ): Promise<{ record: CheckpointRecord; values: BlobRecord[] }> {
    const [cp, md] = await Promise.all([
      this.serde.dumpsTyped({ ...copy, channel_values: {} }),
      this.serde.dumpsTyped(metadata),
    ]);
    const record: CheckpointRecord = {
      ns,
      id: copy.id,
      ...(parentId !== undefined && { parent: parentId }),
      cp: encodeBytes(...cp),
      md: encodeBytes(...md),
      vers: plainVersions(copy.channel_versions),
    };
    const values = await Promise.all(
      Object.entries(plainVersions(newVersions)).map(async ([ch, ver]): Promise<BlobRecord> => {
        if (!Object.hasOwn(copy.channel_values, ch) || copy.channel_values[ch] === undefined)
          return { ns, ch, ver };
        return { ns, ch, ver, value: encodeBytes(...(await this.serde.dumpsTyped(copy.channel_values[ch]))) };
      }),
    );
    return { record, values };
  }

  private materialize(gathered: GatheredTuple, memo?: ValueMemo): Promise<CheckpointTuple> {
    return materializeTuple(
      this.serde,
      gathered,
      (current) => this.getNextVersion(current as number | undefined),
      memo ?? new ValueMemo(this.decoded),
    );
  }

  /** Every thread of the store, by the thread id its session's summary names. */
  private async *listThreads(): AsyncGenerator<string> {
    for await (const entry of listAll(this.store)) {
      if ('problem' in entry) {
        // A thread's session that cannot be described is an error, never a thread left out.
        if (isThreadSessionId(entry.problem.id)) throw entry.problem.error;
        continue;
      }
      const thread = entry.summary.attrs?.[THREAD_ATTR];
      if (typeof thread === 'string' && isThreadSessionId(entry.summary.id)) yield thread;
    }
  }
}

async function* oneThread(threadId: string): AsyncGenerator<string> {
  yield threadId;
}

function threadIdOf(config: RunnableConfig): string | undefined {
  const id: unknown = config.configurable?.thread_id;
  if (id === undefined || id === null) return undefined;
  if (typeof id === 'string') return id;
  if (typeof id === 'number' && Number.isFinite(id)) return String(id);
  throw new Error(`thread_id must be a string (got ${typeof id})`);
}

function requireThreadId(config: RunnableConfig, operation: string): string {
  const threadId = threadIdOf(config);
  if (threadId === undefined) {
    throw new Error(
      `${operation}: the config has no "thread_id" in its "configurable"; a checkpointer needs one, e.g. graph.invoke(input, { configurable: { thread_id: "1" } })`,
    );
  }
  return threadId;
}

function namespaceOf(config: RunnableConfig): string {
  const ns: unknown = config.configurable?.checkpoint_ns;
  if (ns === undefined || ns === null) return '';
  if (typeof ns !== 'string') throw new Error(`checkpoint_ns must be a string (got ${typeof ns})`);
  return ns;
}

function plainVersions(versions: ChannelVersions): Record<string, Version> {
  const plain: Record<string, Version> = {};
  for (const [ch, ver] of Object.entries(versions ?? {})) {
    if (typeof ver !== 'string' && !(typeof ver === 'number' && Number.isFinite(ver))) {
      throw new Error(`channel ${JSON.stringify(ch)}: a version must be a string or a finite number`);
    }
    plain[ch] = ver;
  }
  return plain;
}

function sameCheckpoint(a: CheckpointRecord, b: CheckpointRecord): boolean {
  const same = a.parent === b.parent && sameSerialized(a.cp, b.cp) && sameSerialized(a.md, b.md);
  return same && JSON.stringify(a.refs ?? {}) === JSON.stringify(b.refs ?? {});
}

function sameValue(a: BlobRecord, b: BlobRecord): boolean {
  return sameSerialized(a.value, b.value);
}

/**
 * Which of a put's channel values to store, and where. A version not stored yet gets its value
 * under (namespace, channel, version); the same value again is stored nothing. A different value
 * for a stored version (a fork in the same thread reaching the version numbers of the branch it
 * left) is stored as owned by this checkpoint, which names it in `refs`; a checkpoint carrying an
 * unchanged channel from its parent inherits the parent's ref.
 */
function placeBlobs(
  state: ThreadState,
  record: CheckpointRecord,
  values: readonly BlobRecord[],
): { blobs: BlobRecord[]; refs: Record<string, string> } {
  const { ns } = record;
  const blobs: BlobRecord[] = [];
  const refs: Record<string, string> = {};
  const written = new Set<string>();
  for (const value of values) {
    written.add(value.ch);
    const plain = state.blob(ns, value.ch, value.ver);
    if (plain === undefined) blobs.push(value);
    else if (!sameValue(plain, value) && record.vers[value.ch] === value.ver) {
      refs[value.ch] = record.id;
      const owned = state.blob(ns, value.ch, value.ver, record.id);
      if (owned === undefined || !sameValue(owned, value)) blobs.push({ ...value, owner: record.id });
    }
  }
  const parent = record.parent === undefined ? undefined : state.checkpoint(ns, record.parent);
  for (const [ch, ver] of Object.entries(record.vers)) {
    const inherited = parent?.refs?.[ch];
    if (!written.has(ch) && inherited !== undefined && parent?.vers[ch] === ver) refs[ch] = inherited;
  }
  return { blobs, refs };
}
