// The server's guarantees: the token gates every path, every response carries the security
// headers, bad ids and paths get typed errors (never a crash), and paging and search are bounded.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TidemarkError } from '@tidemark/core';
import { openJsonlStore } from '@tidemark/jsonl';
import { openMemoryStore } from '@tidemark/memory';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  LIST_PAGE_SIZE,
  type ListResponse,
  SEARCH_SCAN_LIMIT,
  type SessionBrowser,
  type SessionView,
  startSessionBrowser,
} from '../src/index.js';
import { ListOnlyStore, summaries } from './fake-store.js';
import { basePath, browse, rawGet } from './helpers.js';
import { SEEDED, seedJsonlStore } from './seed.js';

describe('the token', () => {
  let browser: SessionBrowser;
  let store: Awaited<ReturnType<typeof openMemoryStore>>;
  beforeAll(async () => {
    store = await openMemoryStore();
    browser = await browse(store);
  });
  afterAll(async () => {
    await browser.close();
    await store.close();
  });

  it('is at least 128 random bits in the URL, bound to 127.0.0.1', () => {
    const url = new URL(browser.url);
    expect(url.hostname).toBe('127.0.0.1');
    const token = url.pathname.split('/')[1]!;
    expect(Buffer.from(token, 'base64url').length).toBeGreaterThanOrEqual(16);
  });

  it.each([
    '/',
    '/api/sessions',
    '/app.js',
    '/favicon.ico',
    '/session/x',
    '/nottoken/',
    '/nottoken/api/sessions',
  ])('refuses %s without the token with 403', async (path) => {
    const response = await rawGet(browser, path);
    expect(response.status).toBe(403);
    expect(response.body).not.toContain('tidemark sessions');
  });

  it('refuses a token that differs in its last character', async () => {
    const base = basePath(browser);
    const last = base.at(-2) === 'A' ? 'B' : 'A';
    expect((await rawGet(browser, `${base.slice(0, -2)}${last}/`)).status).toBe(403);
  });

  it('refuses the right token under another Host (DNS rebinding)', async () => {
    const response = await rawGet(browser, basePath(browser), { host: `evil.example:${browser.port}` });
    expect(response.status).toBe(403);
  });

  it('serves the page and the API with the token', async () => {
    expect((await rawGet(browser, basePath(browser))).status).toBe(200);
    expect((await rawGet(browser, `${basePath(browser)}api/sessions`)).status).toBe(200);
  });

  it('sets the security headers on pages, API answers and refusals, and no CORS header', async () => {
    const base = basePath(browser);
    for (const path of [base, `${base}api/sessions`, '/', `${base}session/bad%20id`]) {
      const { headers } = await rawGet(browser, path);
      expect(headers['content-security-policy'], path).toContain("default-src 'none'");
      expect(headers['x-content-type-options'], path).toBe('nosniff');
      expect(headers['referrer-policy'], path).toBe('no-referrer');
      expect(headers['cache-control'], path).toBe('no-store');
      expect(
        Object.keys(headers).filter((name) => name.startsWith('access-control-')),
        path,
      ).toEqual([]);
    }
    const page = await rawGet(browser, base);
    expect(page.headers['content-security-policy']).toMatch(/script-src 'sha256-[A-Za-z0-9+/=]+'/);
    expect(page.body).not.toMatch(/<script[^>]+src=|<link[^>]+stylesheet|https?:\/\/(?!127\.0\.0\.1)/);
  });

  it('refuses a host that is not loopback', async () => {
    await expect(startSessionBrowser({ store, host: '0.0.0.0' })).rejects.toMatchObject({ code: 'INVALID' });
  });
});

