/**
 * @packageDocumentation
 * A local, read-only web page over any tidemark {@link SessionStore}: the session list with
 * search and problems, and each session as a timeline. Start it with {@link startSessionBrowser}.
 */
export type { SessionStore } from '@tidemark/core';
export { type ErrorJson, errorJson, statusOf } from './errors.js';
export { escapeHtml } from './pages.js';
export {
  findSummary,
  LIST_PAGE_SIZE,
  type ListResponse,
  listPage,
  matchesSearch,
  type ProblemJson,
  presentSummary,
  SEARCH_RESULT_LIMIT,
  SEARCH_SCAN_LIMIT,
  type SessionPresenter,
  searchPage,
} from './queries.js';
export { type SessionBrowser, type SessionBrowserOptions, startSessionBrowser } from './server.js';
export { EVENT_PAGE_SIZE, type SessionView, sessionView } from './session-view.js';
