// The pure decision of prune: which sessions are old enough to move to the trash, and which are
// spared because a project has them active.
import { type SessionSummary, TidemarkError } from '@tidemark/core';

/** Milliseconds in a day. */
export const DAY_MS = 24 * 60 * 60 * 1000;

/** The decision of {@link planPrune}. */
export interface PrunePlan {
  /** The moment before which a session counts as old (ISO-8601). */
  cutoff: string;
  /** Sessions to move to the trash, oldest first. */
  toTrash: SessionSummary[];
  /** Old sessions kept because they are the active session of a project. */
  keptActive: SessionSummary[];
}

/**
 * Decides a prune. Pure: `updatedAt` strictly before `now - olderThanDays` is old.
 * @throws TidemarkError INVALID when `olderThanDays` is negative or not a number, or the cutoff
 * is no valid date (more than about 270,000 years back).
 */
export function planPrune(
  summaries: readonly SessionSummary[],
  activeIds: ReadonlySet<string>,
  olderThanDays: number,
  now: Date,
): PrunePlan {
  const cutoffDate = new Date(now.getTime() - olderThanDays * DAY_MS);
  if (!(olderThanDays >= 0) || Number.isNaN(cutoffDate.getTime())) {
    throw new TidemarkError(
      'INVALID',
      `prune: olderThanDays must be a number of days from 0 whose cutoff is a valid date, got ${olderThanDays}`,
    );
  }
  const cutoff = cutoffDate.toISOString();
  const old = summaries.filter((s) => Date.parse(s.updatedAt) < Date.parse(cutoff));
  old.sort((a, b) => (a.updatedAt < b.updatedAt ? -1 : a.updatedAt > b.updatedAt ? 1 : a.id < b.id ? -1 : 1));
  return {
    cutoff,
    toTrash: old.filter((s) => !activeIds.has(s.id)),
    keptActive: old.filter((s) => activeIds.has(s.id)),
  };
}

/** True when a trashed session's grace period is over at `now`. Pure. */
export function isPurgeable(trashedAt: string, graceDays: number, now: Date): boolean {
  return Date.parse(trashedAt) + graceDays * DAY_MS <= now.getTime();
}
