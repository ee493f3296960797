// Pure conversions between table rows and the contract's objects. Every check of what a row may
// hold lives here, so a damaged or hostile row becomes CORRUPT with its location, never a crash
// with an untyped error, and never a silently shortened history.
import { crc32 } from 'node:zlib';
import {
  dataJsonOf,
  errors,
  type JsonValue,
  type PreparedEvent,
  type SessionEvent,
  type SessionMeta,
  type SessionSummary,
  type TidemarkError,
} from '@tidemark/core';
import type { TextRow } from './db.js';

/** A row of `sessions` as pg returns it (bigint columns arrive as strings). */
export interface SessionRow {
  id: string;
  format_version: number;
  created_at: string;
  updated_at: string;
  cwd: string | null;
  parent_id: string | null;
  parent_seq: string | null;
  next_seq: string;
  committed_seq: string;
  interrupted: boolean;
  title: string | null;
  first_prompt: string | null;
  tags: string | null;
  attrs: string | null;
}

/**
 * A row of `events` as selected by {@link EVENT_COLUMNS}, every column as text
 * (`Session.rows`): seq, type, time, data, checksum.
 */
export type EventRow = TextRow;

/** The columns of `events` every event query selects, in the order {@link EventRow} has them. */
export const EVENT_COLUMNS = 'seq, type, time, data, checksum';

/** The columns of `sessions` every summary query selects. */
export const SESSION_COLUMNS = `id, format_version, created_at, updated_at, cwd, parent_id, parent_seq, next_seq,
  committed_seq, interrupted, title, first_prompt, tags, attrs`;

/** CRC-32 (zlib's polynomial) of one byte at a time, for the short prefix of a checksum. */
const CRC_TABLE = (() => {
  const table = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c;
  }
  return table;
})();

/**
 * The CRC-32 of `type` NUL `time` NUL, folded in JS; -1 when either holds a non-ASCII character
 * (their UTF-8 bytes are then left to zlib).
 */
function prefixCrc(type: string, time: string): number {
  let c = -1;
  for (let i = 0; i < type.length; i++) {
    const code = type.charCodeAt(i);
    if (code >= 0x80) return -1;
    c = CRC_TABLE[(c ^ code) & 0xff]! ^ (c >>> 8);
  }
  c = CRC_TABLE[c & 0xff]! ^ (c >>> 8); // NUL
  for (let i = 0; i < time.length; i++) {
    const code = time.charCodeAt(i);
    if (code >= 0x80) return -1;
    c = CRC_TABLE[(c ^ code) & 0xff]! ^ (c >>> 8);
  }
  c = CRC_TABLE[c & 0xff]! ^ (c >>> 8); // NUL
  return ~c >>> 0;
}

/**
 * The checksum stored with an event row: CRC-32 of the stored `type` text, NUL, `time`, NUL, then
 * the `data` text, as a signed 32-bit integer (the column is `integer`). The key (session_id, seq)
 * is not included: damage there shows as a gap or a foreign row.
 */
export function eventChecksum(type: string, time: string, data: string): number {
  // A load checks every row: folding the short prefix in JS leaves one native call per event and
  // no concatenated copy of the row to allocate (and collect) before zlib encodes it.
  const prefix = prefixCrc(type, time);
  if (prefix === -1) return crc32(data, crc32(`${type}\u0000${time}\u0000`)) | 0;
  return crc32(data, prefix) | 0;
}

/** The `row` text of a CORRUPT location in `events`. */
export function eventRowKey(sessionId: string, seq: number): string {
  return `session_id=${sessionId} seq=${seq}`;
}

/** Free text as stored: a JSON string literal (PostgreSQL text cannot hold U+0000). */
export function encodeText(value: string): string;
export function encodeText(value: string | undefined): string | null;
export function encodeText(value: string | undefined): string | null {
  return value === undefined ? null : JSON.stringify(value);
}

function decodeText(text: string, fail: () => never): string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    fail();
  }
  if (typeof value !== 'string') fail();
  return value;
}

