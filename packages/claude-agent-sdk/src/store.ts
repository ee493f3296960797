import {
  type SessionStore as ClaudeSessionStore,
  foldSessionSummary,
  type SessionKey,
  type SessionStoreEntry,
  type SessionSummaryEntry,
} from '@anthropic-ai/claude-agent-sdk';
import {
  checksAppendAfter,
  cloneJson,
  isTidemarkError,
  type JsonValue,
  KeyedQueue,
  nowIso,
  type SessionEvent,
  type SessionStore,
  type SessionSummary,
  TidemarkError,
} from '@tidemark/core';
import { checkEntries, checkKey, checkProjectKey, tidemarkIdOf } from './keys.js';
import {
  type BatchLink,
  EVENT,
  emptySession,
  type FoldedSession,
  foldInto,
  foldSession,
  type ListingState,
  MAIN,
  newNonce,
  nonceOf,
  transcriptName,
} from './transcript.js';

/** Options of {@link TidemarkSessionStore}. */
export interface TidemarkSessionStoreOptions {
  /** Any tidemark store: memory, JSONL, SQLite, PostgreSQL. */
  store: SessionStore;
  /** How often an append is replanned when another writer appended first (default 8). */
  maxConflictRetries?: number;
}

type Owner = Omit<SessionKey, 'subpath'>;
interface PlannedEvent {
  type: string;
  data: JsonValue;
}

/** The summary attrs each session carries for listing, under `attrs.claude`. */
interface ListingAttrs extends ListingState {
  projectKey: string;
  sessionId: string;
  /** The event count the state belongs to: a different count means a newer batch landed. */
  eventCount: number;
}

const owner = (key: SessionKey): Owner => ({ projectKey: key.projectKey, sessionId: key.sessionId });

/**
 * The Claude Agent SDK's `SessionStore` over any tidemark store. A Claude session (its main
 * transcript and its subagent transcripts) is one tidemark session, keyed by a hash of project key
 * and session id; each `append` is one batch, so it lands whole or not at all, and an entry whose
 * `uuid` is already in its transcript is skipped, so SDK retries and `importSessionToStore`
 * replays add nothing twice. Summaries are folded with the SDK's `foldSessionSummary` inside the
 * append and written in the same batch.
 *
 * Several processes may share one store, each with its own object: the store is the truth and
 * this object's cache of folded sessions only a hint. A read first confirms the cache with one
 * read of what follows the last batch it knows (the batch itself, by its random nonce), so another
 * host's append, delete or rewrite is seen as by a process that has just started. A write on a
 * store that checks `append(…, { after })` is planned on the cache and names the log's last event
 * it knows, so the append itself refuses it (CONFLICT, nothing written) when the log is not the one
 * cached; the session is then read and the write planned again. A write that the cache says has
 * nothing to do is confirmed by that read first. On a store without the check, the write is planned
 * on that read, and a write whose log was deleted and rewritten while it was planned is found by a
 * read after it, skipped by every fold, and planned again. Racing appends replan on CONFLICT
 * (`maxConflictRetries`).
 *
 * Failures are `TidemarkError`s: INVALID for bad keys and entries, the store's IO, CORRUPT and
 * CLOSED for storage faults, which reach the SDK as errors, never as an absent session; CONFLICT
 * when other writers won more than `maxConflictRetries` races in a row.
 */
export class TidemarkSessionStore implements ClaudeSessionStore {
  readonly #store: SessionStore;
  readonly #queue = new KeyedQueue();
  /** Folded sessions this object wrote or read: a hint, confirmed against the store on every call. */
  readonly #cache = new Map<string, FoldedSession>();
  readonly #maxConflictRetries: number;

  constructor(options: TidemarkSessionStoreOptions) {
    if (options === null || typeof options !== 'object' || options.store === undefined) {
      throw new TidemarkError('INVALID', 'TidemarkSessionStore: options.store is required');
    }
    this.#store = options.store;
    this.#maxConflictRetries = options.maxConflictRetries ?? 8;
  }

