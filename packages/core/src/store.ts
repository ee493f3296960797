import type { TidemarkError } from './errors.js';
import type { SessionEvent } from './event.js';
import type { JsonValue } from './json.js';

/** Lineage: the session and seq a session was forked or resumed from. */
export interface ParentRef {
  id: string;
  seq: number;
}

/** The immutable header of a session, written once with its first batch. */
export interface SessionMeta {
  id: string;
  /** ISO-8601 UTC time of `create()`. */
  createdAt: string;
  /** The working directory the session belongs to. */
  cwd?: string;
  /** Lineage, when forked or resumed from another session. */
  parent?: ParentRef;
  /** On-disk format or schema version, filled in by the backend. */
  formatVersion: number;
}

/** The mutable, cheap-to-list description of a session. */
export interface SessionSummary {
  id: string;
  createdAt: string;
  /** Time of the last append or update. `list` orders by it, newest first. */
  updatedAt: string;
  cwd?: string;
  parent?: ParentRef;
  /** Number of events in the log. */
  eventCount: number;
  /** Seq of the last boundary event, -1 when there is none. */
  committedSeq: number;
  /** True when complete events follow the last boundary. */
  interrupted: boolean;
  title?: string;
  /** The first user prompt, for display. */
  firstPrompt?: string;
  tags?: string[];
  attrs?: { [key: string]: JsonValue };
}

/** Arguments of {@link SessionStore.create}. */
export interface CreateInit {
  /** Session id; a time-ordered id is generated when omitted. */
  id?: string;
  /**
   * Creation time (ISO-8601 with a zone), for copies that keep the original's: import, migrate,
   * trash and restore. The current time when omitted.
   */
  createdAt?: string;
  cwd?: string;
  parent?: ParentRef;
  title?: string;
  tags?: string[];
}

/** Summary fields that {@link SessionStore.update} can change. `undefined` leaves a field as it is. */
export interface SummaryPatch {
  title?: string;
  firstPrompt?: string;
  tags?: string[];
  attrs?: { [key: string]: JsonValue };
}

/** What to do with an interrupted tail on load. */
export type TailPolicy = 'keep' | 'cut';

/** Options of {@link SessionStore.load}. */
export interface LoadOptions {
  /** `keep` (default) returns the interrupted tail; `cut` moves it to quarantine. */
  tail?: TailPolicy;
}

/** Options of `delete`. */
export interface DeleteOptions {
  /**
   * Delete only the version of the session whose `updatedAt` is this (as `load`, `list` or
   * `update` reported it); when the session has changed since (an append or an update moved its
   * `updatedAt`), reject with CONFLICT and delete nothing. The test and the delete are one atomic
   * step under the session's write lock, so a cleanup that decided from a listing can never remove
   * events appended after it looked. A pending session (never appended) stores nothing; it is
   * discarded whatever this says.
   */
  ifUpdatedAt?: string;
}

/** A range of seqs, both ends inclusive, optionally only its newest events. */
export interface ReadRange {
  fromSeq?: number;
  toSeq?: number;
  /**
   * Only the last `last` events of the range (a positive integer), still yielded in seq order:
   * `read(id, { last: 1 })` is the newest event, `read(id, { toSeq: s, last: 10 })` the ten events
   * up to `s`. Backends find them without reading the log from its start (SQLite and PostgreSQL
   * by index, memory by position); a backend without a way to do so streams the range and keeps
   * the last ones, which is correct, with memory bounded by `last`.
   */
  last?: number;
}

/** What a load had to repair. */
export interface RecoveryReport {
  /** Bytes of torn fragments set aside. */
  tornBytes?: number;
  /** Events of the interrupted tail moved to quarantine (`tail: 'cut'`). */
  cutEvents?: number;
  /** Where the removed data was kept (path, table). */
  quarantinedAt?: string;
}

/** The result of {@link SessionStore.load}. */
export interface LoadedSession {
  meta: SessionMeta;
  summary: SessionSummary;
  events: SessionEvent[];
  committedSeq: number;
  interrupted: boolean;
  /** Present when the load repaired the log. */
  recovered?: RecoveryReport;
}

/** Arguments of {@link SessionStore.list}. */
export interface ListQuery {
  /** Only sessions of this working directory. */
  cwd?: string;
  /** Page size (default 100). */
  limit?: number;
  /** Opaque cursor from a previous page's `nextCursor`. */
  cursor?: string;
}

/** A session that list could not describe. It is reported, never silently left out. */
export interface ListProblem {
  id: string;
  error: TidemarkError;
}

/** One page of {@link SessionStore.list}. */
export interface SessionPage {
  sessions: SessionSummary[];
  /**
   * Sessions that could not be described. A backend that cannot place such a session in the
   * order (it has no readable `updatedAt`) reports it on every page: collect problems by id when
   * paging to the end.
   */
  problems: ListProblem[];
  /** Present when more sessions follow. */
  nextCursor?: string;
}

