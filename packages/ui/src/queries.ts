// The session list as the browser asks for it: one keyset page of the store at a time, a search
// that scans a bounded number of sessions per request and hands back a cursor to continue, and
// the summary of one session found without walking the whole store.
import {
  encodeCursor,
  type ListProblem,
  type SessionEvent,
  type SessionStore,
  type SessionSummary,
  TidemarkError,
} from '@tidemark/core';
import { type ErrorJson, errorJson } from './errors.js';

/** Sessions on one list page. */
export const LIST_PAGE_SIZE = 50;
/** Most sessions a search matches before it stops and offers to continue. */
export const SEARCH_RESULT_LIMIT = 50;
/** Most sessions one search request looks at; beyond, it offers to continue. */
export const SEARCH_SCAN_LIMIT = 20_000;
/** Page size of the store pages a search walks. */
const SEARCH_STORE_PAGE = 1000;
/** How many of the newest sessions a summary lookup without a usable hint looks through. */
export const SUMMARY_SCAN_LIMIT = 2000;

/**
 * How the browser shows what the store returns, for a store whose values cannot be shown as they
 * are (the CLI passes one that puts "sealed" in place of each sealed value when it has no keys).
 * It changes only what the pages and the JSON API show and search, never the JSONL export, which
 * streams the events as the store returns them. Both functions are pure and must not throw.
 */
export interface SessionPresenter {
  summary?(summary: SessionSummary): SessionSummary;
  event?(event: SessionEvent): SessionEvent;
}

/** The summary as shown. */
export function presentSummary(
  summary: SessionSummary,
  presenter: SessionPresenter | undefined,
): SessionSummary {
  return presenter?.summary === undefined ? summary : presenter.summary(summary);
}

/** A session that list could only report as a problem, as the browser receives it. */
export interface ProblemJson {
  id: string;
  error: ErrorJson;
}

/** One page of the list or of a search. */
export interface ListResponse {
  sessions: SessionSummary[];
  problems: ProblemJson[];
  /** Cursor of the next page (list) or of where the search goes on. */
  nextCursor?: string;
  /** Search only: sessions looked at by this request. */
  scanned?: number;
}

function problemJson(problem: ListProblem): ProblemJson {
  return { id: problem.id, error: errorJson(problem.error) };
}

/** One keyset page of the store, newest first. */
export async function listPage(
  store: SessionStore,
  cursor: string | undefined,
  presenter?: SessionPresenter,
): Promise<ListResponse> {
  const page = await store.list({ limit: LIST_PAGE_SIZE, ...(cursor !== undefined && { cursor }) });
  const response: ListResponse = {
    sessions: page.sessions.map((s) => presentSummary(s, presenter)),
    problems: page.problems.map(problemJson),
  };
  if (page.nextCursor !== undefined) response.nextCursor = page.nextCursor;
  return response;
}

/** True when the search text occurs in the session's title, first prompt, cwd, a tag or its id. */
export function matchesSearch(summary: SessionSummary, needle: string): boolean {
  const fields = [summary.title, summary.firstPrompt, summary.cwd, summary.id, ...(summary.tags ?? [])];
  return fields.some((field) => field?.toLowerCase().includes(needle) === true);
}

/**
 * Sessions matching `text`, newest first, scanning from `cursor` at most {@link SEARCH_SCAN_LIMIT}
 * sessions. It stops after the store page on which the {@link SEARCH_RESULT_LIMIT}th match was found
 * (keeping that page's other matches, so that continuing skips none). Problems met on the way are
 * all returned: a session that cannot be described cannot be ruled out.
 */
export async function searchPage(
  store: SessionStore,
  text: string,
  cursor: string | undefined,
  presenter?: SessionPresenter,
): Promise<ListResponse> {
  const needle = text.trim().toLowerCase();
  if (needle === '') throw new TidemarkError('INVALID', 'search: the search text is empty');
  const sessions: SessionSummary[] = [];
  const problems = new Map<string, ProblemJson>();
  let scanned = 0;
  let next = cursor;
  do {
    const page = await store.list({ limit: SEARCH_STORE_PAGE, ...(next !== undefined && { cursor: next }) });
    scanned += page.sessions.length;
    // What is searched is what is shown: never the stored form of a value the page hides.
    for (const stored of page.sessions) {
      const summary = presentSummary(stored, presenter);
      if (matchesSearch(summary, needle)) sessions.push(summary);
    }
    for (const problem of page.problems) problems.set(problem.id, problemJson(problem));
    next = page.nextCursor;
  } while (next !== undefined && sessions.length < SEARCH_RESULT_LIMIT && scanned < SEARCH_SCAN_LIMIT);
  const response: ListResponse = { sessions, problems: [...problems.values()], scanned };
  if (next !== undefined) response.nextCursor = next;
  return response;
}

/** What a summary lookup found: the summary, the problem list reported for the id, or neither. */
export type SummaryLookup = { summary: SessionSummary } | { problem: ProblemJson } | { missing: string };

/**
 * The summary of session `id`. With `updatedAt` (the list page's hint) one short store page
 * starting at that time finds it, whatever the store's size: the cursor is built with core's
 * `encodeCursor`, which every backend on `SessionStoreBase` reads. A store that refuses it, or a
 * session updated since, falls back to the newest {@link SUMMARY_SCAN_LIMIT} sessions (an updated
 * session moved to the front).
 */
export async function findSummary(
  store: SessionStore,
  id: string,
  updatedAt: string | undefined,
  presenter?: SessionPresenter,
): Promise<SummaryLookup> {
  if (updatedAt !== undefined) {
    try {
      const cursor = encodeCursor({ updatedAt, id: '' });
      const page = await store.list({ cursor, limit: 20 });
      const found = page.sessions.find((summary) => summary.id === id);
      if (found !== undefined) return { summary: presentSummary(found, presenter) };
    } catch {
      // A store with cursors of its own: look through the newest sessions instead.
    }
  }
  let cursor: string | undefined;
  let scanned = 0;
  do {
    const page = await store.list({ limit: 1000, ...(cursor !== undefined && { cursor }) });
    const found = page.sessions.find((summary) => summary.id === id);
    if (found !== undefined) return { summary: presentSummary(found, presenter) };
    const problem = page.problems.find((p) => p.id === id);
    if (problem !== undefined) return { problem: problemJson(problem) };
    scanned += page.sessions.length;
    cursor = page.nextCursor;
  } while (cursor !== undefined && scanned < SUMMARY_SCAN_LIMIT);
  return {
    missing:
      cursor === undefined
        ? 'the store lists no summary for this session'
        : `no summary among the newest ${scanned} sessions; open it from the list to find it faster`,
  };
}
