// Which checkpoints a `list` call returns from a thread's state, and which calls a cold walk can
// answer without folding the thread. Pure: no I/O.
import type { RunnableConfig } from '@langchain/core/runnables';
import {
  type CheckpointListOptions,
  type CheckpointMetadata,
  getCheckpointId,
} from '@langchain/langgraph-checkpoint';
import { MAX_COLD_LIST } from './cold-read.js';
import type { CheckpointRecord } from './records.js';
import type { ThreadState } from './thread-state.js';
import { type GatheredTuple, gatherTuple } from './tuples.js';

/**
 * True for a `list` a cold walk answers: a limit small enough to walk, no metadata filter, no
 * `before` and no `checkpoint_id` (which need the whole namespace).
 */
export function coldListable(config: RunnableConfig, options: CheckpointListOptions): boolean {
  const { limit, filter, before } = options;
  return (
    limit !== undefined &&
    limit <= MAX_COLD_LIST &&
    (filter === undefined || Object.keys(filter).length === 0) &&
    before === undefined &&
    !getCheckpointId(config)
  );
}

/** The candidates `list` considers in one thread, newest first (at most `wanted`). */
export function selectCheckpoints(
  state: ThreadState,
  threadId: string,
  config: RunnableConfig,
  options: CheckpointListOptions,
  wanted: number,
): GatheredTuple[] {
  const nsFilter = config.configurable?.checkpoint_ns;
  const idFilter = getCheckpointId(config);
  const beforeId = options.before === undefined ? undefined : getCheckpointId(options.before) || undefined;
  const namespaces = typeof nsFilter === 'string' ? [nsFilter] : state.namespaces();
  const candidates: { ns: string; record: CheckpointRecord }[] = [];
  for (const ns of namespaces) {
    for (const record of state.newestFirst(ns, beforeId)) {
      if (idFilter && record.id !== idFilter) continue;
      candidates.push({ ns, record });
    }
  }
  // Namespaces interleave by checkpoint id, newest first, as one thread's history (one namespace
  // comes newest first already).
  if (namespaces.length > 1)
    candidates.sort((a, b) =>
      a.record.id < b.record.id ? 1 : a.record.id > b.record.id ? -1 : a.ns < b.ns ? -1 : 1,
    );
  return candidates.slice(0, wanted).map(({ ns, record }) => gatherTuple(state, threadId, ns, record));
}

export function metadataMatches(
  metadata: CheckpointMetadata | undefined,
  filter: Record<string, unknown>,
): boolean {
  const fields = (metadata ?? {}) as Record<string, unknown>;
  return Object.entries(filter).every(([key, value]) => {
    const actual = fields[key];
    if (actual === value) return true;
    return typeof value === 'object' && value !== null && JSON.stringify(actual) === JSON.stringify(value);
  });
}
