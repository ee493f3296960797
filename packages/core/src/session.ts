// Pure rules shared by every backend: input validation of create/update/list, the append plan
// (seq checks and idempotent retry) and summary bookkeeping. List order and cursors: paging.ts.
import { advanceCommitState, type BoundaryPredicate, type CommitState, commitStateOf } from './boundary.js';
import { decodeCursor, type ListCursor } from './cursor.js';
import { TidemarkError } from './errors.js';
import { isIsoTime, type PreparedEvent, type SessionEvent } from './event.js';
import { assertValidId } from './ids.js';
import { canonicalInRange } from './iso-time.js';
import {
  assertJsonValue,
  cloneJson,
  type JsonValue,
  jsonEqual,
  loneSurrogateIndex,
  sliceWellFormed,
  toWellFormed,
} from './json.js';
import type {
  CreateInit,
  ListQuery,
  LoadedSession,
  RecoveryReport,
  SessionMeta,
  SessionSummary,
  SummaryPatch,
} from './store.js';

/** Longest accepted `cwd`, `title` and `firstPrompt`, and tag. */
export const MAX_TEXT_LENGTH = 4096;
/** Most tags on a session. */
export const MAX_TAGS = 256;
/**
 * Largest `attrs` of a session, serialized (UTF-8 bytes of its JSON). Summaries are small records
 * that `list` reads in bulk, and the JSONL backend carries a pending session's fields in the
 * header line of its log, which must stay within the line length its reader accepts.
 */
export const MAX_ATTRS_BYTES = 1024 * 1024;
/** Default and largest page size of `list`. */
export const DEFAULT_LIST_LIMIT = 100;
export const MAX_LIST_LIMIT = 10_000;
/** Longest `firstPrompt` derived automatically from the first user message. */
export const FIRST_PROMPT_LENGTH = 200;

/** The current time as ISO-8601 UTC. */
export function nowIso(): string {
  // Formatting a Date costs about a microsecond; appends often come several per millisecond.
  const ms = Date.now();
  if (ms !== lastNow.ms) {
    lastNow.ms = ms;
    lastNow.iso = new Date(ms).toISOString();
  }
  return lastNow.iso;
}

const lastNow = { ms: Number.NaN, iso: '' };

/** The exact shape `Date.prototype.toISOString` gives for years 0000–9999. */
const CANONICAL_ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function assertText(value: unknown, what: string): asserts value is string {
  if (typeof value !== 'string' || value.length > MAX_TEXT_LENGTH) {
    throw new TidemarkError('INVALID', `${what}: must be a string of at most ${MAX_TEXT_LENGTH} characters`);
  }
  const lone = loneSurrogateIndex(value);
  if (lone !== -1) {
    throw new TidemarkError(
      'INVALID',
      `${what}: must be well-formed Unicode text, but has a lone UTF-16 surrogate at index ${lone}`,
    );
  }
}

function assertTags(value: unknown, what: string): asserts value is string[] {
  if (!Array.isArray(value) || value.length > MAX_TAGS) {
    throw new TidemarkError('INVALID', `${what}: must be an array of at most ${MAX_TAGS} strings`);
  }
  value.forEach((tag, i) => {
    assertText(tag, `${what}[${i}]`);
  });
}

function assertAttrs(value: unknown, what: string): asserts value is { [key: string]: JsonValue } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TidemarkError('INVALID', `${what}: must be a JSON object`);
  }
  assertJsonValue(value, what);
  const bytes = Buffer.byteLength(JSON.stringify(value), 'utf8');
  if (bytes > MAX_ATTRS_BYTES) {
    throw new TidemarkError(
      'INVALID',
      `${what}: serialized attrs are ${bytes} bytes, over the limit of ${MAX_ATTRS_BYTES}`,
    );
  }
}

/** Validated arguments of `create`, with the id filled in. */
export interface ValidCreate {
  meta: Omit<SessionMeta, 'formatVersion'>;
  patch: SummaryPatch;
}

/**
 * Validates `create()` arguments and builds the meta (without `formatVersion`) and the summary
 * fields to keep until the first batch.
 */
