// The core of `tidemark migrate`: copy every session of one store into another, then verify the
// target. Works on stores, not addresses; the command adds the audit log and the output.
import type { SessionStore, SessionSummary, TidemarkError } from '@tidemark/core';
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
    let cursor: string | undefined;
    do {
      const page = await to.list({ limit: 1000, ...(cursor !== undefined && { cursor }) });
      for (const s of page.sessions) if (wanted.has(s.id)) counts.set(s.id, s.eventCount);
      for (const p of page.problems) if (wanted.has(p.id)) problems.set(p.id, p.error);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
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
  // Verification pass over the target: every copied session present with the same count.
  const { missing, unverified } = await verifyTarget(to, results);
  return { ids, results, failed, problems, missing, unverified };
}
