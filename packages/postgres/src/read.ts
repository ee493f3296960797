// read(): a session's events in pages, each page one REPEATABLE READ snapshot of the sessions row
// and the events, with no transaction held across a yield. With `last`, only the newest events of
// the range, found by index from the count in the first page's snapshot.
import { errors, type SessionEvent } from '@tidemark/core';
import type { Session } from './db.js';
import { decodeEventRows, type EventRow, rowToSummary, type SessionRow } from './rows.js';

/** Events per page of a read stream. */
export const READ_PAGE_SIZE = 1000;

/** What a read stream of one session needs of the store. */
export interface PageSource {
  /** Runs `fn` in one read-only snapshot. */
  snapshot<T>(fn: (s: Session) => Promise<T>): Promise<T>;
  selectSession(s: Session): Promise<SessionRow | undefined>;
  selectEvents(s: Session, fromSeq: number, toSeq: number): Promise<EventRow[]>;
  /** Throws CLOSED once the store is closed. */
  assertOpen(): void;
}

/**
 * Events `fromSeq..toSeq` of session `id` (or the last `lastCount` of them, as the first page's
 * snapshot counts them; later pages stop at that snapshot's end). Ends early when the log this
 * stream was reading is gone (deleted, recreated, tail cut).
 */
export async function* readPaged(
  source: PageSource,
  id: string,
  fromSeq: number,
  toSeq: number,
  lastCount: number | undefined,
): AsyncIterable<SessionEvent> {
  let next = fromSeq;
  let until = toSeq;
  let seen: { createdAt: string; lastSeq: number; lastChecksum: string | null } | undefined;
  for (;;) {
    source.assertOpen();
    const page = await source.snapshot(async (s) => {
      const row = await source.selectSession(s);
      if (row === undefined) {
        if (seen !== undefined) return undefined;
        throw errors.notFound(id);
      }
      const count = rowToSummary(row).eventCount;
      if (seen !== undefined) {
        if (row.created_at !== seen.createdAt) return undefined;
        const last = await source.selectEvents(s, seen.lastSeq, seen.lastSeq);
        if (last[0]?.[4] !== seen.lastChecksum) return undefined;
      }
      const end = Math.min(until, count - 1);
      if (seen === undefined && lastCount !== undefined) {
        next = Math.max(next, end - lastCount + 1);
        until = end;
      }
      if (next > end) {
        return { events: [] as SessionEvent[], done: true, createdAt: row.created_at, lastChecksum: null };
      }
      const last = Math.min(end, next + READ_PAGE_SIZE - 1);
      const rows = await source.selectEvents(s, next, last);
      const events = decodeEventRows(id, rows, next);
      if (events.length < last - next + 1) {
        const missing = next + events.length;
        throw errors.corrupt(
          `session ${id}: seq ${missing} is missing from table events`,
          { table: 'events', row: `session_id=${id} seq=${missing}`, seq: missing },
          id,
        );
      }
      return {
        events,
        done: last >= end,
        createdAt: row.created_at,
        lastChecksum: rows[rows.length - 1]![4] ?? null,
      };
    });
    if (page === undefined) return;
    for (const event of page.events) yield event;
    if (page.done) return;
    next += page.events.length;
    seen = { createdAt: page.createdAt, lastSeq: next - 1, lastChecksum: page.lastChecksum };
  }
}