export function validateCreate(init: unknown, generate: () => string): ValidCreate {
  if (init !== undefined && (typeof init !== 'object' || init === null || Array.isArray(init))) {
    throw new TidemarkError('INVALID', 'create: the argument must be an object');
  }
  const given = (init ?? {}) as CreateInit;
  for (const key of Object.keys(given)) {
    if (!['id', 'createdAt', 'cwd', 'parent', 'title', 'tags'].includes(key)) {
      throw new TidemarkError('INVALID', `create: unknown field ${JSON.stringify(key)}`);
    }
  }
  const id = given.id === undefined ? generate() : given.id;
  assertValidId(id, 'create: id');
  if (given.createdAt !== undefined && !isIsoTime(given.createdAt)) {
    throw new TidemarkError('INVALID', 'create: createdAt must be an ISO-8601 timestamp with a zone');
  }
  const createdAt = given.createdAt === undefined ? nowIso() : new Date(given.createdAt).toISOString();
  const meta: Omit<SessionMeta, 'formatVersion'> = { id, createdAt };
  if (given.cwd !== undefined) {
    assertText(given.cwd, 'create: cwd');
    meta.cwd = given.cwd;
  }
  if (given.parent !== undefined) {
    const parent = given.parent as unknown;
    if (typeof parent !== 'object' || parent === null)
      throw new TidemarkError('INVALID', 'create: parent must be { id, seq }');
    const { id: parentId, seq } = parent as { id?: unknown; seq?: unknown };
    assertValidId(parentId, 'create: parent.id');
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < -1) {
      throw new TidemarkError('INVALID', 'create: parent.seq must be an integer ≥ -1');
    }
    meta.parent = { id: parentId, seq };
  }
  const patch = validatePatch({
    ...(given.title !== undefined && { title: given.title }),
    ...(given.tags !== undefined && { tags: given.tags }),
  });
  return { meta, patch };
}

/** Validates an `update()` patch and returns a deep copy of it. */
export function validatePatch(patch: unknown): SummaryPatch {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) {
    throw new TidemarkError('INVALID', 'update: the patch must be an object');
  }
  const out: SummaryPatch = {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    switch (key) {
      case 'title':
      case 'firstPrompt':
        assertText(value, `update: ${key}`);
        out[key] = value;
        break;
      case 'tags':
        assertTags(value, 'update: tags');
        out.tags = [...value];
        break;
      case 'attrs':
        assertAttrs(value, 'update: attrs');
        out.attrs = cloneJson(value);
        break;
      default:
        throw new TidemarkError(
          'INVALID',
          `update: unknown field ${JSON.stringify(key)} (allowed: title, firstPrompt, tags, attrs)`,
        );
    }
  }
  return out;
}

/** A summary with `patch` applied (a new object). */
export function applyPatch(summary: SessionSummary, patch: SummaryPatch, updatedAt: string): SessionSummary {
  const next: SessionSummary = { ...summary, updatedAt };
  if (patch.title !== undefined) next.title = patch.title;
  if (patch.firstPrompt !== undefined) next.firstPrompt = patch.firstPrompt;
  if (patch.tags !== undefined) next.tags = [...patch.tags];
  if (patch.attrs !== undefined) next.attrs = cloneJson(patch.attrs);
  return next;
}

/** The summary of a session that has no events yet. */
export function emptySummary(meta: Omit<SessionMeta, 'formatVersion'>): SessionSummary {
  const summary: SessionSummary = {
    id: meta.id,
    createdAt: meta.createdAt,
    updatedAt: meta.createdAt,
    eventCount: 0,
    committedSeq: -1,
    interrupted: false,
  };
  if (meta.cwd !== undefined) summary.cwd = meta.cwd;
  if (meta.parent !== undefined) summary.parent = { ...meta.parent };
  return summary;
}

/**
 * The prompt to show for a session: the text of its first `user/message` event, when `data` is a
 * string or has a string `text` or `content` field. Undefined otherwise.
 */
export function promptOf(event: SessionEvent): string | undefined {
  if (event.type !== 'user/message') return undefined;
  const data = event.data;
  let text: unknown = data;
  if (typeof data === 'object' && data !== null && !Array.isArray(data)) text = data.text ?? data.content;
  if (typeof text !== 'string' || text.trim() === '') return undefined;
  // Derived text must be storable as text by every backend: lone surrogates become U+FFFD, and
  // the cut never separates the halves of a pair (an emoji across the limit).
  const flat = toWellFormed(text.replace(/\s+/g, ' ').trim());
  return flat.length > FIRST_PROMPT_LENGTH ? `${sliceWellFormed(flat, FIRST_PROMPT_LENGTH - 1)}…` : flat;
}

/** The summary after a batch was appended: counts, commit state, `updatedAt`, derived prompt. */
export function summaryAfterAppend(
  summary: SessionSummary,
  events: readonly SessionEvent[],
  isBoundary: BoundaryPredicate,
  updatedAt: string,
): SessionSummary {
  const state = advanceCommitState(summary, events, isBoundary);
  const next: SessionSummary = {
    ...summary,
    updatedAt,
    eventCount: summary.eventCount + events.length,
    committedSeq: state.committedSeq,
    interrupted: state.interrupted,
  };
  if (next.firstPrompt === undefined) {
    for (const event of events) {
      const prompt = promptOf(event);
      if (prompt !== undefined) {
        next.firstPrompt = prompt;
        break;
      }
    }
  }
  return next;
}

