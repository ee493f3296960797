// The presenter option: pages, the JSON API and search show what it makes of summaries and events,
// while the JSONL export streams the events as the store returns them.
import { openMemoryStore } from '@tidemark/memory';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ListResponse,
  type SessionBrowser,
  type SessionView,
  startSessionBrowser,
} from '../src/index.js';
import { basePath, rawGet } from './helpers.js';

describe('a browser with a presenter', () => {
  let browser: SessionBrowser;
  let store: Awaited<ReturnType<typeof openMemoryStore>>;
  beforeAll(async () => {
    store = await openMemoryStore();
    await store.create({ id: 'hidden', title: 'SECRET-TITLE' });
    await store.append('hidden', [
      { seq: 0, type: 'user/message', time: '2026-01-01T00:00:00.000Z', data: { text: 'SECRET-DATA' } },
    ]);
    browser = await startSessionBrowser({
      store,
      presenter: {
        summary: (s) => ({ ...s, title: 'shown title', firstPrompt: 'shown prompt' }),
        event: (e) => ({ ...e, data: 'shown data' }),
      },
    });
  });
  afterAll(async () => {
    await browser.close();
    await store.close();
  });

  it('shows the presented summary in the list and the session view', async () => {
    const base = basePath(browser);
    const list = JSON.parse((await rawGet(browser, `${base}api/sessions`)).body) as ListResponse;
    expect(list.sessions.map((s) => s.title)).toEqual(['shown title']);
    const view = JSON.parse((await rawGet(browser, `${base}api/session/hidden`)).body) as SessionView;
    expect(view.summary?.title).toBe('shown title');
    expect(view.events.map((e) => e.data)).toEqual(['shown data']);
    expect(JSON.stringify([list, view])).not.toContain('SECRET');
  });

  it('searches what it shows, never the stored value', async () => {
    const base = basePath(browser);
    const hidden = JSON.parse((await rawGet(browser, `${base}api/search?q=SECRET`)).body) as ListResponse;
    expect(hidden.sessions).toEqual([]);
    const shown = JSON.parse((await rawGet(browser, `${base}api/search?q=shown`)).body) as ListResponse;
    expect(shown.sessions.map((s) => s.id)).toEqual(['hidden']);
  });

  it('exports the events as the store returns them', async () => {
    const exported = await rawGet(browser, `${basePath(browser)}api/session/hidden/export`);
    expect(exported.status).toBe(200);
    expect(JSON.parse(exported.body.trim())).toMatchObject({ seq: 0, data: { text: 'SECRET-DATA' } });
  });
});
