// One session as the browser's timeline receives it: a page of its events read with `read`
// (never `load`, which may repair and so write), the health `verify` reports when the store has
// the maintenance interface, and any failure to read it as a typed error with its location.
import {
  boundaryPredicate,
  commitStateOf,
  type SessionEvent,
  type SessionHealth,
  type SessionStore,
  type SessionSummary,
  type StoreMaintenance,
} from '@tidemark/core';
import { type ErrorJson, errorJson } from './errors.js';
import { findSummary, type ProblemJson, type SessionPresenter } from './queries.js';

/** Events sent in one response; the timeline asks for the next page from `nextFrom`. */
export const EVENT_PAGE_SIZE = 10_000;

/** One session as the browser receives it. */
export interface SessionView {
  id: string;
  summary?: SessionSummary;
  /** Why there is no summary: the problem list reported, or where the lookup looked. */
  summaryProblem?: ProblemJson;
  summaryMissing?: string;
  events: SessionEvent[];
  /** Seq the events start at. */
  from: number;
  /** Present when more events follow. */
  nextFrom?: number;
  /** The failure that stopped reading, after the events read before it. */
  readError?: ErrorJson;
  /** `verify`'s result, when the store has it. */
  health?: SessionHealth;
  healthError?: ErrorJson;
  /** Seq of the last boundary event, -1 when there is none. */
  committedSeq: number;
  /** True when complete events follow the last boundary. */
  interrupted: boolean;
}

function hasVerify(store: SessionStore): store is SessionStore & Pick<StoreMaintenance, 'verify'> {
  return typeof (store as Partial<StoreMaintenance>).verify === 'function';
}

async function readPage(
  store: SessionStore,
  id: string,
  from: number,
): Promise<{ events: SessionEvent[]; more: boolean; error?: ErrorJson }> {
  const events: SessionEvent[] = [];
  try {
    // One event past the page says whether more follow.
    for await (const event of store.read(id, { fromSeq: from, toSeq: from + EVENT_PAGE_SIZE })) {
      events.push(event);
    }
  } catch (error) {
    return { events, more: false, error: errorJson(error) };
  }
  const more = events.length > EVENT_PAGE_SIZE;
  if (more) events.length = EVENT_PAGE_SIZE;
  return { events, more };
}

/**
 * The view of session `id` from seq `from`. `updatedAt` is the list's hint for finding the summary
 * quickly; `presenter` says how summary and events are shown. The commit state comes from verify, else from the summary, else from the events read
 * with the default boundary types.
 */
export async function sessionView(
  store: SessionStore,
  id: string,
  from: number,
  updatedAt: string | undefined,
  presenter?: SessionPresenter,
): Promise<SessionView> {
  const [lookup, page, health] = await Promise.all([
    findSummary(store, id, updatedAt, presenter),
    readPage(store, id, from),
    verifyOne(store, id),
  ]);
  const presentEvent = presenter?.event;
  const events = presentEvent === undefined ? page.events : page.events.map((e) => presentEvent(e));
  const view: SessionView = { id, events, from, committedSeq: -1, interrupted: false };
  if ('summary' in lookup) view.summary = lookup.summary;
  else if ('problem' in lookup) view.summaryProblem = lookup.problem;
  else view.summaryMissing = lookup.missing;
  if (page.more) view.nextFrom = from + page.events.length;
  if (page.error !== undefined) view.readError = page.error;
  if (health.health !== undefined) view.health = health.health;
  if (health.error !== undefined) view.healthError = health.error;
  const state = commitState(view, page.events, from);
  view.committedSeq = state.committedSeq;
  view.interrupted = state.interrupted;
  return view;
}

function commitState(
  view: SessionView,
  events: readonly SessionEvent[],
  from: number,
): { committedSeq: number; interrupted: boolean } {
  const count = view.health?.eventCount ?? view.summary?.eventCount;
  const committed = view.health?.committedSeq ?? view.summary?.committedSeq;
  if (committed !== undefined && count !== undefined) {
    return { committedSeq: committed, interrupted: count - 1 > committed };
  }
  if (from === 0 && view.nextFrom === undefined) return commitStateOf(events, boundaryPredicate());
  return { committedSeq: committed ?? -1, interrupted: false };
}

async function verifyOne(
  store: SessionStore,
  id: string,
): Promise<{ health?: SessionHealth; error?: ErrorJson }> {
  if (!hasVerify(store)) return {};
  try {
    const report = await store.verify({ id });
    const health = report.sessions.find((session) => session.sessionId === id);
    return health === undefined ? {} : { health };
  } catch (error) {
    return { error: errorJson(error) };
  }
}