describe('bad ids and paths', () => {
  let browser: SessionBrowser;
  let base: string;
  let store: Awaited<ReturnType<typeof openMemoryStore>>;
  beforeAll(async () => {
    store = await openMemoryStore();
    await store.create({ id: 'real' });
    await store.append('real', [
      { seq: 0, type: 'user/message', time: new Date().toISOString(), data: 'hi' },
    ]);
    browser = await browse(store);
    base = basePath(browser);
  });
  afterAll(async () => {
    await browser.close();
    await store.close();
  });

  it.each([
    ['session/bad%20id', 400, 'INVALID'],
    ['session/%2e%2e', 400, 'INVALID'],
    ['session/.hidden', 400, 'INVALID'],
    ['session/%E0%A4%A', 400, 'INVALID'],
    [`session/${'x'.repeat(129)}`, 400, 'INVALID'],
    ['session/missing', 404, 'NOT_FOUND'],
    ['nowhere', 404, 'NOT_FOUND'],
    ['session/real/extra', 404, 'NOT_FOUND'],
  ])('page %s answers %i with an error page naming %s', async (path, status, code) => {
    const response = await rawGet(browser, base + path);
    expect(response.status).toBe(status);
    expect(response.headers['content-type']).toContain('text/html');
    expect(response.body).toContain(code);
  });

  it.each([
    ['api/session/bad%20id', 400, 'INVALID'],
    ['api/session/missing', 404, 'NOT_FOUND'],
    ['api/session/missing/export', 404, 'NOT_FOUND'],
    ['api/session/real?from=-1', 400, 'INVALID'],
    ['api/session/real?from=abc', 400, 'INVALID'],
    ['api/sessions?cursor=garbage', 400, 'INVALID'],
    ['api/search?q=', 400, 'INVALID'],
    ['api/nothing', 404, 'NOT_FOUND'],
  ])('API %s answers %i with the typed error %s', async (path, status, code) => {
    const response = await rawGet(browser, base + path);
    expect(response.status).toBe(status);
    expect(JSON.parse(response.body)).toMatchObject({ error: { code } });
  });

  it('shows markup in an id as text on the error page', async () => {
    const response = await rawGet(browser, `${base}session/%3Cscript%3Ealert(1)%3C%2Fscript%3E`);
    expect(response.status).toBe(400);
    expect(response.body).not.toContain('<script>');
    expect(response.body).toContain('&#60;script&#62;');
  });

  it('is read-only: other methods get 405', async () => {
    expect((await rawGet(browser, `${base}api/session/real`, { method: 'DELETE' })).status).toBe(405);
    expect((await rawGet(browser, `${base}api/sessions`, { method: 'POST' })).status).toBe(405);
  });

  it('keeps serving after all of the above', async () => {
    expect((await rawGet(browser, `${base}session/real`)).status).toBe(200);
  });
});

describe('paging and search', () => {
  it('pages newest first, each session once, with a cursor per page', async () => {
    const store = new ListOnlyStore(summaries(120));
    const browser = await browse(store);
    const seen: string[] = [];
    let cursor: string | undefined;
    try {
      do {
        const query = cursor === undefined ? '' : `?cursor=${encodeURIComponent(cursor)}`;
        const page = JSON.parse(
          (await rawGet(browser, `${basePath(browser)}api/sessions${query}`)).body,
        ) as ListResponse;
        expect(page.sessions.length).toBeLessThanOrEqual(LIST_PAGE_SIZE);
        seen.push(...page.sessions.map((s) => s.id));
        cursor = page.nextCursor;
      } while (cursor !== undefined);
    } finally {
      await browser.close();
    }
    expect(seen).toEqual(
      summaries(120)
        .map((s) => s.id)
        .reverse(),
    );
  });

  it('searches title, first prompt, cwd and tag, case-insensitively', async () => {
    const rows = summaries(10, (i) => ({
      ...(i === 1 && { title: 'Deploy the API' }),
      ...(i === 2 && { firstPrompt: 'please deploy it' }),
      ...(i === 3 && { cwd: '/srv/deploy' }),
      ...(i === 4 && { tags: ['DEPLOY'] }),
      ...(i === 5 && { title: 'unrelated' }),
    }));
    const browser = await browse(new ListOnlyStore(rows));
    try {
      const page = JSON.parse(
        (await rawGet(browser, `${basePath(browser)}api/search?q=Deploy`)).body,
      ) as ListResponse;
      expect(page.sessions.map((s) => s.id)).toEqual(['s-00004', 's-00003', 's-00002', 's-00001']);
    } finally {
      await browser.close();
    }
  });

  it('looks at a bounded number of sessions per search request and continues from its cursor', async () => {
    const store = new ListOnlyStore(
      summaries(SEARCH_SCAN_LIMIT + 5000, (i) => (i === 0 ? { title: 'needle' } : {})),
    );
    const browser = await browse(store);
    try {
      const first = JSON.parse(
        (await rawGet(browser, `${basePath(browser)}api/search?q=needle`)).body,
      ) as ListResponse;
      expect(first.sessions).toEqual([]);
      expect(first.scanned).toBe(SEARCH_SCAN_LIMIT);
      expect(store.listed).toBe(SEARCH_SCAN_LIMIT);
      const path = `${basePath(browser)}api/search?q=needle&cursor=${encodeURIComponent(first.nextCursor!)}`;
      const second = JSON.parse((await rawGet(browser, path)).body) as ListResponse;
      expect(second.sessions.map((s) => s.id)).toEqual(['s-00000']);
      expect(second.nextCursor).toBeUndefined();
    } finally {
      await browser.close();
    }
  });

  it('reports the sessions in problems with their typed error, on list and search pages', async () => {
    const location = { file: '/store/x.jsonl', offset: 17 };
    const store = new ListOnlyStore(summaries(3), [
      { id: 'broken', error: new TidemarkError('CORRUPT', 'bad header', { location, sessionId: 'broken' }) },
    ]);
    const browser = await browse(store);
    try {
      for (const path of ['api/sessions', 'api/search?q=nothing-matches']) {
        const page = JSON.parse((await rawGet(browser, basePath(browser) + path)).body) as ListResponse;
        expect(page.problems, path).toEqual([
          {
            id: 'broken',
            error: expect.objectContaining({ code: 'CORRUPT', message: 'bad header', location }),
          },
        ]);
      }
    } finally {
      await browser.close();
    }
  });
});

