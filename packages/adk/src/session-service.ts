// Google ADK's BaseSessionService over any tidemark store. One ADK session is one tidemark session
// (see records.ts for its log); the `app:` state of an app and the `user:` state of a user are one
// tidemark session each (shared-state.ts). The service keeps nothing between calls: every call
// reads what it needs from the store, so another process's writes are seen by the next call, and
// every write is appended after the event its read found where the store checks that (writes.ts).
import { randomUUID } from 'node:crypto';
import {
  BaseSessionService,
  type CreateSessionRequest,
  createEvent,
  type DeleteSessionRequest,
  type Event,
  type GetSessionRequest,
  type ListSessionsRequest,
  type ListSessionsResponse,
  type Session,
} from '@google/adk';
import { errors, isTidemarkError, type SessionStore, TidemarkError } from '@tidemark/core';
import { appStateLog, assertName, sessionLog, userStateLog } from './keys.js';
import { listSessionPage } from './listing.js';
import {
  ADK_EVENT,
  encodeEvent,
  encodeState,
  type JsonObject,
  ownCopy,
  type StoredEvent,
  setOwn,
} from './records.js';
import { readSession } from './session-log.js';
import { readShared, writeShared } from './shared-state.js';
import { appendToSession, splitDelta } from './writes.js';

/** Options of {@link TidemarkSessionService}. */
export interface TidemarkSessionServiceOptions {
  /** The store every session, and the shared state, is kept in. */
  store: SessionStore;
  /**
   * Attempts of an `appendEvent` that keeps losing the race for the session's next seq to other
   * writers before it rejects with CONFLICT (retryable). Default 8.
   */
  maxConflictRetries?: number;
}

/**
 * An ADK session service keeping sessions, events and shared state in a tidemark store. Events
 * come back in the order they were appended (by seq), never re-sorted by timestamp.
 */
export class TidemarkSessionService extends BaseSessionService {
  readonly #store: SessionStore;
  readonly #maxConflictRetries: number;

  constructor(options: TidemarkSessionServiceOptions) {
    super();
    if (typeof options?.store?.append !== 'function')
      throw errors.invalid('TidemarkSessionService: options.store must be a tidemark SessionStore');
    const retries = options.maxConflictRetries ?? 8;
    if (!Number.isInteger(retries) || retries < 0)
      throw errors.invalid(
        `TidemarkSessionService: maxConflictRetries must be a non-negative integer, got ${retries}`,
      );
    this.#store = options.store;
    this.#maxConflictRetries = retries;
  }

  /**
   * Creates a session. `app:` and `user:` keys of `state` go to the shared state (written before
   * the session), `temp:` keys are dropped. ALREADY_EXISTS when the session is stored.
   */
  override async createSession(request: CreateSessionRequest): Promise<Session> {
    const { appName, userId } = request;
    assertName(appName, 'createSession: appName');
    assertName(userId, 'createSession: userId');
    const sessionId =
      request.sessionId === undefined || request.sessionId === '' ? randomUUID() : request.sessionId;
    assertName(sessionId, 'createSession: sessionId');
    const delta = splitDelta(encodeState(request.state ?? {}, 'createSession: state'));
    await this.#writeShared(appName, userId, delta);
    const log = sessionLog(appName, userId, sessionId);
    const createdAt = Date.now();
    await this.#materialize(log, { appName, userId, sessionId, state: delta.own, createdAt });
    return {
      id: sessionId,
      appName,
      userId,
      state: await this.#mergedState(appName, userId, delta.own),
      events: [],
      lastUpdateTime: createdAt,
    };
  }

  /**
   * The session with its events (the last `numRecentEvents`, those after `afterTimestamp`),
   * undefined only when it is not stored. A storage fault rejects.
   */
  override async getSession(request: GetSessionRequest): Promise<Session | undefined> {
    const { appName, userId, sessionId } = request;
    assertName(appName, 'getSession: appName');
    assertName(userId, 'getSession: userId');
    assertName(sessionId, 'getSession: sessionId');
    const config = request.config ?? {};
    const filter = {
      // ADK's own services take 0 as "no limit" and "no bound"; so does this one.
      ...(config.numRecentEvents
        ? { numRecentEvents: positive(config.numRecentEvents, 'numRecentEvents') }
        : {}),
      ...(config.afterTimestamp ? { afterTimestamp: finite(config.afterTimestamp, 'afterTimestamp') } : {}),
    };
    const view = await readSession(
      this.#store,
      sessionLog(appName, userId, sessionId),
      { appName, userId, sessionId },
      filter,
    );
    if (view === undefined) return undefined;
    return {
      id: sessionId,
      appName,
      userId,
      state: await this.#mergedState(appName, userId, view.state),
      events: view.events.map(toAdkEvent),
      lastUpdateTime: view.lastUpdateTime,
    };
  }