/** What an append must do, decided from the stored next seq before any write. */
export type AppendPlan =
  /** Write the batch. */
  | { kind: 'write' }
  /** Every seq is stored already: compare with the stored events `fromSeq..toSeq`. */
  | { kind: 'compare'; fromSeq: number; toSeq: number };

/**
 * Applies the seq rules of contract §4 to a validated batch: first seq equal to the stored next seq →
 * write; wholly inside the stored range → a possible idempotent retry, to compare; anything else →
 * CONFLICT.
 */
export function planAppend(id: string, nextSeq: number, batch: readonly PreparedEvent[]): AppendPlan {
  const first = batch[0]!.event.seq;
  const last = batch[batch.length - 1]!.event.seq;
  if (first === nextSeq) return { kind: 'write' };
  if (first > nextSeq) {
    throw new TidemarkError(
      'CONFLICT',
      `session ${id}: batch starts at seq ${first} but the next seq is ${nextSeq}`,
      {
        sessionId: id,
      },
    );
  }
  if (last >= nextSeq) {
    throw new TidemarkError(
      'CONFLICT',
      `session ${id}: batch ${first}..${last} overlaps the stored events (next seq is ${nextSeq})`,
      { sessionId: id },
    );
  }
  return { kind: 'compare', fromSeq: first, toSeq: last };
}

/**
 * Finishes a `compare` plan: succeeds when the stored events equal the batch (an idempotent retry),
 * else CONFLICT.
 */
export function assertSameEvents(
  id: string,
  stored: readonly SessionEvent[],
  batch: readonly PreparedEvent[],
): void {
  const same =
    stored.length === batch.length &&
    stored.every((event, i) => {
      const other = batch[i]!.event;
      return (
        event.seq === other.seq &&
        event.type === other.type &&
        event.time === other.time &&
        jsonEqual(event.data, other.data)
      );
    });
  if (!same) {
    const first = batch[0]!.event.seq;
    throw new TidemarkError(
      'CONFLICT',
      `session ${id}: seq ${first} is already stored with different events`,
      {
        sessionId: id,
      },
    );
  }
}

/** Validated `list()` arguments. */
export interface ValidListQuery {
  cwd?: string;
  limit: number;
  cursor?: ListCursor;
}

/** Validates `list()` arguments. */
export function validateListQuery(query: unknown): ValidListQuery {
  if (query !== undefined && (typeof query !== 'object' || query === null || Array.isArray(query))) {
    throw new TidemarkError('INVALID', 'list: the query must be an object');
  }
  const q = (query ?? {}) as ListQuery;
  const out: ValidListQuery = { limit: DEFAULT_LIST_LIMIT };
  if (q.cwd !== undefined) {
    assertText(q.cwd, 'list: cwd');
    out.cwd = q.cwd;
  }
  if (q.limit !== undefined) {
    if (
      typeof q.limit !== 'number' ||
      !Number.isSafeInteger(q.limit) ||
      q.limit < 1 ||
      q.limit > MAX_LIST_LIMIT
    ) {
      throw new TidemarkError('INVALID', `list: limit must be an integer from 1 to ${MAX_LIST_LIMIT}`);
    }
    out.limit = q.limit;
  }
  if (q.cursor !== undefined) {
    if (typeof q.cursor !== 'string') throw new TidemarkError('INVALID', 'list: cursor must be a string');
    out.cursor = decodeCursor(q.cursor);
  }
  return out;
}

/** A validated `read()` range: `last` is present only when the caller gave it. */
export interface ValidRange {
  fromSeq: number;
  toSeq: number;
  last?: number;
}

/** Validates a `read()` range. */
export function validateRange(range: unknown): ValidRange {
  if (range !== undefined && (typeof range !== 'object' || range === null)) {
    throw new TidemarkError('INVALID', 'read: the range must be an object');
  }
  const {
    fromSeq = 0,
    toSeq = Number.MAX_SAFE_INTEGER,
    last,
  } = (range ?? {}) as {
    fromSeq?: unknown;
    toSeq?: unknown;
    last?: unknown;
  };
  for (const [name, value] of [
    ['fromSeq', fromSeq],
    ['toSeq', toSeq],
  ] as const) {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
      throw new TidemarkError('INVALID', `read: ${name} must be a non-negative integer`);
    }
  }
  const valid: ValidRange = { fromSeq: fromSeq as number, toSeq: toSeq as number };
  if (last !== undefined) {
    if (typeof last !== 'number' || !Number.isSafeInteger(last) || last < 1) {
      throw new TidemarkError('INVALID', 'read: last must be a positive integer');
    }
    valid.last = last;
  }
  return valid;
}