/** Result of {@link SessionStore.append}. */
export interface AppendResult {
  /** The seq the next batch must start with. */
  nextSeq: number;
}

/** Options of {@link SessionStore.append}. */
export interface AppendOptions {
  /**
   * The event the caller last saw at the end of the session, which it planned the batch on. The
   * append then writes only when the stored event at `after.seq` is this event (same seq, type,
   * time and data) and the batch starts right after it: CONFLICT, and nothing written, when
   * another writer appended, deleted or rewrote the session since the caller looked. It saves the
   * caller a confirming read before each write (contract §4.2). Only for a batch that does not
   * start at seq 0; `after.seq` must be `events[0].seq - 1`.
   */
  after?: SessionEvent;
}

/** What a store can do beyond the base contract, for callers that adapt to it. */
export interface StoreCapabilities {
  /**
   * `append` checks {@link AppendOptions.after}. A store without this (or without `capabilities`
   * at all, as one written before it existed) may ignore the option, so a caller must confirm
   * the state it planned on with a read of its own.
   */
  readonly appendAfter: boolean;
}

/**
 * True when `store.append` checks {@link AppendOptions.after}; a caller that gets false confirms
 * the state it planned a write on with a read in the same call instead.
 *
 * The capability speaks for the `append` declared with it: an object whose `append` is its own (or
 * a nearer prototype's) while `capabilities` comes from further down its prototype chain, as a
 * wrapper made with `Object.create(store)` that overrides `append`, may drop the option, so it is
 * not taken at its inherited word (its callers keep their confirming read). A wrapper that forwards
 * the options declares `capabilities` itself.
 */
export function checksAppendAfter(store: SessionStore): boolean {
  if (store.capabilities?.appendAfter !== true) return false;
  return chainDepth(store, 'append') >= chainDepth(store, 'capabilities');
}

/** How far down `object`'s prototype chain `key` is an own property (Infinity: nowhere). */
function chainDepth(object: object, key: string): number {
  let depth = 0;
  for (let at: object | null = object; at !== null; at = Object.getPrototypeOf(at), depth++)
    if (Object.hasOwn(at, key)) return depth;
  return Number.POSITIVE_INFINITY;
}

/** How hard an append works to be durable before it resolves. */
export type Durability = 'strict' | 'relaxed';

/** Options every backend factory accepts. */
export interface StoreOptions {
  /** `strict` (default): an append resolves only once on stable storage. */
  durability?: Durability;
  /** Event types that close a unit of work (default `turn/end`, `session/end`). */
  boundaryTypes?: readonly string[];
  /** Largest serialized event in bytes (default 16 MiB). */
  maxEventBytes?: number;
  /** Deepest nesting inside `data` (default 256). */
  maxDepth?: number;
}

/**
 * The contract every tidemark backend keeps (contract §4). Every method rejects only with a
 * `TidemarkError`. A storage fault is an error, never absence and never loss.
 */
export interface SessionStore {
  /**
   * Reserves a session. Lazy: writes nothing; the session appears in `has`/`list` once its first
   * batch lands, together with its header. ALREADY_EXISTS for an id that exists or is pending here.
   */
  create(init?: CreateInit): Promise<SessionMeta>;
  /**
   * Appends a batch atomically and, with strict durability, durably. `events[0].seq` must be the
   * stored next seq. A retry of a stored batch with deep-equal events succeeds without writing.
   * With `options.after` (when {@link StoreCapabilities.appendAfter}), also CONFLICT unless the
   * stored event before the batch is that event.
   */
  append(id: string, events: readonly SessionEvent[], options?: AppendOptions): Promise<AppendResult>;
  /** Every complete event, with the commit state; torn fragments are quarantined and repaired. */
  load(id: string, options?: LoadOptions): Promise<LoadedSession>;
  /** Streams events in seq order with memory bounded independently of the log's length. */
  read(id: string, range?: ReadRange): AsyncIterable<SessionEvent>;
  /** Pages summaries, newest `updatedAt` first (ties by id), without reading event logs. */
  list(query?: ListQuery): Promise<SessionPage>;
  /** True when the session exists (materialized). False only for true absence. */
  has(id: string): Promise<boolean>;
  /** Changes summary fields atomically; on a pending session the patch is kept for the first batch. */
  update(id: string, patch: SummaryPatch): Promise<SessionSummary>;
  /**
   * Removes log and summary; no reader ever sees a half-deleted session as valid. With
   * `ifUpdatedAt`, only that version of the session: CONFLICT, and nothing removed, when it changed.
   */
  delete(id: string, options?: DeleteOptions): Promise<void>;
  /** Flushes, releases locks and handles. Later calls reject with CLOSED. */
  close(): Promise<void>;
  /** What this store can do beyond the base contract; absent means none of it. */
  readonly capabilities?: StoreCapabilities;
}