/** The answer for events stored under an id whose `sessions` row is missing: damage, not absence. */
export function sessionRowDamaged(id: string): TidemarkError {
  return errors.corrupt(
    `session ${id}: table sessions has no row id=${id}, but table events still holds its events, so the ` +
      'sessions row is damaged. Run `tidemark verify` to locate the damage, then `tidemark repair`',
    { table: 'sessions', row: `id=${id}` },
    id,
  );
}

function corruptSession(id: string, what: string): never {
  throw errors.corrupt(
    `session ${id}: ${what} in table sessions`,
    { table: 'sessions', row: `id=${id}` },
    id,
  );
}

function integerOf(value: unknown): number {
  const n = typeof value === 'string' ? Number(value) : typeof value === 'number' ? value : Number.NaN;
  return Number.isSafeInteger(n) ? n : Number.NaN;
}

function jsonColumn(id: string, column: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw errors.corrupt(
      `session ${id}: column ${column} is not JSON in table sessions`,
      { table: 'sessions', row: `id=${id}` },
      id,
      error,
    );
  }
}

/**
 * The summary stored in a `sessions` row.
 * @throws TidemarkError CORRUPT when a column holds what no append or update writes.
 */
export function rowToSummary(row: SessionRow): SessionSummary {
  const id = row.id;
  if (typeof row.created_at !== 'string' || typeof row.updated_at !== 'string')
    corruptSession(id, 'bad timestamps');
  const nextSeq = integerOf(row.next_seq);
  const committedSeq = integerOf(row.committed_seq);
  if (!(nextSeq >= 0)) corruptSession(id, 'bad next_seq');
  if (!(committedSeq >= -1 && committedSeq < nextSeq)) corruptSession(id, 'committed_seq outside the log');
  if (typeof row.interrupted !== 'boolean') corruptSession(id, 'bad interrupted flag');
  const summary: SessionSummary = {
    id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    eventCount: nextSeq,
    committedSeq,
    interrupted: row.interrupted,
  };
  const text = (column: string, value: string) =>
    decodeText(value, () => corruptSession(id, `bad ${column}`));
  if (row.cwd !== null) summary.cwd = text('cwd', row.cwd);
  const parent = parentOf(row);
  if (parent !== undefined) summary.parent = parent;
  if (row.title !== null) summary.title = text('title', row.title);
  if (row.first_prompt !== null) summary.firstPrompt = text('first_prompt', row.first_prompt);
  if (row.tags !== null) {
    const tags = jsonColumn(id, 'tags', row.tags);
    if (!Array.isArray(tags) || !tags.every((tag) => typeof tag === 'string'))
      corruptSession(id, 'tags is not a list of strings');
    summary.tags = tags as string[];
  }
  if (row.attrs !== null) {
    const attrs = jsonColumn(id, 'attrs', row.attrs);
    if (typeof attrs !== 'object' || attrs === null || Array.isArray(attrs))
      corruptSession(id, 'attrs is not an object');
    summary.attrs = attrs as { [key: string]: JsonValue };
  }
  return summary;
}

function parentOf(row: SessionRow): SessionMeta['parent'] {
  if (row.parent_id === null && row.parent_seq === null) return undefined;
  const seq = integerOf(row.parent_seq);
  // seq -1 is a fork taken before the parent's first event (core accepts parent.seq ≥ -1).
  if (typeof row.parent_id !== 'string' || !(seq >= -1)) corruptSession(row.id, 'half a parent reference');
  return { id: row.parent_id, seq };
}

/** The immutable header stored in a `sessions` row. */
export function rowToMeta(row: SessionRow): SessionMeta {
  const meta: SessionMeta = { id: row.id, createdAt: row.created_at, formatVersion: row.format_version };
  if (row.cwd !== null) meta.cwd = decodeText(row.cwd, () => corruptSession(row.id, 'bad cwd'));
  const parent = parentOf(row);
  if (parent !== undefined) meta.parent = parent;
  return meta;
}

/** The mutable columns of a summary, as stored. */
export interface SummaryColumns {
  updated_at: string;
  next_seq: number;
  committed_seq: number;
  interrupted: boolean;
  title: string | null;
  first_prompt: string | null;
  tags: string | null;
  attrs: string | null;
}

