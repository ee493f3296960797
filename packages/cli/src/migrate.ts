// The core of `tidemark migrate`: copy every session of one store into another, then verify the
// target. Works on stores, not addresses; the command adds the audit log and the output.
import { listAll, type SessionStore, type SessionSummary, type TidemarkError } from '@tidemark/core';
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
  /** Copied sessions the target could not describe in that pass (a list problem, a read error). */
  unverified: MigrateFailure[];
}

/**
 * Checks every copied session in the target: one listing of the whole target (never one per
 * session), and a direct look only at a session the listing left out (a page may skip a session
 * that changed while it was read). A session the target cannot describe is reported for itself,
 * and every session when the target cannot be listed at all.
 */
async function verifyTarget(
  to: SessionStore,
  results: readonly CopyResult[],
): Promise<{ missing: string[]; unverified: MigrateFailure[] }> {
  const missing: string[] = [];
  const unverified: MigrateFailure[] = [];
  if (results.length === 0) return { missing, unverified };
  const wanted = new Set(results.map((r) => r.id));
  const counts = new Map<string, number>();
  const problems = new Map<string, TidemarkError>();
  try {
    for await (const entry of listAll(to)) {
      if ('summary' in entry) {
        if (wanted.has(entry.summary.id)) counts.set(entry.summary.id, entry.summary.eventCount);
      } else if (wanted.has(entry.problem.id)) problems.set(entry.problem.id, entry.problem.error);
    }
  } catch (error) {
    // Not one session could be checked: each is reported with the reason, none taken for missing.
    const { code, message } = describeFailure(error);
    return { missing, unverified: results.map((r) => ({ id: r.id, code, message })) };
  }
  for (const r of results) {
    let count = counts.get(r.id);
    const problem = problems.get(r.id);
    if (count === undefined && problem !== undefined) {
      const { code, message } = describeFailure(problem);
      unverified.push({ id: r.id, code, message });
      continue;
    }
    if (count === undefined) {
      try {
        count = (await to.has(r.id)) ? await countEvents(to, r.id) : undefined;
      } catch (error) {
        const { code, message } = describeFailure(error);
        unverified.push({ id: r.id, code, message });
        continue;
      }
    }
    if (count !== r.events) missing.push(r.id);
  }
  return { missing, unverified };
}

async function countEvents(store: SessionStore, id: string): Promise<number> {
  let count = 0;
  for await (const _ of store.read(id)) count++;
  return count;
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
  for await (const entry of listAll(from)) {
    if ('summary' in entry) summaries.set(entry.summary.id, entry.summary);
    else
      problems.push({
        id: entry.problem.id,
        code: entry.problem.error.code,
        message: entry.problem.error.message,
      });
  }
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
  // Verification pass over the target: every copied session present with the same count.
  const { missing, unverified } = await verifyTarget(to, results);
  return { ids, results, failed, problems, missing, unverified };
}