  /** Appends entries to one transcript as one batch, skipping entries whose uuid it already holds. */
  async append(key: SessionKey, entries: SessionStoreEntry[]): Promise<void> {
    checkKey(key, 'append');
    checkEntries(entries);
    if (entries.length === 0) return;
    const copy = cloneJson(entries as unknown as JsonValue) as unknown as SessionStoreEntry[];
    const id = tidemarkIdOf(key);
    await this.#queue.run(id, () =>
      this.#commit(id, key, (session) => {
        const kept = newEntries(session, key, copy);
        return kept.length === 0 ? undefined : appendBatch(session, key, kept);
      }),
    );
  }

  /** The transcript's entries in append order, or null when it was never written (or deleted). */
  async load(key: SessionKey): Promise<SessionStoreEntry[] | null> {
    checkKey(key, 'load');
    const id = tidemarkIdOf(key);
    return this.#queue.run(id, async () => {
      const session = await this.#current(id, owner(key));
      const transcript = session.transcripts.get(transcriptName(key));
      return transcript === undefined ? null : (cloneJson(transcript.entries) as SessionStoreEntry[]);
    });
  }

  /** Sessions of a project that have a main transcript, with their last persist time. */
  async listSessions(projectKey: string): Promise<Array<{ sessionId: string; mtime: number }>> {
    checkProjectKey(projectKey, 'listSessions');
    const listed = await this.#listProject(projectKey);
    return listed.filter((l) => l.summary !== null).map((l) => ({ sessionId: l.sessionId, mtime: l.mtime }));
  }

  /** The folded summaries of a project's sessions, one listing call, no transcript reads. */
  async listSessionSummaries(projectKey: string): Promise<SessionSummaryEntry[]> {
    checkProjectKey(projectKey, 'listSessionSummaries');
    const listed = await this.#listProject(projectKey);
    return listed.flatMap((l) => (l.summary === null ? [] : [structuredClone(l.summary)]));
  }

  /**
   * Deletes a main transcript with all its subagent transcripts (one tidemark delete), or one
   * subagent transcript (one appended batch). Deleting what does not exist is not an error.
   */
  async delete(key: SessionKey): Promise<void> {
    checkKey(key, 'delete');
    const id = tidemarkIdOf(key);
    await this.#queue.run(id, async () => {
      this.#cache.delete(id);
      if (key.subpath === undefined) {
        try {
          await this.#store.delete(id);
        } catch (error) {
          if (!isTidemarkError(error, 'NOT_FOUND')) throw error;
        }
        return;
      }
      await this.#commit(id, key, (session) =>
        session.transcripts.has(transcriptName(key)) ? dropBatch(session, key) : undefined,
      );
    });
  }

  /** Subpaths of a session's subagent transcripts. */
  async listSubkeys(key: { projectKey: string; sessionId: string }): Promise<string[]> {
    checkKey(key, 'listSubkeys', false);
    const id = tidemarkIdOf(key);
    const session = await this.#queue.run(id, () => this.#current(id, owner(key)));
    return [...session.transcripts.keys()].filter((name) => name !== MAIN);
  }

  /**
   * Plans a batch with `plan` (undefined: nothing to write) and appends it, planning again when
   * another writer got there first. On a store that checks `append(…, { after })`, a cached
   * session is planned on as it is and the append names its last event, so it lands only on that
   * log; "nothing to write" is never decided on the cache alone. Elsewhere every plan stands on a
   * read made for it. A refusal of a plan made on the cache alone (a stale cache) is no lost race.
   */
  async #commit(
    id: string,
    key: SessionKey,
    plan: (session: FoldedSession) => Batch | undefined,
  ): Promise<void> {
    const checked = checksAppendAfter(this.#store);
    const cached = this.#cache.get(id);
    let confirmed = !(checked && cached?.last !== undefined && cached.nextSeq > 0);
    let session = confirmed ? await this.#current(id, owner(key)) : cached!;
    for (let attempt = 0; ; ) {
      const batch = plan(session);
      if (batch === undefined) {
        // Every entry is stored already (or the transcript is gone): the read in this call confirmed it.
        if (confirmed) return;
      } else {
        try {
          await this.#write(id, key, session, batch, checked);
          return;
        } catch (error) {
          if (!isRace(error)) throw error;
          if (confirmed && attempt++ >= this.#maxConflictRetries) throw error;
        }
      }
      session = await this.#current(id, owner(key));
      confirmed = true;
    }
  }

  /**
   * The session as the store holds it now: the cached fold brought up to date by one read from
   * its last known batch on, or, when that batch is gone (deleted, rewritten) or nothing is
   * cached, the whole log folded again.
   */
  async #current(id: string, key: Owner): Promise<FoldedSession> {
    const cached = this.#cache.get(id);
    if (cached !== undefined && cached.lastNonce !== null) {
      const caughtUp = await this.#catchUp(id, key, cached);
      if (caughtUp !== undefined) return caughtUp;
    }
    return this.#read(id, key);
  }

  /** Folds what follows the cached session's last batch; undefined when that batch is not there. */
  async #catchUp(id: string, key: Owner, cached: FoldedSession): Promise<FoldedSession | undefined> {
    let events: SessionEvent[];
    try {
      events = await readSince(this.#store, id, cached.nextSeq - 1, CATCH_UP_EVENTS);
    } catch (error) {
      if (!isTidemarkError(error, 'NOT_FOUND')) throw error;
      const empty = emptySession();
      this.#cache.set(id, empty);
      return empty;
    }
    const anchor = events[0];
    const same =
      anchor?.seq === cached.nextSeq - 1 && anchor.type === EVENT.end && nonceOf(anchor) === cached.lastNonce;
    if (!same) return undefined;
    // Kept as read: the event the next batch names as the one it follows is the store's own.
    cached.last = anchor;
    try {
      return foldInto(cached, events.slice(1), key, id);
    } catch (error) {
      this.#cache.delete(id);
      throw error;
    }
  }

  /** Folds the whole log. */
  async #read(id: string, key: Owner): Promise<FoldedSession> {
    this.#cache.delete(id);
    let session: FoldedSession;
    try {
      session = foldSession((await this.#store.load(id)).events, key, id);
    } catch (error) {
      if (!isTidemarkError(error, 'NOT_FOUND')) throw error;
      session = emptySession();
    }
    this.#cache.set(id, session);
    return session;
  }

  /**
   * Appends a planned batch after `before` (the cached session), closed by an event linking it to
   * the batch before it. With `checked` (the store checks `after`), the append names the last
   * event of `before`, so it lands only on that log; otherwise (`before` confirmed by a read in
   * this call) a read after it confirms that it landed on that log.
   * @throws TidemarkError CONFLICT when another writer appended first or the log was replaced.
   */
  async #write(
    id: string,
    key: SessionKey,
    before: FoldedSession,
    batch: Batch,
    checked: boolean,
  ): Promise<void> {
    const link: BatchLink = { nonce: newNonce(), prev: before.lastNonce };
    const planned = [...batch.events, closing(batch.listing, link)];
    const eventCount = before.nextSeq + planned.length;
    const attrs: ListingAttrs = {
      projectKey: key.projectKey,
      sessionId: key.sessionId,
      eventCount,
      ...batch.listing,
    };
    if (before.nextSeq === 0) await this.#reserve(id, key, attrs);
    const time = nowIso();
    const written = planned.map((event, i) => ({
      seq: before.nextSeq + i,
      type: event.type,
      time,
      data: event.data,
    }));
    const after = checked && before.nextSeq !== 0 ? before.last : undefined;
    if (after !== undefined) await this.#store.append(id, written, { after });
    else {
      await this.#store.append(id, written);
      if (before.nextSeq !== 0) await this.#confirmLink(id, before, written.length);
    }
    foldInto(before, written, owner(key), id);
    if (before.nextSeq !== 0) {
      // A cache for listing: the batch's closing event holds the same state, and a listing that
      // finds these attrs behind the log reads it from there. So a failure here loses nothing,
      // and the append, which is durable, is not reported as failed (the SDK would retry it).
      await this.#store
        .update(id, { attrs: { claude: attrs as unknown as JsonValue } })
        .catch(() => undefined);
    }
  }

  /** Reserves a new session with its listing attrs, which its first batch then writes with it. */
  async #reserve(id: string, key: SessionKey, attrs: ListingAttrs): Promise<void> {
    try {
      await this.#store.create({ id, cwd: key.projectKey });
    } catch (error) {
      if (!isTidemarkError(error, 'ALREADY_EXISTS')) throw error;
      // Reserved by an earlier attempt in this store instance, or written by another host since
      // this call read it: then its attrs are not this plan's to set.
      if (await this.#store.has(id)) throw raced(id, 'another writer created the session first');
    }
    await this.#store.update(id, { attrs: { claude: attrs as unknown as JsonValue } });
  }

  /**
   * Confirms that the batch just appended follows the batch `before` ended with. The seq check
   * alone cannot tell a log that another host deleted and rewrote to the same length: there the
   * batch landed on a log it was not planned on, every fold skips it, and it is planned again.
   */
  async #confirmLink(id: string, before: FoldedSession, written: number): Promise<void> {
    let anchor: SessionEvent | undefined;
    try {
      anchor = (await readSince(this.#store, id, before.nextSeq - 1, written + 1))[0];
    } catch (error) {
      if (!isTidemarkError(error, 'NOT_FOUND')) throw error;
    }
    if (anchor?.seq !== before.nextSeq - 1 || nonceOf(anchor) !== before.lastNonce) {
      this.#cache.delete(id);
      throw raced(id, 'the session was deleted and written again while this write was planned');
    }
  }

  /** Listing state of every session of a project, repaired from the log where attrs lag. */
  async #listProject(projectKey: string): Promise<Array<ListingState & { sessionId: string }>> {
    const out: Array<ListingState & { sessionId: string }> = [];
    let cursor: string | undefined;
    do {
      const page = await this.#store.list({ cwd: projectKey, ...(cursor !== undefined && { cursor }) });
      if (page.problems.length > 0) throw page.problems[0]!.error;
      for (const summary of page.sessions) {
        const listing = await this.#listingOf(summary, projectKey);
        if (listing !== undefined) out.push(listing);
      }
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return out;
  }

  async #listingOf(
    summary: SessionSummary,
    projectKey: string,
  ): Promise<(ListingState & { sessionId: string }) | undefined> {
    const attrs = summary.attrs?.claude as unknown as ListingAttrs | undefined;
    if (attrs === undefined || attrs.projectKey !== projectKey || typeof attrs.sessionId !== 'string')
      return undefined;
    if (attrs.eventCount === summary.eventCount) {
      const { mtime, summary: folded, subkeys } = attrs;
      return { mtime, summary: folded, subkeys, sessionId: attrs.sessionId };
    }
    // The attrs lag the log (a crash, a fault or another host between append and update). Every
    // closing event carries the state after its batch, but the last one may close a batch the
    // fold skips (see BatchLink), so the state is the fold's: rare, and one log read.
    const owner = { projectKey, sessionId: attrs.sessionId };
    const session = await this.#queue.run(summary.id, () => this.#current(summary.id, owner));
    return { ...session.listing, sessionId: attrs.sessionId };
  }
}

