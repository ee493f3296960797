// Pure conversions between table rows and the contract's objects. Every check of what a row may
// hold lives here, so a damaged or hostile row becomes CORRUPT with its location, never a crash
// with an untyped error, and never a silently shortened history.
import { crc32 } from 'node:zlib';
import {
  errors,
  type JsonValue,
  type SessionEvent,
  type SessionMeta,
  type SessionSummary,
} from '@tidemark/core';

/** A row of the `sessions` table as better-sqlite3 returns it. */
export interface SessionRow {
  id: string;
  format_version: number;
  created_at: string;
  updated_at: string;
  cwd: string | null;
  parent_id: string | null;
  parent_seq: number | null;
  event_count: number;
  committed_seq: number;
  interrupted: number;
  title: string | null;
  first_prompt: string | null;
  tags: string | null;
  attrs: string | null;
}

/**
 * A `sessions` row as list reads it, in raw (array) mode: the columns of `SUMMARY_SELECT` in its
 * order. The driver builds an object row by setting each named column through its native API,
 * which cost as much as the query itself for a page of 1,000 rows; a literal here is cheap.
 */
export function sessionRowOf(values: readonly unknown[]): SessionRow {
  return {
    id: values[0],
    format_version: values[1],
    created_at: values[2],
    updated_at: values[3],
    cwd: values[4],
    parent_id: values[5],
    parent_seq: values[6],
    event_count: values[7],
    committed_seq: values[8],
    interrupted: values[9],
    title: values[10],
    first_prompt: values[11],
    tags: values[12],
    attrs: values[13],
  } as SessionRow;
}

/** A row of `events` in raw (array) mode: `[seq, type, time, data, crc]`. */
export type EventRow = readonly unknown[];

/**
 * The checksum stored with an event row: CRC-32 of `type`, NUL, `time`, NUL, then the `data`
 * text. The key (session_id, seq) is not included: damage there shows as a gap or a foreign row.
 */
export function eventChecksum(type: string, time: string, data: string): number {
  // Equal values either way (CRC-32 streams); one native call is cheaper for the usual small event,
  // two calls avoid copying a large payload into a concatenated string.
  if (data.length < 4096) return crc32(`${type}\u0000${time}\u0000${data}`);
  return crc32(data, crc32(`${type}\u0000${time}\u0000`));
}

/** Whether `text` parses as JSON (an event's `data` column must). */
export function isJsonText(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** The `row` text of a CORRUPT location in `events`. */
export function eventRowKey(sessionId: string, seq: number): string {
  return `session_id=${sessionId} seq=${seq}`;
}

function corruptSession(file: string, id: string, what: string): never {
  throw errors.corrupt(
    `session ${id}: ${what} in table sessions of ${file}`,
    { file, table: 'sessions', row: `id=${id}` },
    id,
  );
}

function parseColumn(file: string, id: string, column: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw errors.corrupt(
      `session ${id}: column ${column} is not JSON in table sessions of ${file}`,
      { file, table: 'sessions', row: `id=${id}` },
      id,
      error,
    );
  }
}

/**
 * The summary stored in a `sessions` row.
 * @throws TidemarkError CORRUPT when a column holds what no append or update writes.
 */
export function rowToSummary(row: SessionRow, file: string): SessionSummary {
  const id = row.id;
  if (typeof id !== 'string') corruptSession(file, String(id), 'id is not text');
  if (typeof row.created_at !== 'string' || typeof row.updated_at !== 'string')
    corruptSession(file, id, 'bad timestamps');
  if (!Number.isSafeInteger(row.event_count) || row.event_count < 0)
    corruptSession(file, id, 'bad event_count');
  if (
    !Number.isSafeInteger(row.committed_seq) ||
    row.committed_seq < -1 ||
    row.committed_seq >= row.event_count
  ) {
    corruptSession(file, id, 'committed_seq outside the log');
  }
  if (row.interrupted !== 0 && row.interrupted !== 1) corruptSession(file, id, 'bad interrupted flag');
  const summary: SessionSummary = {
    id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    eventCount: row.event_count,
    committedSeq: row.committed_seq,
    interrupted: row.interrupted === 1,
  };
  if (row.cwd !== null) summary.cwd = row.cwd;
  const parent = parentOf(row, file);
  if (parent !== undefined) summary.parent = parent;
  if (row.title !== null) summary.title = row.title;
  if (row.first_prompt !== null) summary.firstPrompt = row.first_prompt;
  if (row.tags !== null) {
    const tags = parseColumn(file, id, 'tags', row.tags);
    if (!Array.isArray(tags) || !tags.every((tag) => typeof tag === 'string'))
      corruptSession(file, id, 'tags is not a list of strings');
    summary.tags = tags as string[];
  }
  if (row.attrs !== null) {
    const attrs = parseColumn(file, id, 'attrs', row.attrs);
    if (typeof attrs !== 'object' || attrs === null || Array.isArray(attrs))
      corruptSession(file, id, 'attrs is not an object');
    summary.attrs = attrs as { [key: string]: JsonValue };
  }
  return summary;
}

function parentOf(row: SessionRow, file: string): SessionMeta['parent'] {
  if (row.parent_id === null && row.parent_seq === null) return undefined;
  if (typeof row.parent_id !== 'string' || !Number.isSafeInteger(row.parent_seq)) {
    corruptSession(file, row.id, 'half a parent reference');
  }
  return { id: row.parent_id, seq: row.parent_seq as number };
}

/**
 * What an append needs of a session, read in one query: the summary fields it changes and the
 * last stored seq. Raw row `[updated_at, event_count, committed_seq, interrupted, first_prompt,
 * max_seq]`.
 */
