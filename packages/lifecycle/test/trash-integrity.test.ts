// The trash never hides or destroys what it holds: unreadable entries, a trash that is the main
// store, damaged trash records.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type SessionEvent, type SessionStore, TidemarkError } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openLifecycle } from '../src/index.js';

let home: string;
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'tidemark-lifecycle-trash-'));
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

describe('trash sessions the trash store cannot describe', () => {
  // Guards: a trash session list cannot describe is a problem, not a silent omission.
  it('are reported as problems by the trash listing and by purge, never silently left out', async () => {
    const store = await openMemoryStore();
    const trash = withUnreadable(await openMemoryStore(), 'b');
    const now = new Date('2026-06-01T00:00:00.000Z');
    const lifecycle = await openLifecycle({
      home,
      store,
      storeAddress: 'memory:main',
      trash,
      trashAddress: 'memory:trash',
      now: () => now,
    });
    for (const id of ['a', 'b']) {
      await store.create({ id });
      await store.append(id, [ev(0, 'turn/start'), ev(1, 'turn/end')]);
      await lifecycle.delete(id);
    }
    const listing = await lifecycle.trashListing();
    expect(listing.entries.map((e) => e.id)).toEqual(['a']);
    expect(listing.problems.map((p) => [p.id, p.error.code])).toEqual([['b', 'CORRUPT']]);

    const report = await lifecycle.purge({ now: new Date(now.getTime() + 30 * 24 * 3600 * 1000) });
    expect(report.purged).toEqual(['a']);
    expect(report.problems.map((p) => p.id)).toEqual(['b']);
    expect(await trash.has('b')).toBe(true);
  });
});

describe('a trash that is the main store', () => {
  // Guards: a trash that is the main store would destroy what it "moves".
  it('is refused: moving a session onto itself and deleting it would destroy it', async () => {
    const store = await openMemoryStore();
    await expect(
      openLifecycle({ home, store, storeAddress: 'memory:a', trash: store, trashAddress: 'memory:b' }),
    ).rejects.toMatchObject({ code: 'INVALID' });
  });
});

describe('a trash record with a damaged trash time', () => {
  // Guards: a hand-edited trash time no longer makes trash listing throw an untyped RangeError.
  it('lists and purges by the copy time instead of failing with an untyped RangeError', async () => {
    const store = await openMemoryStore();
    const trash = await openMemoryStore();
    const lifecycle = await openLifecycle({
      home,
      store,
      storeAddress: 'memory:main',
      trash,
      trashAddress: 'memory:trash',
    });
    await trash.create({ id: 'hand-edited' });
    await trash.append('hand-edited', [
      { seq: 0, type: 'user/message', time: '2026-01-01T00:00:00.000Z', data: 'x' },
    ]);
    const copied = await trash.update('hand-edited', {
      attrs: { 'tidemark.trash': { trashedAt: 'not a date', reason: 'deleted', from: 'memory:main' } },
    });

    const entries = await lifecycle.trashList();
    expect(entries.map((e) => [e.id, e.trashedAt])).toEqual([['hand-edited', copied.updatedAt]]);
    expect(Number.isNaN(Date.parse(entries[0]!.purgeAfter))).toBe(false);
    // Within the grace period of the copy time nothing is purged; the call itself must not throw.
    const report = await lifecycle.purge({ now: new Date(Date.parse(copied.updatedAt) + 1000) });
    expect(await trash.has('hand-edited')).toBe(true);
    expect(report).toBeDefined();
  });
});