/** The columns that store a summary's mutable fields. */
export function summaryColumns(summary: SessionSummary): SummaryColumns {
  return {
    updated_at: summary.updatedAt,
    next_seq: summary.eventCount,
    committed_seq: summary.committedSeq,
    interrupted: summary.interrupted,
    title: encodeText(summary.title),
    first_prompt: encodeText(summary.firstPrompt),
    tags: summary.tags === undefined ? null : JSON.stringify(summary.tags),
    attrs: summary.attrs === undefined ? null : JSON.stringify(summary.attrs),
  };
}

/** One event as the columns of its row. */
export interface EncodedEvent {
  seq: number;
  type: string;
  time: string;
  data: string;
  checksum: number;
}

/** Encodes a prepared event for INSERT, reusing the JSON `prepareEvent` already made. */
export function encodeEvent(prepared: PreparedEvent): EncodedEvent {
  const { seq, type, time } = prepared.event;
  const storedType = encodeText(type);
  const data = dataJsonOf(prepared);
  return { seq, type: storedType, time, data, checksum: eventChecksum(storedType, time, data) };
}

function corruptEvent(sessionId: string, seq: number, what: string, cause?: unknown): never {
  throw errors.corrupt(
    `session ${sessionId}: event ${seq} ${what} in table events`,
    { table: 'events', row: eventRowKey(sessionId, seq), seq },
    sessionId,
    cause,
  );
}

/** A stored type that is a plain JSON string literal (no escapes): its text is the type itself. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: raw control characters are not plain JSON text.
const PLAIN_TYPE = /^"[^"\\\u0000-\u001f]*"$/;

/** Decodes one `events` row expected to hold `expected`; CORRUPT on a mismatch of any kind. */
export function decodeEventRow(sessionId: string, row: EventRow, expected: number): SessionEvent {
  const [seqText, type, time, data, checksum] = row;
  const seq = integerOf(seqText);
  if (seq !== expected) {
    throw errors.corrupt(
      `session ${sessionId}: seq ${expected} is missing from table events (found seq ${String(seqText)} next)`,
      { table: 'events', row: eventRowKey(sessionId, expected), seq: expected },
      sessionId,
    );
  }
  if (typeof type !== 'string' || typeof time !== 'string' || typeof data !== 'string' || checksum == null)
    corruptEvent(sessionId, seq, 'has a NULL column');
  if (eventChecksum(type, time, data) !== Number(checksum))
    corruptEvent(sessionId, seq, 'does not match its checksum');
  const decodedType = PLAIN_TYPE.test(type)
    ? type.slice(1, -1)
    : decodeText(type, () => corruptEvent(sessionId, seq, 'has an unreadable type'));
  let value: JsonValue;
  try {
    value = JSON.parse(data) as JsonValue;
  } catch (error) {
    corruptEvent(sessionId, seq, 'has unparsable data', error);
  }
  return { seq, type: decodedType, time, data: value };
}

/**
 * Decodes `rows[start..]`, which must hold seqs `firstSeq, firstSeq + 1, …`; CORRUPT at the first
 * bad row.
 */
export function decodeEventRows(
  sessionId: string,
  rows: readonly EventRow[],
  firstSeq: number,
  start = 0,
): SessionEvent[] {
  const events: SessionEvent[] = new Array(Math.max(0, rows.length - start));
  for (let i = start; i < rows.length; i++)
    events[i - start] = decodeEventRow(sessionId, rows[i]!, firstSeq + i - start);
  return events;
}

/**
 * The rows in ascending seq (their first column): the same array when they already are, which is
 * how the server almost always sends them, else a sorted copy. Lets load skip the server's sort
 * (`ORDER BY` made the server sort, and hold back, every row of a session before sending one).
 */
export function inSeqOrder(rows: TextRow[]): TextRow[] {
  let previous = Number.NEGATIVE_INFINITY;
  for (const row of rows) {
    const seq = Number(row[0]);
    if (!(seq > previous)) return [...rows].sort((a, b) => Number(a[0]) - Number(b[0]));
    previous = seq;
  }
  return rows;
}