/** A planned batch: its events before the closing one, and the listing state after it. */
interface Batch {
  events: PlannedEvent[];
  listing: ListingState;
}

function isRace(error: unknown): boolean {
  return isTidemarkError(error, 'CONFLICT') || isTidemarkError(error, 'NOT_FOUND');
}

/** Entries not yet in the transcript: an entry whose uuid is there (or earlier in the batch) is skipped. */
function newEntries(
  session: FoldedSession,
  key: SessionKey,
  entries: SessionStoreEntry[],
): SessionStoreEntry[] {
  const seen = new Set(session.transcripts.get(transcriptName(key))?.uuids);
  return entries.filter((entry) => {
    if (entry.uuid === undefined) return true;
    if (seen.has(entry.uuid)) return false;
    seen.add(entry.uuid);
    return true;
  });
}

function header(key: SessionKey): JsonValue {
  return { projectKey: key.projectKey, sessionId: key.sessionId, subpath: key.subpath ?? null };
}

function closing(listing: ListingState, link: BatchLink): PlannedEvent {
  return { type: EVENT.end, data: { ...listing, ...link } as unknown as JsonValue };
}

/** Events a catch-up reads from the end of the log before it reads from its last known batch on. */
const CATCH_UP_EVENTS = 64;

/**
 * The events from `fromSeq` on, read from the end of the log when there are at most `expected` of
 * them (one short lookup on every backend), else streamed from `fromSeq`.
 */
