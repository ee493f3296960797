// Changing a stored session other than by appending: a summary patch, and delete (with the
// optional updatedAt guard). Each is one write transaction; neither knows about reservations.
import {
  applyPatch,
  deleteConflict,
  nextUpdatedAt,
  type SessionSummary,
  type SummaryPatch,
} from '@tidemark/core';
import type { SqliteConnection } from './connection.js';
import { sessionRowDamaged } from './errors.js';
import { rowToSummary, summaryColumns } from './rows.js';

/**
 * Applies a validated patch to the stored summary of `id` and returns the new summary;
 * `undefined` when the session is not stored (CORRUPT when only its events are).
 */
export function updateStored(
  conn: SqliteConnection,
  id: string,
  patch: SummaryPatch,
): SessionSummary | undefined {
  return conn.transaction('write', conn.context(`updating session ${id}`, id, 'sessions'), () => {
    conn.step('SELECT sessions', id);
    const row = conn.stmts.getSession.get(id);
    if (row === undefined) {
      conn.assertNoOrphanEvents(id);
      return undefined;
    }
    const current = rowToSummary(row, conn.file);
    const next = applyPatch(current, patch, nextUpdatedAt(current.updatedAt));
    conn.step('UPDATE sessions', id);
    conn.stmts.updateSummary.run({ id, ...summaryColumns(next) });
    return next;
  });
}

/**
 * Deletes the stored session `id`, events first. `'absent'` when it is not stored; CONFLICT when
 * `ifUpdatedAt` is given and differs from the stored one; CORRUPT (and nothing deleted) when its
 * events remain without a sessions row.
 */
export function deleteStored(
  conn: SqliteConnection,
  id: string,
  ifUpdatedAt: string | undefined,
): 'deleted' | 'absent' {
  return conn.transaction('write', conn.context(`deleting session ${id}`, id, 'sessions'), () => {
    if (ifUpdatedAt !== undefined) {
      // Under the write lock: no append or update can land between this test and the delete.
      conn.step('SELECT sessions', id);
      const current = conn.stmts.updatedAtOf.get(id);
      if (current !== undefined && current !== ifUpdatedAt)
        throw deleteConflict(id, ifUpdatedAt, String(current));
    }
    // Events first, in the same transaction: no reader ever sees a header without its log.
    conn.step('DELETE events', id);
    const deletedEvents = conn.stmts.deleteEvents.run(id).changes;
    conn.step('DELETE sessions', id);
    const existed = conn.stmts.deleteSession.run(id).changes > 0;
    // Events without their sessions row: the row is damaged. Throwing rolls the delete back, so
    // the events are kept for repair rather than destroyed under a NOT_FOUND.
    if (!existed && deletedEvents > 0) throw sessionRowDamaged(conn.file, id);
    return existed ? 'deleted' : 'absent';
  });
}
