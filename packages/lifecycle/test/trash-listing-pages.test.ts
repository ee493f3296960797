// Listings over several pages: a backend may report a problem on every page (contract §4), and the
// lifecycle reports it once.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type SessionEvent, type SessionStore, TidemarkError } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openLifecycle } from '../src/index.js';

let home: string;
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'tidemark-lifecycle-pages-'));
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

/** Pages of one session each, with the same unreadable session reported on every page. */
function onePerPageWithProblem(store: SessionStore, problemId: string): SessionStore {
  return Object.assign(Object.create(store) as SessionStore, {
    async list(query?: { cursor?: string; cwd?: string }) {
      const page = await store.list({ ...query, limit: 1 });
      const error = new TidemarkError('CORRUPT', `session ${problemId}: summary unreadable`);
      return { ...page, problems: [{ id: problemId, error }] };
    },
  });
}

const ev = (seq: number, type: string): SessionEvent => ({
  seq,
  type,
  time: '2026-01-01T00:00:00.000Z',
  data: null,
});

describe('trash listing across pages', () => {
  // Guards that a problem repeated on every page is reported once, not once per page.
  it('reports every trashed session and each problem id once', async () => {
    const store = await openMemoryStore();
    const inner = await openMemoryStore();
    const trash = onePerPageWithProblem(inner, 'ghost');
    const lifecycle = await openLifecycle({
      home,
      store,
      storeAddress: 'memory:main',
      trash,
      trashAddress: 'memory:trash',
      now: () => new Date('2026-06-01T00:00:00.000Z'),
    });
    for (const id of ['a', 'b', 'c']) {
      await store.create({ id });
      await store.append(id, [ev(0, 'turn/start'), ev(1, 'turn/end')]);
      await lifecycle.delete(id);
    }
    const listing = await lifecycle.trashListing();
    expect(listing.entries.map((e) => e.id).sort()).toEqual(['a', 'b', 'c']);
    expect(listing.problems.map((p) => p.id)).toEqual(['ghost']);
  });
});
