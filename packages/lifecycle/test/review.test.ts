// Review findings: each test shows a bug that was fixed in src.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type SessionEvent, type SessionStore, TidemarkError } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AUDIT_FILE, AuditLog, openLifecycle } from '../src/index.js';

let home: string;
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'tidemark-lifecycle-review-'));
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

describe('audit log after a torn final write', () => {
  it('an entry recorded after a crash cut the previous line short is still readable', async () => {
    const log = new AuditLog(home);
    await log.record('created', 'a', 'memory:main');
    // A crash in the middle of the next record left half a line without its newline.
    const file = join(home, AUDIT_FILE);
    await writeFile(file, `${await readFile(file, 'utf8')}{"time":"2026-01-01T00:00:00.000Z","act`);
    expect((await log.read()).tornTail).toBe(true);

    const entry = await log.record('deleted', 'b', 'memory:main', { reason: 'x' });
    const after = await log.read();
    // The acknowledged entry must not be glued onto the torn fragment and lost as "not JSON".
    expect(after.entries.map((e) => [e.action, e.id])).toEqual([
      ['created', 'a'],
      ['deleted', 'b'],
    ]);
    expect(after.entries[1]).toEqual(entry);
    expect(await log.history('b')).toEqual([entry]);
  });
});

/** A store whose `list` cannot describe `unreadable`: it reports it in `problems`, as SPEC §4 asks. */
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
  it('is refused: moving a session onto itself and deleting it would destroy it', async () => {
    const store = await openMemoryStore();
    await expect(
      openLifecycle({ home, store, storeAddress: 'memory:a', trash: store, trashAddress: 'memory:b' }),
    ).rejects.toMatchObject({ code: 'INVALID' });
  });
});

describe('a session appended to while prune moves it', () => {
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

describe('a trash record with a damaged trash time', () => {
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
