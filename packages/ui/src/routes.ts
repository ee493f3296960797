// What each path under the token serves: the application page for the list and for a session,
// the JSON API the page reads, and the JSONL export. A bad id or an unknown path gets an error
// page (or JSON error) with its typed error; only GET and HEAD are accepted (the browser is
// read-only).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIsoTime, isValidId, type SessionStore, TidemarkError } from '@tidemark/core';
import { errorJson, statusOf } from './errors.js';
import { errorPage, type Page } from './pages.js';
import { listPage, type SessionPresenter, searchPage } from './queries.js';
import { BASE_HEADERS, send, sendErrorJson, sendJson, sendPage } from './respond.js';
import { sessionView } from './session-view.js';

/** What every route needs. */
export interface RouteContext {
  store: SessionStore;
  /** The application page. */
  app: Page;
  /** `/TOKEN/`: the root of every path. */
  base: string;
  /** How pages and the JSON API show summaries and events (not the export). */
  presenter?: SessionPresenter;
}

function sendErrorPage(res: ServerResponse, error: unknown, base: string): void {
  const json = errorJson(error);
  sendPage(res, statusOf(json.code), errorPage(statusOf(json.code), json, base));
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new TidemarkError(
      'INVALID',
      `the path segment ${JSON.stringify(segment.slice(0, 80))} is not valid URL encoding`,
    );
  }
}

function notAnId(id: string): TidemarkError {
  return new TidemarkError(
    'INVALID',
    `${JSON.stringify(id.slice(0, 140))} is not a session id (1 to 128 of A-Z a-z 0-9 . _ -, not starting with .)`,
  );
}

function validId(raw: string): string {
  const id = decodeSegment(raw);
  if (!isValidId(id)) throw notAnId(id);
  return id;
}

function optionalParam(params: URLSearchParams, name: string): string | undefined {
  const value = params.get(name);
  return value === null || value === '' ? undefined : value;
}

function fromParam(params: URLSearchParams): number {
  const raw = optionalParam(params, 'from') ?? '0';
  const from = Number(raw);
  if (!/^\d{1,15}$/.test(raw) || !Number.isSafeInteger(from)) {
    throw new TidemarkError(
      'INVALID',
      `from must be a non-negative integer, got ${JSON.stringify(raw.slice(0, 40))}`,
    );
  }
  return from;
}

/** Serves one request whose token was checked. */
export async function routeRequest(
  req: IncomingMessage,
  res: ServerResponse,
  ctx: RouteContext,
): Promise<void> {
  // The raw path, not URL's: dot segments (`%2e%2e`) must reach the id check, not be resolved.
  const target = req.url ?? '/';
  const queryAt = target.indexOf('?');
  const pathname = queryAt === -1 ? target : target.slice(0, queryAt);
  const searchParams = new URLSearchParams(queryAt === -1 ? '' : target.slice(queryAt + 1));
  const rest = pathname.slice(ctx.base.length - 1);
  if (pathname === ctx.base.slice(0, -1)) {
    send(res, 308, 'text/plain; charset=utf-8', 'Moved\n', undefined, { Location: ctx.base });
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    send(
      res,
      405,
      'text/plain; charset=utf-8',
      'Method not allowed: the session browser is read-only.\n',
      undefined,
      {
        Allow: 'GET, HEAD',
      },
    );
    return;
  }
  const parts = rest.split('/').slice(1);
  if (parts[0] === 'api') {
    try {
      await routeApi(parts.slice(1), searchParams, res, ctx);
    } catch (error) {
      if (res.headersSent) res.destroy();
      else sendErrorJson(res, errorJson(error));
    }
    return;
  }
  try {
    await routePage(parts, res, ctx);
  } catch (error) {
    if (res.headersSent) res.destroy();
    else sendErrorPage(res, error, ctx.base);
  }
}

async function routePage(parts: string[], res: ServerResponse, ctx: RouteContext): Promise<void> {
  if (parts.length === 1 && parts[0] === '') {
    sendPage(res, 200, ctx.app);
    return;
  }
  if (parts.length === 2 && parts[0] === 'session') {
    const id = validId(parts[1]!);
    if (!(await ctx.store.has(id)))
      throw new TidemarkError('NOT_FOUND', `session ${id} does not exist`, { sessionId: id });
    sendPage(res, 200, ctx.app);
    return;
  }
  throw new TidemarkError('NOT_FOUND', `no page at /${parts.map((p) => p.slice(0, 80)).join('/')}`);
}

async function routeApi(
  parts: string[],
  params: URLSearchParams,
  res: ServerResponse,
  ctx: RouteContext,
): Promise<void> {
  const cursor = optionalParam(params, 'cursor');
  if (parts.length === 1 && parts[0] === 'sessions') {
    sendJson(res, 200, await listPage(ctx.store, cursor, ctx.presenter));
    return;
  }
  if (parts.length === 1 && parts[0] === 'search') {
    sendJson(res, 200, await searchPage(ctx.store, params.get('q') ?? '', cursor, ctx.presenter));
    return;
  }
  if (parts[0] === 'session' && (parts.length === 2 || (parts.length === 3 && parts[2] === 'export'))) {
    const id = validId(parts[1]!);
    if (!(await ctx.store.has(id)))
      throw new TidemarkError('NOT_FOUND', `session ${id} does not exist`, { sessionId: id });
    if (parts.length === 3) {
      await sendExport(res, ctx.store, id);
      return;
    }
    const at = optionalParam(params, 'at');
    sendJson(
      res,
      200,
      await sessionView(
        ctx.store,
        id,
        fromParam(params),
        at !== undefined && isIsoTime(at) ? at : undefined,
        ctx.presenter,
      ),
    );
    return;
  }
  throw new TidemarkError('NOT_FOUND', `no API at /api/${parts.map((p) => p.slice(0, 80)).join('/')}`);
}

/**
 * Streams the events as JSONL, one event a line. The first event is read before the headers go
 * out, so that a session that cannot be read at all gets its error status; a failure later drops
 * the connection, so that the download is seen to fail rather than end short.
 */
async function sendExport(res: ServerResponse, store: SessionStore, id: string): Promise<void> {
  const events = store.read(id)[Symbol.asyncIterator]();
  let step = await events.next();
  res.writeHead(200, {
    ...BASE_HEADERS,
    'Content-Security-Policy': "default-src 'none'",
    'Content-Type': 'application/x-ndjson; charset=utf-8',
    'Content-Disposition': `attachment; filename="${id}.jsonl"`,
  });
  if (res.req.method === 'HEAD') {
    await events.return?.();
    res.end();
    return;
  }
  while (step.done !== true) {
    if (!res.write(`${JSON.stringify(step.value)}\n`))
      await new Promise((resolve) => res.once('drain', resolve));
    step = await events.next();
  }
  res.end();
}
