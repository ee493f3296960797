// Taking rows out of a log without destroying them: the interrupted tail (load and repair with
// `tail: 'cut'`), and a damaged log cut back to its sound prefix (repair with `dropCorrupt`).
// Everything removed goes to the quarantine table, inside the caller's write transaction.
import { type BoundaryPredicate, commitStateOf, TidemarkError } from '@tidemark/core';
import type Database from 'better-sqlite3';
import type { StepHook } from './options.js';
import { eventChecksum, isJsonText, rowToSummary, type SessionRow } from './rows.js';

/** Where quarantined rows of a session are kept, as reported in `LoadedSession.recovered`. */
export function quarantineAddress(file: string, sessionId: string): string {
  return `sqlite:${file}#quarantine/session_id=${sessionId}`;
}

/**
 * Moves the events after `committedSeq` into the quarantine table (reason `interrupted-tail`).
 * Must run inside the caller's write transaction, which also rewrites the summary.
 */
export function cutTail(
  db: Database.Database,
  file: string,
  sessionId: string,
  committedSeq: number,
  now: string,
  step?: (name: 'INSERT quarantine' | 'DELETE events') => void,
): { cutEvents: number; quarantinedAt: string } {
  step?.('INSERT quarantine');
  const moved = db
    .prepare(
      `INSERT INTO quarantine (session_id, seq, type, time, data, crc, reason, quarantined_at)
       SELECT session_id, seq, type, time, data, crc, 'interrupted-tail', ? FROM events
       WHERE session_id = ? AND seq > ? ORDER BY seq`,
    )
    .run(now, sessionId, committedSeq).changes;
  step?.('DELETE events');
  const deleted = db
    .prepare('DELETE FROM events WHERE session_id = ? AND seq > ?')
    .run(sessionId, committedSeq).changes;
  if (moved !== deleted) {
    // Cannot happen inside one transaction; refuse rather than lose a row.
    throw new TidemarkError(
      'IO',
      `cutting the tail of ${sessionId}: copied ${moved} rows but deleted ${deleted}`,
      {
        sessionId,
      },
    );
  }
  return { cutEvents: moved, quarantinedAt: quarantineAddress(file, sessionId) };
}

/** What {@link cutToSoundPrefix} did to a session. */
export interface PrefixCut {
  /** Events kept: the sound prefix. */
  keptEvents: number;
  /** Events moved to quarantine, from the first damaged one on. */
  quarantinedEvents: number;
  /** Unreadable `tags`/`attrs` text was moved to quarantine and the columns cleared. */
  quarantinedSummary: boolean;
}

/**
 * Cuts session `id` back to its sound prefix, inside the caller's write transaction: the events
 * from the first bad seq on go to the quarantine table (reason `repair`), the summary counts are
 * rebuilt, and unreadable `tags`/`attrs` text is set aside in quarantine too. `undefined` when the
 * session has no sessions row. `step` is the store's fault hook.
 */
export function cutToSoundPrefix(
  db: Database.Database,
  file: string,
  id: string,
  now: string,
  isBoundary: BoundaryPredicate,
  step: StepHook,
): PrefixCut | undefined {
  step('SELECT sessions', id);
  const session = db.prepare('SELECT * FROM sessions WHERE id = ?').get(id) as SessionRow | undefined;
  if (session === undefined) return undefined;
  // The sound prefix: contiguous seqs from 0 that match their checksum and parse.
  const kept: { seq: number; type: string }[] = [];
  step('SELECT events', id);
  const rows = db.prepare('SELECT seq, type, time, data, crc FROM events WHERE session_id = ? ORDER BY seq');
  for (const row of rows.raw().iterate(id) as IterableIterator<unknown[]>) {
    if (!sound(row, kept.length)) break;
    kept.push({ seq: row[0] as number, type: row[1] as string });
  }
  step('INSERT quarantine', id);
  const moved = db
    .prepare(
      `INSERT INTO quarantine (session_id, seq, type, time, data, crc, reason, quarantined_at)
       SELECT session_id, seq, type, time, data, crc, 'repair', ? FROM events WHERE session_id = ? AND seq >= ?`,
    )
    .run(now, id, kept.length).changes;
  step('DELETE events', id);
  db.prepare('DELETE FROM events WHERE session_id = ? AND seq >= ?').run(id, kept.length);
  // The counts are written column by column, not through summaryAfterCut: the rest of this row
  // may not decode into a summary (that is what the next step looks at).
  const state = commitStateOf(kept, isBoundary);
  const rebuilt = { ...session, event_count: kept.length, committed_seq: state.committedSeq };
  step('UPDATE sessions', id);
  db.prepare('UPDATE sessions SET event_count = ?, committed_seq = ?, interrupted = ? WHERE id = ?').run(
    kept.length,
    state.committedSeq,
    state.interrupted ? 1 : 0,
    id,
  );
  const quarantinedSummary =
    !readable(rebuilt, file) && readable({ ...rebuilt, tags: null, attrs: null }, file);
  if (quarantinedSummary) setSummaryAside(db, session, now, step);
  return { keptEvents: kept.length, quarantinedEvents: moved, quarantinedSummary };
}

/** Unreadable tags/attrs text is kept in quarantine, not guessed at, and the columns cleared. */
function setSummaryAside(db: Database.Database, session: SessionRow, now: string, step: StepHook): void {
  step('INSERT quarantine', session.id);
  db.prepare(
    `INSERT INTO quarantine (session_id, seq, type, time, data, reason, quarantined_at)
     VALUES (?, NULL, NULL, NULL, ?, 'repair-summary', ?)`,
  ).run(session.id, JSON.stringify({ tags: session.tags, attrs: session.attrs }), now);
  step('UPDATE sessions', session.id);
  db.prepare('UPDATE sessions SET tags = NULL, attrs = NULL WHERE id = ?').run(session.id);
}

function readable(row: SessionRow, file: string): boolean {
  try {
    rowToSummary(row, file);
    return true;
  } catch {
    return false;
  }
}

/** Whether an events row `[seq, type, time, data, crc]` is the intact event `seq`. */
function sound(row: readonly unknown[], seq: number): boolean {
  const [rowSeq, type, time, data, crc] = row;
  if (rowSeq !== seq || typeof type !== 'string' || typeof time !== 'string' || typeof data !== 'string')
    return false;
  return eventChecksum(type, time, data) === crc && isJsonText(data);
}
