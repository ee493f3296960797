// Prune moves sessions that live agents may still be writing: a write that races a move must never
// be lost.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type SessionEvent, type SessionStore, TidemarkError } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openLifecycle } from '../src/index.js';

let home: string;
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'tidemark-lifecycle-prune-'));
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

/** A store whose `list` cannot describe `unreadable`: it reports it in `problems`, as contract §4 asks. */
function withUnreadable(store: SessionStore, unreadable: string): SessionStore {
  return {
    create: (init) => store.create(init),
    append: (id, events) => store.append(id, events),
    load: (id, options) => store.load(id, options),
    read: (id, range) => store.read(id, range),
    has: (id) => store.has(id),
    update: (id, patch) => store.update(id, patch),
    delete: (id, options) => store.delete(id, options),
    close: () => store.close(),
    async list(query) {
      const page = await store.list(query);
      const hidden = page.sessions.filter((s) => s.id === unreadable);
      return {
        ...page,
        sessions: page.sessions.filter((s) => s.id !== unreadable),
        problems: [
          ...page.problems,
          ...hidden.map((s) => ({
            id: s.id,
            error: new TidemarkError('CORRUPT', `session ${s.id}: summary unreadable`, { sessionId: s.id }),
          })),
        ],
      };
    },
  };
}

const ev = (seq: number, type: string): SessionEvent => ({
  seq,
  type,
  time: '2026-01-01T00:00:00.000Z',
  data: null,
});

describe('a session appended to while prune moves it', () => {
  // Guards: a prune racing a live append must not delete the session with the new events missing.
  it('is not deleted from the main store with the new events missing from the trash copy', async () => {
    const store = await openMemoryStore();
    const inner = await openMemoryStore();
    let raced = false;
    // A live agent appends to the session while its copy is landing in the trash.
    const trash: SessionStore = {
      ...withUnreadable(inner, '-none-'),
      async append(id, events) {
        const result = await inner.append(id, events);
        if (!raced) {
          raced = true;
          await store.append(id, [ev(2, 'user/message'), ev(3, 'turn/end')]);
        }
        return result;
      },
    };
    const now = new Date(Date.now() + 24 * 3600 * 1000);
    const lifecycle = await openLifecycle({
      home,
      store,
      storeAddress: 'memory:main',
      trash,
      trashAddress: 'memory:trash',
      now: () => now,
    });
    await store.create({ id: 'live' });
    await store.append('live', [ev(0, 'turn/start'), ev(1, 'turn/end')]);
    const report = await lifecycle.prune({ olderThanDays: 0, dryRun: false, now });
    expect(raced).toBe(true);
    // Wherever the session is now, all four acknowledged events are there.
    const where = (await store.has('live')) ? store : trash;
    expect((await where.load('live')).events.map((e) => e.seq)).toEqual([0, 1, 2, 3]);
    expect(report.trashed).toEqual([]);
    expect(report.failed.map((f) => [f.id, f.error.code])).toEqual([['live', 'CONFLICT']]);
  });
});

describe('a session written to between the copy check and the delete', () => {
  // Guards: the conditional delete refuses a session written after its copy was verified.
  it.each([
    ['an append', async (store: SessionStore) => store.append('late', [ev(2, 'note')])],
    ['an update', async (store: SessionStore) => store.update('late', { title: 'renamed' })],
  ])('keeps %s: the delete removes only the version that was copied', async (what, write) => {
    const inner = await openMemoryStore();
    const trash = await openMemoryStore();
    let raced = false;
    // Another process writes at the last instant: after the copy was verified, before the delete.
    const store: SessionStore = {
      ...withUnreadable(inner, '-none-'),
      async delete(id, options) {
        if (!raced) {
          raced = true;
          await write(inner);
        }
        return inner.delete(id, options);
      },
    };
    const now = new Date(Date.now() + 24 * 3600 * 1000);
    const lifecycle = await openLifecycle({
      home,
      store,
      storeAddress: 'memory:main',
      trash,
      trashAddress: 'memory:trash',
      now: () => now,
    });
    await inner.create({ id: 'late' });
    await inner.append('late', [ev(0, 'turn/start'), ev(1, 'turn/end')]);
    const report = await lifecycle.prune({ olderThanDays: 0, dryRun: false, now });
    expect(raced).toBe(true);
    expect(report.trashed).toEqual([]);
    expect(report.failed.map((f) => [f.id, f.error.code])).toEqual([['late', 'CONFLICT']]);
    const kept = await inner.load('late');
    expect(kept.events.length).toBe(what === 'an append' ? 3 : 2);
    if (what === 'an update') expect(kept.summary.title).toBe('renamed');
  });
});
