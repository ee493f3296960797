// listSessions: the sessions of a user are the tidemark sessions filed under that (app, user)'s cwd;
// the sessions of every user of an app are found by the ADK key each summary's attrs hold. ADK
// pages by offset over an order of its own (last update time, which is an event's timestamp, not
// the store's clock), so every matching session is gathered, its last update time read from the
// last event of its log, and the page cut from the sorted whole. A session the store cannot
// describe rejects the call: a list is never short.
import type { ListSessionsRequest, ListSessionsResponse, Session } from '@google/adk';
import { errors, listAll, type SessionStore, type SessionSummary } from '@tidemark/core';
import { userCwd } from './keys.js';
import { readHead } from './session-log.js';

interface Listed {
  id: string;
  appName: string;
  userId: string;
  lastUpdateTime: number;
}

/** The ADK key a summary's attrs hold, when it is an ADK session of `appName` (and `userId`). */
function keyOf(summary: SessionSummary, appName: string, userId: string | undefined) {
  const adk = summary.attrs?.adk as { appName?: unknown; userId?: unknown; sessionId?: unknown } | undefined;
  if (
    adk === undefined ||
    adk.appName !== appName ||
    typeof adk.userId !== 'string' ||
    typeof adk.sessionId !== 'string'
  )
    return undefined;
  if (userId !== undefined && adk.userId !== userId) return undefined;
  return { appName, userId: adk.userId, sessionId: adk.sessionId };
}

async function gather(store: SessionStore, appName: string, userId: string | undefined): Promise<Listed[]> {
  const found: Listed[] = [];
  const query = userId === undefined ? {} : { cwd: userCwd(appName, userId) };
  for await (const entry of listAll(store, query)) {
    if ('problem' in entry) throw entry.problem.error;
    const key = keyOf(entry.summary, appName, userId);
    if (key === undefined) continue;
    const head = await readHead(store, { id: entry.summary.id, cwd: entry.summary.cwd ?? '' });
    if (head === undefined) continue; // deleted since the listing: truly absent
    found.push({
      id: key.sessionId,
      appName,
      userId: key.userId,
      lastUpdateTime: head.closing.lastUpdateTime,
    });
  }
  return found;
}

/** One page of ADK's listSessions over `store`. */
export async function listSessionPage(
  store: SessionStore,
  request: ListSessionsRequest,
): Promise<ListSessionsResponse> {
  const { appName, userId, limit, offset, page, order } = request;
  count(limit, 'limit', 0);
  count(offset, 'offset', 0);
  count(page, 'page', 1);
  if (order !== undefined && order !== 'asc' && order !== 'desc')
    throw errors.invalid(`listSessions: order must be 'asc' or 'desc', got ${JSON.stringify(order)}`);
  if (page !== undefined && limit === undefined) throw errors.invalid('listSessions: page needs a limit');
  const all = await gather(store, appName, userId);
  if (order === 'asc') all.sort((a, b) => a.lastUpdateTime - b.lastUpdateTime || compareIds(a.id, b.id));
  else if (order === 'desc')
    all.sort((a, b) => b.lastUpdateTime - a.lastUpdateTime || compareIds(a.id, b.id));
  else all.sort((a, b) => compareIds(a.id, b.id) || compareIds(a.userId, b.userId));
  const totalItems = all.length;
  const toSession = (s: Listed): Session => ({ ...s, state: {}, events: [] });
  if (limit === undefined) {
    return {
      sessions: all.slice(offset ?? 0).map(toSession),
      page: 1,
      limit: totalItems,
      totalItems,
      totalPages: totalItems === 0 ? 0 : 1,
    };
  }
  const start = page !== undefined ? (page - 1) * limit : (offset ?? 0);
  return {
    sessions: all.slice(start, start + limit).map(toSession),
    page: page ?? (limit === 0 ? 1 : Math.floor(start / limit) + 1),
    limit,
    totalItems,
    totalPages: limit === 0 ? 0 : Math.ceil(totalItems / limit),
  };
}

const compareIds = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function count(value: unknown, what: string, least: number): void {
  if (value !== undefined && (typeof value !== 'number' || !Number.isInteger(value) || value < least))
    throw errors.invalid(
      `listSessions: ${what} must be an integer of at least ${least}, got ${String(value)}`,
    );
}
