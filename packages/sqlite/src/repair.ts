// `repair()` of one session, destroying nothing: with `dropCorrupt` the events from the first
// damaged one on (and unreadable tags/attrs) go to the quarantine table; with `tail: 'cut'` the
// interrupted tail too. Damage to the file's pages is not something rows can fix: refused.
import {
  errors,
  type MaintenanceProblem,
  nowIso,
  type RepairOptions,
  type RepairReport,
  type TidemarkError,
} from '@tidemark/core';
import type { SqliteConnection } from './connection.js';
import { loadSession } from './read.js';
import { cutToSoundPrefix, quarantineAddress } from './recovery.js';
import { eventRowKey } from './rows.js';
import { databaseProblems } from './verify.js';

/**
 * Repairs the stored session `id` as `options` allow, then loads it (applying `tail`). Rejects
 * with CORRUPT when the session is damaged and `dropCorrupt` is not set (nothing is removed then),
 * or when the file has page-level damage, which a row repair cannot fix; NOT_FOUND when absent.
 */
export function repairStoredSession(
  conn: SqliteConnection,
  id: string,
  options: Required<RepairOptions>,
): RepairReport {
  const report: RepairReport = { sessionId: id, eventCount: 0, removed: [], quarantined: [] };
  if (options.dropCorrupt) dropCorruptRows(conn, id, report);
  const loaded = loadSession(conn, id, options.tail);
  report.eventCount = loaded.events.length;
  const recovered = loaded.recovered;
  if (recovered?.cutEvents !== undefined) {
    const first = loaded.events.length;
    report.cutEvents = recovered.cutEvents;
    report.removed.push({
      kind: 'interrupted',
      sessionId: id,
      message: `interrupted turn: ${recovered.cutEvents} event(s) after the last boundary (seq ${loaded.committedSeq})`,
      seq: first,
      file: conn.file,
      table: 'events',
      row: eventRowKey(id, first),
      ...(recovered.quarantinedAt !== undefined && { quarantinedAt: recovered.quarantinedAt }),
    });
  }
  const at = recovered?.quarantinedAt;
  if (at !== undefined && !report.quarantined.includes(at)) report.quarantined.push(at);
  return report;
}

/**
 * `dropCorrupt`: refuses page-level damage anywhere in the file (checked first, outside the write
 * transaction, so that the write lock is not held through `integrity_check`), then cuts the session back to
 * its sound prefix in one synced write transaction.
 */
function dropCorruptRows(conn: SqliteConnection, id: string, report: RepairReport): void {
  const context = conn.context(`repairing session ${id}`, id, 'events');
  const damage = databaseProblems(conn);
  if (damage[0] !== undefined) throw pageDamage(conn.file, damage[0]);
  const cut = conn.durably(context, () =>
    conn.transaction('write', context, () =>
      cutToSoundPrefix(conn.db, conn.file, id, nowIso(), conn.isBoundary, (step) => conn.step(step, id)),
    ),
  );
  if (cut === undefined) return; // not stored (or only its events are): the load says which
  const quarantinedAt = quarantineAddress(conn.file, id);
  const where = { sessionId: id, file: conn.file, quarantinedAt };
  if (cut.quarantinedEvents > 0) {
    report.corruptEvents = cut.quarantinedEvents;
    const seq = cut.keptEvents;
    report.removed.push({
      kind: 'corrupt',
      message: `${cut.quarantinedEvents} event(s) from the first damaged one (seq ${seq}) on`,
      ...where,
      seq,
      table: 'events',
      row: eventRowKey(id, seq),
    });
  }
  if (cut.quarantinedSummary) {
    report.summarySetAside = true;
    const message = 'unreadable summary fields (tags, attrs)';
    report.removed.push({ kind: 'corrupt', message, ...where, table: 'sessions', row: `id=${id}` });
  }
  if (report.removed.length > 0) report.quarantined.push(quarantinedAt);
}

/** The refusal of a row repair over damaged pages, saying what to do instead. */
function pageDamage(file: string, first: MaintenanceProblem): TidemarkError {
  const location = {
    file,
    ...(first.table !== undefined && { table: first.table }),
    ...(first.row !== undefined && { row: first.row }),
    ...(first.offset !== undefined && { offset: first.offset }),
  };
  return errors.corrupt(
    `${file}: ${first.message}; a row-level repair cannot fix damaged pages: restore a backup, or salvage with sqlite3 .recover and import`,
    location,
  );
}
