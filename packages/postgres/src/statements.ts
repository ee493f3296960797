// The statements of the hot paths (append, load, read), built once per store and prepared by name
// on each connection: after the first use a call only binds and executes (no parse, cached plan).
import { createHash } from 'node:crypto';
import { EVENT_COLUMNS, SESSION_COLUMNS } from './rows.js';
import type { TableNames } from './schema.js';

/** A statement's text and the name it is prepared under. */
export interface Statement {
  text: string;
  /** Derived from the text, so stores of different schemas sharing a pool never collide. */
  name: string;
}

function prepared(text: string): Statement {
  // Names are cut by the server at 63 bytes: a hash of the text keeps them short and distinct.
  return { text, name: `tidemark_${createHash('sha256').update(text).digest('hex').slice(0, 32)}` };
}

/** The prepared statements of one schema. */
export interface Statements {
  /**
   * $1 id: the session row as JSON text at seq -1 and every event, in one snapshot, in no promised
   * order: `ORDER BY seq` had the server sort every row before sending the first; the client
   * checks the order and sorts only when the rows did not come in seq order (`inSeqOrder`).
   */
  load: Statement;
  /** $1 id, $2 from seq, $3 to seq: events in order. */
  selectEvents: Statement;
  /**
   * $1 id: the session row (all NULL when absent) and the log's highest seq; $2 seq (NULL for none)
   * the events row at that seq (`after_*`, all NULL when there is none), in one snapshot: what an
   * append with `after` is judged on after a failed claim.
   */
  readHead: Statement;
  /** The first batch: session row and events, gated by the INSERT of the row. */
  insertFirst: Statement;
  /**
   * A later batch: events, gated by the conditional UPDATE of next_seq; with `after` ($15..$18 not
   * NULL), also by the events row at seq $15 holding exactly type $16, time $17 and data $18
   * (append.ts, `AfterRow`).
   */
  advance: Statement;
  /** {@link Statements.advance} for one event, in scalar parameters (no arrays to build and parse). */
  advanceOne: Statement;
  /**
   * {@link Statements.advance} for many sessions at once (group-commit.ts): $1..$9 one array
   * element per session, $10..$15 one per event with its session id, $16..$19 per session the
   * `after` condition of {@link Statements.advance} (NULL for an append without `after`); answers
   * the claimed ids.
   */
  advanceGroup: Statement;
}

// The claim of an append with `after` also requires the events row at after.seq to hold exactly
// the texts the append was judged on, read in the claim's own snapshot. Every writer that changes
// or removes that row changes or deletes the sessions row in the same transaction (delete, repair,
// a tail cut), so one that commits after the snapshot fails the claim as well: the UPDATE finds
// the row it would claim deleted, or re-checks next_seq and updated_at on its new version.
const AFTER_ROW = (t: TableNames, id: string, seq: string, type: string, time: string, data: string) =>
  `EXISTS (SELECT 1 FROM ${t.events} AS a
     WHERE a.session_id = ${id} AND a.seq = ${seq} AND a.type = ${type} AND a.time = ${time} AND a.data = ${data})`;

// Ids compare under "C", the collation of the id columns (unnest's text has the default one).
const ADVANCE_GROUP = (t: TableNames) =>
  `WITH input AS (
     SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::boolean[], $6::text[],
       $7::bigint[], $8::text[], $9::text[], $16::bigint[], $17::text[], $18::text[], $19::text[])
       AS i(id, next_seq, updated_at, committed_seq, interrupted, first_prompt, expected, seen, created_at,
         after_seq, after_type, after_time, after_data)),
   head AS (
     UPDATE ${t.sessions} AS s SET next_seq = i.next_seq, updated_at = i.updated_at,
       committed_seq = i.committed_seq, interrupted = i.interrupted, first_prompt = i.first_prompt
     FROM input AS i
     WHERE s.id = i.id COLLATE "C" AND s.next_seq = i.expected AND s.updated_at = i.seen COLLATE "C"
       AND s.created_at = i.created_at
       AND (i.after_seq IS NULL
         OR ${AFTER_ROW(t, 'i.id COLLATE "C"', 'i.after_seq', 'i.after_type', 'i.after_time', 'i.after_data')})
     RETURNING s.id),
   written AS (
     INSERT INTO ${t.events} (session_id, seq, type, time, data, checksum)
     SELECT u.session_id, u.seq, u.type, u.time, u.data, u.checksum
     FROM unnest($10::text[], $11::bigint[], $12::text[], $13::text[], $14::text[], $15::integer[])
       AS u(session_id, seq, type, time, data, checksum)
     WHERE u.session_id COLLATE "C" IN (SELECT id FROM head))
   SELECT id FROM head`;