  /** A page of sessions (without events or state), with ADK's paging and ordering. */
  override async listSessions(request: ListSessionsRequest): Promise<ListSessionsResponse> {
    assertName(request.appName, 'listSessions: appName');
    if (request.userId !== undefined) assertName(request.userId, 'listSessions: userId');
    return listSessionPage(this.#store, request);
  }

  /** Deletes the session; a session that is not stored is no error. Shared state stays. */
  override async deleteSession(request: DeleteSessionRequest): Promise<void> {
    const { appName, userId, sessionId } = request;
    assertName(appName, 'deleteSession: appName');
    assertName(userId, 'deleteSession: userId');
    assertName(sessionId, 'deleteSession: sessionId');
    try {
      await this.#store.delete(sessionLog(appName, userId, sessionId).id);
    } catch (error) {
      if (!isTidemarkError(error, 'NOT_FOUND')) throw error;
    }
  }

  /**
   * Stores `event` (a partial event is not stored), then applies it to `session` as ADK does:
   * `temp:` keys stripped, state delta applied, an event with the same id replaced. Shared keys are
   * written first, then the session's batch. NOT_FOUND when the session is not stored.
   */
  override async appendEvent({ session, event }: { session: Session; event: Event }): Promise<Event> {
    if (event?.partial === true) return event;
    assertName(session?.appName, 'appendEvent: session.appName');
    assertName(session.userId, 'appendEvent: session.userId');
    assertName(session.id, 'appendEvent: session.id');
    const stored = encodeEvent(event, 'appendEvent');
    const delta = splitDelta(stored.actions?.stateDelta ?? {});
    if (stored.actions !== undefined) stored.actions.stateDelta = withoutTemp(stored.actions.stateDelta);
    await this.#writeShared(session.appName, session.userId, delta);
    const known = Array.isArray(session.events) && session.events.some((e) => e?.id === stored.id);
    await appendToSession(this.#store, sessionLog(session.appName, session.userId, session.id), stored, {
      known,
      maxConflictRetries: this.#maxConflictRetries,
    });
    await super.appendEvent({ session, event });
    session.lastUpdateTime = event.timestamp;
    return event;
  }

  async #writeShared(appName: string, userId: string, delta: ReturnType<typeof splitDelta>): Promise<void> {
    if (Object.keys(delta.app).length > 0)
      await writeShared(this.#store, appStateLog(appName), delta.app, { scope: 'app', appName });
    if (Object.keys(delta.user).length > 0)
      await writeShared(this.#store, userStateLog(appName, userId), delta.user, {
        scope: 'user',
        appName,
        userId,
      });
  }

  async #mergedState(appName: string, userId: string, own: JsonObject): Promise<Record<string, unknown>> {
    const [app, user] = await Promise.all([
      readShared(this.#store, appStateLog(appName)),
      readShared(this.#store, userStateLog(appName, userId)),
    ]);
    const merged = ownCopy(own);
    for (const [key, value] of Object.entries(app.state)) setOwn(merged, `app:${key}`, value);
    for (const [key, value] of Object.entries(user.state)) setOwn(merged, `user:${key}`, value);
    return merged;
  }

  /** Writes the session's first batch; ALREADY_EXISTS when it is stored already. */
  async #materialize(
    log: ReturnType<typeof sessionLog>,
    header: JsonObject & { sessionId: string },
  ): Promise<void> {
    const exists = () =>
      new TidemarkError(
        'ALREADY_EXISTS',
        `Session with id ${header.sessionId} already exists (tidemark session ${log.id})`,
        {
          sessionId: log.id,
        },
      );
    try {
      await this.#store.create({ id: log.id, cwd: log.cwd });
    } catch (error) {
      if (!isTidemarkError(error, 'ALREADY_EXISTS')) throw error;
      // A reservation left by an earlier attempt of this instance whose first batch failed is no session.
      if (await this.#store.has(log.id)) throw exists();
    }
    await this.#store.update(log.id, {
      attrs: {
        adk: {
          appName: header.appName as string,
          userId: header.userId as string,
          sessionId: header.sessionId,
        },
      },
    });
    const time = new Date().toISOString();
    try {
      await this.#store.append(log.id, [
        { seq: 0, type: ADK_EVENT.session, time, data: header },
        {
          seq: 1,
          type: ADK_EVENT.end,
          time,
          data: {
            lastUpdateTime: header.createdAt as number,
            snapshotSeq: 0,
            sinceSnapshot: 0,
            nonce: randomUUID(),
          },
        },
      ]);
    } catch (error) {
      if (isTidemarkError(error, 'CONFLICT')) throw exists();
      throw error;
    }
  }
}

/** A stored event as an ADK event again (with the brand `isEvent` checks); its timestamp kept as stored, 0 too. */
function toAdkEvent(stored: StoredEvent): Event {
  const event = createEvent(stored as unknown as Partial<Event>);
  event.timestamp = stored.timestamp;
  return event;
}

function withoutTemp(delta: JsonObject | undefined): JsonObject {
  // A plain object, as the event's other objects are (a retry compares it with the stored one).
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(delta ?? {}))
    if (!key.startsWith('temp:')) setOwn(out, key, value);
  return out;
}

function positive(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0)
    throw errors.invalid(`getSession: config.${what} must be a non-negative integer, got ${String(value)}`);
  return value;
}

function finite(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw errors.invalid(`getSession: config.${what} must be a finite number, got ${String(value)}`);
  return value;
}