async function readSince(
  store: SessionStore,
  id: string,
  fromSeq: number,
  expected: number,
): Promise<SessionEvent[]> {
  const events: SessionEvent[] = [];
  for await (const event of store.read(id, { fromSeq, last: expected })) events.push(event);
  if (events.length < expected || events[0]!.seq === fromSeq) return events;
  events.length = 0;
  for await (const event of store.read(id, { fromSeq })) events.push(event);
  return events;
}

function raced(id: string, why: string): TidemarkError {
  return new TidemarkError('CONFLICT', `session ${id}: ${why}`, { sessionId: id, retryable: true });
}

function appendBatch(session: FoldedSession, key: SessionKey, entries: SessionStoreEntry[]): Batch {
  const name = transcriptName(key);
  const mtime = Math.max(Date.now(), session.listing.mtime + 1);
  const summary =
    key.subpath === undefined
      ? foldSessionSummary(session.listing.summary ?? undefined, key, entries, { mtime })
      : session.listing.summary;
  const subkeys =
    name === MAIN || session.listing.subkeys.includes(name)
      ? session.listing.subkeys
      : [...session.listing.subkeys, name];
  const events: PlannedEvent[] = [
    { type: EVENT.append, data: header(key) },
    ...entries.map((entry) => ({ type: EVENT.entry, data: entry as unknown as JsonValue })),
  ];
  return { events, listing: { mtime, summary, subkeys } };
}

function dropBatch(session: FoldedSession, key: SessionKey): Batch {
  const name = transcriptName(key);
  const listing: ListingState = {
    ...session.listing,
    subkeys: session.listing.subkeys.filter((s) => s !== name),
  };
  return { events: [{ type: EVENT.drop, data: header(key) }], listing };
}