/** The claim of a later batch; with `after` ($15 not NULL), also on the events row at seq $15 ($16..$18). */
const ADVANCE_HEAD = (t: TableNames) =>
  `WITH head AS (
     UPDATE ${t.sessions} SET next_seq = $2, updated_at = $3, committed_seq = $4, interrupted = $5,
       first_prompt = $6
     WHERE id = $1 AND next_seq = $7 AND updated_at = $8 AND created_at = $9
       AND ($15::bigint IS NULL OR ${AFTER_ROW(t, '$1', '$15::bigint', '$16::text', '$17::text', '$18::text')})
     RETURNING id)`;

const INSERT_ONE_EVENT = (t: TableNames) =>
  `INSERT INTO ${t.events} (session_id, seq, type, time, data, checksum)
   SELECT $1, $10::bigint, $11::text, $12::text, $13::text, $14::integer WHERE EXISTS (SELECT 1 FROM head)`;

const INSERT_EVENTS = (t: TableNames, first: number) =>
  `INSERT INTO ${t.events} (session_id, seq, type, time, data, checksum)
   SELECT $1, u.seq, u.type, u.time, u.data, u.checksum
   FROM unnest($${first}::bigint[], $${first + 1}::text[], $${first + 2}::text[], $${first + 3}::text[],
     $${first + 4}::integer[]) AS u(seq, type, time, data, checksum)
   WHERE EXISTS (SELECT 1 FROM head)`;

/** The hot statements of the tables `t`. */
export function statementsOf(t: TableNames): Statements {
  return {
    // One statement is one snapshot: the row and the events agree without BEGIN … COMMIT.
    load: prepared(
      `SELECT -1::bigint AS seq, NULL::text AS type, NULL::text AS time, row_to_json(s)::text AS data,
         NULL::integer AS checksum
       FROM (SELECT ${SESSION_COLUMNS} FROM ${t.sessions} WHERE id = $1) AS s
       UNION ALL
       SELECT ${EVENT_COLUMNS} FROM ${t.events} WHERE session_id = $1`,
    ),
    selectEvents: prepared(
      `SELECT ${EVENT_COLUMNS} FROM ${t.events}
       WHERE session_id = $1 AND seq >= $2 AND seq <= $3 ORDER BY seq`,
    ),
    readHead: prepared(
      `SELECT ${SESSION_COLUMNS}, (SELECT max(seq) FROM ${t.events} WHERE session_id = $1) AS max_seq,
         a.seq AS after_seq, a.type AS after_type, a.time AS after_time, a.data AS after_data,
         a.checksum AS after_checksum
       FROM (VALUES (1)) AS one LEFT JOIN ${t.sessions} ON id = $1
         LEFT JOIN ${t.events} AS a ON a.session_id = $1 AND a.seq = $2`,
    ),
    insertFirst: prepared(
      `WITH head AS (
         INSERT INTO ${t.sessions} (id, format_version, created_at, updated_at, cwd, parent_id, parent_seq,
           next_seq, committed_seq, interrupted, title, first_prompt, tags, attrs)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
         ON CONFLICT (id) DO NOTHING RETURNING id)
       ${INSERT_EVENTS(t, 15)}`,
    ),
    advance: prepared(`${ADVANCE_HEAD(t)} ${INSERT_EVENTS(t, 10)}`),
    advanceOne: prepared(`${ADVANCE_HEAD(t)} ${INSERT_ONE_EVENT(t)}`),
    advanceGroup: prepared(ADVANCE_GROUP(t)),
  };
}
