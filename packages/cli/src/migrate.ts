// The core of `tidemark migrate`: copy every session of one store into another, then verify the
// target. Works on stores, not addresses; the command adds the audit log and the output.
import type { SessionStore, SessionSummary } from '@tidemark/core';
import { type CopyResult, copySession } from '@tidemark/lifecycle';
import { describeFailure } from './exit-codes.js';

/** A session that could not be read, copied or verified: its code and one-line message. */
export interface MigrateFailure {
  id: string;
  code: string;
  message: string;
}

/** Options of {@link migrateSessions}. */
export interface MigrateOptions {
  /** Called before each session is copied (`done` of `total`), and once with `done === total`. */
  onProgress?: (done: number, total: number, id?: string) => void;
  /**
   * Called after a session was copied or resumed (not when it was already complete), e.g. to
   * record it in the audit log. A rejection counts as a failure of that session.
   */
  onCopied?: (result: CopyResult) => Promise<void>;
}

/** What {@link migrateSessions} did. */
export interface MigrateReport {
  /** Every session the source listed, in the order they were copied (by id). */
  ids: string[];
  /** The sessions copied (or found complete) and verified by sha256 while copying. */
  results: CopyResult[];
  /** Sessions whose copy failed. */
  failed: MigrateFailure[];
  /** Sessions the source could not describe (not copied). */
  problems: MigrateFailure[];
  /** Copied sessions the final pass over the target did not find with their event count. */
  missing: string[];
}

/** The summary of one session, through list (which reads no event logs). */
async function findSummary(store: SessionStore, id: string): Promise<SessionSummary | undefined> {
  let cursor: string | undefined;
  do {
    const page = await store.list({ limit: 1000, ...(cursor !== undefined && { cursor }) });
    const found = page.sessions.find((s) => s.id === id);
    if (found !== undefined) return found;
    const problem = page.problems.find((p) => p.id === id);
    if (problem !== undefined) throw problem.error;
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return undefined;
}

/**
 * Copies every session `from` lists into `to` with {@link copySession} (resumable: complete
 * sessions are skipped, partial ones continue), in id order, then checks that every copied
 * session is in the target with its event count. The source is only read.
 */
export async function migrateSessions(
  from: SessionStore,
  to: SessionStore,
  options: MigrateOptions = {},
): Promise<MigrateReport> {
  const summaries = new Map<string, SessionSummary>();
  const problems: MigrateFailure[] = [];
  let cursor: string | undefined;
  do {
    const page = await from.list({ limit: 1000, ...(cursor !== undefined && { cursor }) });
    for (const summary of page.sessions) summaries.set(summary.id, summary);
    problems.push(...page.problems.map((p) => ({ id: p.id, code: p.error.code, message: p.error.message })));
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  // In id order, so that a resumed migration walks the sessions in the same order.
  const ids = [...summaries.keys()].sort();
  const results: CopyResult[] = [];
  const failed: MigrateFailure[] = [];
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!;
    options.onProgress?.(i, ids.length, id);
    try {
      // The summary from list spares a load: the source is only read, never repaired.
      const result = await copySession(from, to, id, { sourceSummary: summaries.get(id)! });
      results.push(result);
      if (result.outcome !== 'complete') await options.onCopied?.(result);
    } catch (error) {
      const { code, message } = describeFailure(error);
      failed.push({ id, code, message });
    }
  }
  options.onProgress?.(ids.length, ids.length);
  // Verification pass over the target: every source session present with the same count.
  const missing: string[] = [];
  for (const r of results) {
    const summary = await findSummary(to, r.id);
    if (summary === undefined || summary.eventCount !== r.events) missing.push(r.id);
  }
  return { ids, results, failed, problems, missing };
}