describe('a session view over a seeded JSONL store', () => {
  let root: string;
  let browser: SessionBrowser;
  let store: Awaited<ReturnType<typeof openJsonlStore>>;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'tidemark-ui-'));
    await seedJsonlStore(root, 3);
    store = await openJsonlStore({ root });
    browser = await browse(store);
  });
  afterAll(async () => {
    await browser.close();
    await store.close();
    await rm(root, { recursive: true, force: true });
  });
  const view = async (id: string): Promise<SessionView> =>
    JSON.parse((await rawGet(browser, `${basePath(browser)}api/session/${id}`)).body) as SessionView;

  it('marks the interrupted tail and reports verify', async () => {
    const interrupted = await view(SEEDED.interrupted);
    expect(interrupted).toMatchObject({
      committedSeq: 6,
      interrupted: true,
      health: { status: 'interrupted' },
    });
    expect(interrupted.events).toHaveLength(12);
    expect(await view(SEEDED.finished)).toMatchObject({
      committedSeq: 6,
      interrupted: false,
      health: { status: 'ok' },
    });
  });

  it('keeps the fork lineage', async () => {
    expect((await view(SEEDED.fork)).summary?.parent).toEqual({ id: SEEDED.finished, seq: 6 });
  });

  it('shows a CORRUPT session as a problem with its file and offset, after the events before the damage', async () => {
    const corrupt = await view(SEEDED.corrupt);
    expect(corrupt.events.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(corrupt.readError).toMatchObject({
      code: 'CORRUPT',
      location: { file: expect.stringContaining(`${SEEDED.corrupt}.jsonl`) },
    });
    expect(corrupt.readError?.location?.offset).toBeGreaterThan(0);
    expect(corrupt.health?.status).toBe('corrupt');
  });

  it('exports the events as JSONL', async () => {
    const response = await rawGet(browser, `${basePath(browser)}api/session/${SEEDED.finished}/export`);
    expect(response.status).toBe(200);
    expect(response.headers['content-disposition']).toBe(`attachment; filename="${SEEDED.finished}.jsonl"`);
    const lines = response.body
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { seq: number });
    expect(lines.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('refuses to export a session that cannot be read from its first event, with its typed error', async () => {
    const response = await rawGet(
      browser,
      `${basePath(browser)}api/session/${SEEDED.unreadableSummary}/export`,
    );
    expect(response.status).toBe(500);
    expect(JSON.parse(response.body)).toMatchObject({ error: { code: 'CORRUPT' } });
  });
});
