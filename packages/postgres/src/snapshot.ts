// Deciding that a session is absent, or that its sessions row is damaged, from one snapshot.
//
// The store runs its transactions at READ COMMITTED, where every statement takes a snapshot of
// its own. A locking read that finds no row followed by a second statement that looks for the
// session's events is two snapshots: another host's first append (one statement inserting the
// row and the events) can commit between them, and the events found then look orphaned. That
// race answered CORRUPT to an update of a healthy session, and let a delete remove the events
// and then the row of a session created meanwhile in separate snapshots, orphaning events for real.
//
// The rule here: absence and damage are only ever concluded from one statement, which reads the
// row and the events together (one snapshot): events without the row in one snapshot is damage
// (every writer adds or removes them together), neither is absence. When that statement sees a
// row the locking read missed, a first append committed in between: the row is locked again.
//
// Why not REPEATABLE READ for the writing transactions: there, a FOR UPDATE of a row another host
// changed after the snapshot fails with 40001, so an update or delete racing a steady appender
// would be retried and end as CONFLICT; READ COMMITTED's FOR UPDATE waits and returns the newest
// row. Read-only transactions (read, verify) do run at REPEATABLE READ: one snapshot throughout.
import { errors } from '@tidemark/core';
import type { Session } from './db.js';
import { SESSION_COLUMNS, type SessionRow } from './rows.js';
import type { TableNames } from './schema.js';

/** A session that has no row: `absent` (no events either) or `orphaned` (events only: the row is damaged). */
export type Missing = 'absent' | 'orphaned';

/** Locking reads that found no row while the row was there an instant later, before CONFLICT. */
export const LOCK_ATTEMPTS = 8;

/** Whether `id` has a row, nothing, or only events: one statement, so one snapshot. */
export async function presenceOf(s: Session, t: TableNames, id: string): Promise<'stored' | Missing> {
  const found = await s.query<{ session: boolean; events: boolean }>(
    'SELECT sessions',
    `SELECT EXISTS (SELECT 1 FROM ${t.sessions} WHERE id = $1) AS session,
            EXISTS (SELECT 1 FROM ${t.events} WHERE session_id = $1) AS events`,
    [id],
  );
  const row = found.rows[0]!;
  if (row.session) return 'stored';
  return row.events ? 'orphaned' : 'absent';
}

/**
 * The sessions row of `id` (locked FOR UPDATE when `lock`), or why there is none, decided by
 * {@link presenceOf}. While the row is locked no other writer can add or remove the session's
 * events (each changes the row in the same statement or transaction), so what the caller reads
 * next agrees with it. CONFLICT (retryable) when the row keeps appearing and vanishing.
 */
export async function sessionRow(
  s: Session,
  t: TableNames,
  id: string,
  lock: boolean,
): Promise<SessionRow | Missing> {
  for (let attempt = 1; ; attempt++) {
    const found = await s.query<SessionRow>(
      'SELECT sessions',
      `SELECT ${SESSION_COLUMNS} FROM ${t.sessions} WHERE id = $1${lock ? ' FOR UPDATE' : ''}`,
      [id],
    );
    if (found.rows[0] !== undefined) return found.rows[0];
    const presence = await presenceOf(s, t, id);
    if (presence !== 'stored') return presence;
    // Stored now: another host's first append committed after the read above. Read it again.
    if (attempt >= LOCK_ATTEMPTS)
      throw errors.conflict(`session ${id}: other hosts kept creating and deleting it; retry`, id, true);
  }
}