export type AppendHeadRow = readonly unknown[];

/** The decoded {@link AppendHeadRow}: the next seq and the summary fields an append rewrites. */
export interface AppendHead {
  nextSeq: number;
  summary: SessionSummary;
}

/**
 * Decodes an {@link AppendHeadRow}; the summary it returns carries only the fields an append
 * changes (its other fields stay untouched in the row).
 * @throws TidemarkError CORRUPT when the row is not what appends write, or when the stored events
 *   do not end where the summary's count says (rows lost or added behind the summary's back).
 */
export function decodeAppendHead(id: string, row: AppendHeadRow, file: string): AppendHead {
  const [updatedAt, eventCount, committedSeq, interrupted, firstPrompt, maxSeq] = row;
  if (typeof updatedAt !== 'string') corruptSession(file, id, 'bad updated_at');
  if (typeof eventCount !== 'number' || !Number.isSafeInteger(eventCount) || eventCount < 0) {
    corruptSession(file, id, 'bad event_count');
  }
  if (
    typeof committedSeq !== 'number' ||
    !Number.isSafeInteger(committedSeq) ||
    committedSeq < -1 ||
    committedSeq >= eventCount
  ) {
    corruptSession(file, id, 'committed_seq outside the log');
  }
  if (interrupted !== 0 && interrupted !== 1) corruptSession(file, id, 'bad interrupted flag');
  if (firstPrompt !== null && typeof firstPrompt !== 'string') corruptSession(file, id, 'bad first_prompt');
  const nextSeq = maxSeq === null ? 0 : typeof maxSeq === 'number' ? maxSeq + 1 : Number.NaN;
  if (nextSeq !== eventCount) {
    throw errors.corrupt(
      `session ${id}: the summary counts ${eventCount} events but the log ends at seq ${String(maxSeq)} in ${file}`,
      { file, table: 'sessions', row: `id=${id}` },
      id,
    );
  }
  const summary: SessionSummary = {
    id,
    createdAt: '',
    updatedAt,
    eventCount,
    committedSeq,
    interrupted: interrupted === 1,
  };
  if (firstPrompt !== null) summary.firstPrompt = firstPrompt;
  return { nextSeq, summary };
}

/** The immutable header stored in a `sessions` row. */
export function rowToMeta(row: SessionRow, file: string): SessionMeta {
  const meta: SessionMeta = { id: row.id, createdAt: row.created_at, formatVersion: row.format_version };
  if (row.cwd !== null) meta.cwd = row.cwd;
  const parent = parentOf(row, file);
  if (parent !== undefined) meta.parent = parent;
  return meta;
}

/** Named parameters of the summary columns, for INSERT and UPDATE. */
export interface SummaryColumns {
  updated_at: string;
  event_count: number;
  committed_seq: number;
  interrupted: number;
  title: string | null;
  first_prompt: string | null;
  tags: string | null;
  attrs: string | null;
}

/** The columns that store a summary's mutable fields. */
export function summaryColumns(summary: SessionSummary): SummaryColumns {
  return {
    updated_at: summary.updatedAt,
    event_count: summary.eventCount,
    committed_seq: summary.committedSeq,
    interrupted: summary.interrupted ? 1 : 0,
    title: summary.title ?? null,
    first_prompt: summary.firstPrompt ?? null,
    tags: summary.tags === undefined ? null : JSON.stringify(summary.tags),
    attrs: summary.attrs === undefined ? null : JSON.stringify(summary.attrs),
  };
}

/**
 * Decodes a run of `events` rows that must hold seqs `firstSeq, firstSeq + 1, …` in order.
 * @throws TidemarkError CORRUPT naming the row of a gap, a duplicate, a non-text column or
 *   unparsable data. A shorter run than expected is the caller's to judge.
 */
export function decodeEventRows(
  sessionId: string,
  rows: readonly EventRow[],
  firstSeq: number,
  file: string,
): SessionEvent[] {
  const events: SessionEvent[] = new Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    const expected = firstSeq + i;
    const seq = row[0];
    if (seq !== expected) {
      const found = typeof seq === 'number' ? `seq ${seq}` : `a non-integer seq`;
      throw errors.corrupt(
        `session ${sessionId}: seq ${expected} is missing from table events of ${file} (found ${found} next)`,
        { file, table: 'events', row: eventRowKey(sessionId, expected), seq: expected },
        sessionId,
      );
    }
    const type = row[1];
    const time = row[2];
    const data = row[3];
    if (
      typeof type !== 'string' ||
      typeof time !== 'string' ||
      typeof data !== 'string' ||
      typeof row[4] !== 'number'
    ) {
      throw errors.corrupt(
        `session ${sessionId}: event ${expected} has a non-text column in table events of ${file}`,
        { file, table: 'events', row: eventRowKey(sessionId, expected), seq: expected },
        sessionId,
      );
    }
    if (eventChecksum(type, time, data) !== row[4]) {
      throw errors.corrupt(
        `session ${sessionId}: event ${expected} does not match its checksum in table events of ${file}`,
        { file, table: 'events', row: eventRowKey(sessionId, expected), seq: expected },
        sessionId,
      );
    }
    let value: JsonValue;
    try {
      value = JSON.parse(data) as JsonValue;
    } catch (error) {
      throw errors.corrupt(
        `session ${sessionId}: event ${expected} has unparsable data in table events of ${file}`,
        { file, table: 'events', row: eventRowKey(sessionId, expected), seq: expected },
        sessionId,
        error,
      );
    }
    events[i] = { seq: expected, type, time, data: value };
  }
  return events;
}
