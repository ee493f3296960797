import {
  type SessionStore as ClaudeSessionStore,
  foldSessionSummary,
  type SessionKey,
  type SessionStoreEntry,
  type SessionSummaryEntry,
} from '@anthropic-ai/claude-agent-sdk';
import {
  cloneJson,
  isTidemarkError,
  type JsonValue,
  KeyedQueue,
  nowIso,
  type SessionStore,
  type SessionSummary,
  TidemarkError,
} from '@tidemark/core';
import { checkEntries, checkKey, checkProjectKey, tidemarkIdOf } from './keys.js';
import {
  EVENT,
  emptySession,
  type FoldedSession,
  foldSession,
  type ListingState,
  MAIN,
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
 * Failures are `TidemarkError`s: INVALID for bad keys and entries, the store's IO, CORRUPT and
 * CLOSED for storage faults, which reach the SDK as errors, never as an absent session.
 */
export class TidemarkSessionStore implements ClaudeSessionStore {
  readonly #store: SessionStore;
  readonly #queue = new KeyedQueue();
  /** Folded sessions this object wrote or read; an append that loses a race reloads. */
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
    await this.#queue.run(id, async () => {
      for (let attempt = 0; ; attempt++) {
        const session = this.#cache.get(id) ?? (await this.#read(id, owner(key)));
        const kept = newEntries(session, key, copy);
        if (kept.length === 0) return;
        try {
          await this.#write(id, key, session, appendBatch(session, key, kept));
          return;
        } catch (error) {
          this.#cache.delete(id);
          if (!isRace(error) || attempt >= this.#maxConflictRetries) throw error;
        }
      }
    });
  }

  /** The transcript's entries in append order, or null when it was never written (or deleted). */
  async load(key: SessionKey): Promise<SessionStoreEntry[] | null> {
    checkKey(key, 'load');
    const id = tidemarkIdOf(key);
    const session = await this.#queue.run(id, () => this.#read(id, owner(key)));
    const transcript = session.transcripts.get(transcriptName(key));
    return transcript === undefined ? null : (cloneJson(transcript.entries) as SessionStoreEntry[]);
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
      for (let attempt = 0; ; attempt++) {
        const session = await this.#read(id, owner(key));
        if (!session.transcripts.has(key.subpath)) return;
        try {
          await this.#write(id, key, session, dropBatch(session, key));
          return;
        } catch (error) {
          this.#cache.delete(id);
          if (!isRace(error) || attempt >= this.#maxConflictRetries) throw error;
        }
      }
    });
  }

  /** Subpaths of a session's subagent transcripts. */
  async listSubkeys(key: { projectKey: string; sessionId: string }): Promise<string[]> {
    checkKey(key, 'listSubkeys', false);
    const id = tidemarkIdOf(key);
    const session = await this.#queue.run(id, () => this.#read(id, owner(key)));
    return [...session.transcripts.keys()].filter((name) => name !== MAIN);
  }

  async #read(id: string, key: Owner): Promise<FoldedSession> {
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

  async #write(id: string, key: SessionKey, before: FoldedSession, batch: Batch): Promise<void> {
    const eventCount = before.nextSeq + batch.events.length;
    const attrs: ListingAttrs = {
      projectKey: key.projectKey,
      sessionId: key.sessionId,
      eventCount,
      ...batch.listing,
    };
    if (before.nextSeq === 0) {
      try {
        await this.#store.create({ id, cwd: key.projectKey });
      } catch (error) {
        // Reserved by an earlier attempt here, or written by another writer: the append decides.
        if (!isTidemarkError(error, 'ALREADY_EXISTS')) throw error;
      }
      // Kept with the reservation and written together with the first batch.
      await this.#store.update(id, { attrs: { claude: attrs as unknown as JsonValue } });
    }
    const time = nowIso();
    await this.#store.append(
      id,
      batch.events.map((event, i) => ({ seq: before.nextSeq + i, type: event.type, time, data: event.data })),
    );
    this.#cache.set(id, batch.after);
    if (before.nextSeq !== 0) {
      // A cache for listing: the batch's closing event holds the same state, and a listing that
      // finds these attrs behind the log reads it from there. So a failure here loses nothing,
      // and the append, which is durable, is not reported as failed (the SDK would retry it).
      await this.#store
        .update(id, { attrs: { claude: attrs as unknown as JsonValue } })
        .catch(() => undefined);
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
    if (attrs.eventCount === summary.eventCount) return { ...attrs };
    // The attrs lag the log (a crash or fault between append and update): the last event of
    // every batch carries the state after it.
    for await (const event of this.#store.read(summary.id, { fromSeq: summary.eventCount - 1 })) {
      if (event.type === EVENT.end)
        return { ...(event.data as unknown as ListingState), sessionId: attrs.sessionId };
    }
    throw new TidemarkError('CORRUPT', `session ${summary.id}: the log does not end with a closing event`, {
      sessionId: summary.id,
      location: { seq: summary.eventCount - 1 },
    });
  }
}

interface Batch {
  events: PlannedEvent[];
  listing: ListingState;
  after: FoldedSession;
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

function closing(listing: ListingState): PlannedEvent {
  return { type: EVENT.end, data: listing as unknown as JsonValue };
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
  const listing: ListingState = { mtime, summary, subkeys };
  const transcripts = new Map(session.transcripts);
  const before = session.transcripts.get(name);
  const uuids = new Set(before?.uuids);
  for (const entry of entries) if (entry.uuid !== undefined) uuids.add(entry.uuid);
  transcripts.set(name, {
    entries: [...(before?.entries ?? []), ...(entries as unknown as JsonValue[])],
    uuids,
  });
  const events: PlannedEvent[] = [
    { type: EVENT.append, data: header(key) },
    ...entries.map((entry) => ({ type: EVENT.entry, data: entry as unknown as JsonValue })),
    closing(listing),
  ];
  return { events, listing, after: { transcripts, listing, nextSeq: session.nextSeq + events.length } };
}

function dropBatch(session: FoldedSession, key: SessionKey): Batch {
  const name = transcriptName(key);
  const listing: ListingState = {
    ...session.listing,
    subkeys: session.listing.subkeys.filter((s) => s !== name),
  };
  const transcripts = new Map(session.transcripts);
  transcripts.delete(name);
  const events: PlannedEvent[] = [{ type: EVENT.drop, data: header(key) }, closing(listing)];
  return { events, listing, after: { transcripts, listing, nextSeq: session.nextSeq + events.length } };
}
