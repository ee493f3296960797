// Finding this adapter's sessions through `list`: threads by resource (their `cwd`), workflow runs,
// every record of a kind. A session `list` cannot describe is an error here when it may be one of
// ours (its id has one of our prefixes), so a fault never makes a thread or a run look absent.
import { listAll, type SessionStore } from '@tidemark/core';
import type { JsonObject } from './codec.js';
import { KIND } from './ids.js';
import { isCurrent, removeSession } from './session-log.js';

/** The record kinds, as stored in a summary's `attrs.mastra`. */
export type RecordKind = 'thread' | 'resource' | 'run';

const PREFIXES: Record<RecordKind, string[]> = {
  thread: [`${KIND.thread}.`, `${KIND.thread}h.`],
  resource: [`${KIND.resource}.`, `${KIND.resource}h.`],
  run: [`${KIND.run}.`, `${KIND.run}h.`],
};

const isKind = (id: string, kind: RecordKind): boolean =>
  PREFIXES[kind].some((prefix) => id.startsWith(prefix));

/** A listed record: its session id and its summary's attrs. */
export interface Listed {
  sessionId: string;
  attrs: JsonObject;
  /** Whether the attrs mirror the log's last batch (`isCurrent` in session-log.ts). */
  current: boolean;
}

/**
 * Every session of `kind` (under `cwd` when given), from the summaries alone.
 * @throws TidemarkError the problem of a session of this kind that `list` could not describe.
 */
export async function listSessions(store: SessionStore, kind: RecordKind, cwd?: string): Promise<Listed[]> {
  const out: Listed[] = [];
  for await (const entry of listAll(store, cwd === undefined ? {} : { cwd })) {
    if ('problem' in entry) {
      if (isKind(entry.problem.id, kind)) throw entry.problem.error;
      continue;
    }
    const attrs = entry.summary.attrs as JsonObject | undefined;
    if (isKind(entry.summary.id, kind) && attrs?.mastra === kind)
      out.push({ sessionId: entry.summary.id, attrs, current: isCurrent(entry.summary) });
  }
  return out;
}

/** Deletes every session of the given kinds. */
export async function removeAll(store: SessionStore, kinds: readonly RecordKind[]): Promise<void> {
  for (const kind of kinds) {
    for (const listed of await listSessions(store, kind)) await removeSession(store, listed.sessionId);
  }
}