/** Validates `delete()` options and returns the version it must match, if any. */
export function validateDeleteOptions(options: unknown): string | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== 'object' || options === null)
    throw new TidemarkError('INVALID', 'delete: options must be an object');
  const { ifUpdatedAt } = options as { ifUpdatedAt?: unknown };
  if (ifUpdatedAt !== undefined && !isIsoTime(ifUpdatedAt))
    throw new TidemarkError('INVALID', 'delete: ifUpdatedAt must be an ISO-8601 timestamp with a zone');
  return ifUpdatedAt;
}

/**
 * The CONFLICT of a `delete({ ifUpdatedAt })` whose session has changed since that version.
 * @param current - the session's `updatedAt` now.
 */
export function deleteConflict(id: string, expected: string, current: string): TidemarkError {
  return new TidemarkError(
    'CONFLICT',
    `session ${id}: changed since ${expected} (now ${current}); not deleted`,
    { sessionId: id },
  );
}

/** Validates a `load()` options object and returns the tail policy. */
export function validateLoadOptions(options: unknown): 'keep' | 'cut' {
  if (options === undefined) return 'keep';
  if (typeof options !== 'object' || options === null)
    throw new TidemarkError('INVALID', 'load: options must be an object');
  const tail = (options as { tail?: unknown }).tail ?? 'keep';
  if (tail !== 'keep' && tail !== 'cut')
    throw new TidemarkError('INVALID', `load: tail must be 'keep' or 'cut'`);
  return tail;
}

/**
 * The `updatedAt` for a change made now to a session last changed at `previous`: the current time,
 * or one millisecond after `previous` when the clock has not moved past it, so that the order of
 * changes to one session is never lost to clock resolution or a clock stepping back.
 */
export function nextUpdatedAt(previous: string, now: string = nowIso()): string {
  if (now > previous) return now;
  // Several writes in one millisecond: one past `previous`. `toISOString` output ends in `.mmmZ`,
  // so below .999 only those digits change; anything else goes through Date. Only for a real,
  // normalised date (its fields in range): "T24:00:00.000Z" parses (as the next midnight) but its
  // successor spelled this way would not.
  if (CANONICAL_ISO.test(previous) && canonicalInRange(previous)) {
    const millis = Number(previous.slice(20, 23));
    if (millis < 999) return `${previous.slice(0, 20)}${String(millis + 1).padStart(3, '0')}Z`;
  }
  return new Date(Date.parse(previous) + 1).toISOString();
}

/**
 * The result of `load`: the commit state is stated twice (top level and in the summary) so callers
 * need not look into the summary; `recovered` appears only when the load repaired something.
 */
export function loadedSession(
  meta: SessionMeta,
  summary: SessionSummary,
  events: SessionEvent[],
  state: CommitState,
  recovered?: RecoveryReport,
): LoadedSession {
  const loaded: LoadedSession = {
    meta,
    summary,
    events,
    committedSeq: state.committedSeq,
    interrupted: state.interrupted,
  };
  if (recovered !== undefined) loaded.recovered = recovered;
  return loaded;
}

/**
 * The summary after the interrupted tail was cut (`load({ tail: 'cut' })` and `repair` with
 * `tail: 'cut'`): the counts and commit state of what was kept; `updatedAt` and the other fields
 * stay, since no caller's change happened. Give the kept events, or their count and commit state.
 */
export function summaryAfterCut(
  summary: SessionSummary,
  kept: readonly Pick<SessionEvent, 'seq' | 'type'>[],
  isBoundary: BoundaryPredicate,
): SessionSummary;
export function summaryAfterCut(
  summary: SessionSummary,
  kept: CommitState & { eventCount: number },
): SessionSummary;
export function summaryAfterCut(
  summary: SessionSummary,
  kept: readonly Pick<SessionEvent, 'seq' | 'type'>[] | (CommitState & { eventCount: number }),
  isBoundary?: BoundaryPredicate,
): SessionSummary {
  let state: CommitState & { eventCount: number };
  if (Array.isArray(kept)) {
    if (isBoundary === undefined) throw new TypeError('summaryAfterCut: the kept events need isBoundary');
    const events = kept as readonly Pick<SessionEvent, 'seq' | 'type'>[];
    state = { ...commitStateOf(events, isBoundary), eventCount: events.length };
  } else {
    state = kept as CommitState & { eventCount: number };
  }
  return {
    ...summary,
    eventCount: state.eventCount,
    committedSeq: state.committedSeq,
    interrupted: state.interrupted,
  };
}
