// A move to the trash that does not happen leaves no trace claiming it did; purge destroys only
// the trash version it listed; sessions without events can be deleted and pruned.
import { mkdtemp, readdir, rm, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isTidemarkError, type SessionEvent, type SessionStore } from '@tidemark/core';
import { MemoryVolume, openMemoryStore } from '@tidemark/memory';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { copySession, openLifecycle } from '../src/index.js';

const DAY = 24 * 60 * 60 * 1000;
const NOW = new Date('2026-06-01T00:00:00.000Z');
const ev = (seq: number, type: string, data: SessionEvent['data'] = null): SessionEvent => ({
  seq,
  type,
  time: '2026-01-01T00:00:00.000Z',
  data,
});

let home: string;
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'tidemark-move-'));
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

/** `store` whose `delete` first lets `before` run: a writer landing between copy and delete. */
function withBeforeDelete(store: SessionStore, before: (id: string) => Promise<void>): SessionStore {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'delete')
        return async (id: string, options?: { ifUpdatedAt?: string }) => {
          await before(id);
          return target.delete(id, options);
        };
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

async function setup(store: SessionStore, trash: SessionStore, now = () => NOW) {
  return openLifecycle({
    home,
    store,
    storeAddress: 'memory:main',
    trash,
    trashAddress: 'memory:trash',
    now,
  });
}

describe('a move to the trash that fails', () => {
  it('on CONFLICT leaves no trash copy and no audit entry, and the session whole in the main store', async () => {
    const real = await openMemoryStore();
    await real.create({ id: 's' });
    await real.append('s', [ev(0, 'turn/start'), ev(1, 'turn/end')]);
    const store = withBeforeDelete(real, async (id) => {
      // Another writer appends after the copy was made.
      const next = (await real.load(id)).events.length;
      await real.append(id, [ev(next, 'turn/end')]);
    });
    const trash = await openMemoryStore();
    const lifecycle = await setup(store, trash);
    const error = await lifecycle.delete('s').catch((e: unknown) => e);
    expect(isTidemarkError(error, 'CONFLICT')).toBe(true);
    expect((await real.load('s')).events).toHaveLength(3);
    expect(await trash.has('s')).toBe(false);
    expect(await lifecycle.audit.history('s')).toEqual([]);
    expect((await lifecycle.trashListing()).entries).toEqual([]);
    // Were the session lost later, it would be "present" or "unknown", never "trashed" with the
    // old copy that a restore would bring back short.
    expect((await lifecycle.locate('s')).status).toBe('present');
  });

  it('prune reports the session as failed, records nothing, and keeps going', async () => {
    const volume = new MemoryVolume();
    const real = await openMemoryStore({ volume });
    for (const id of ['busy', 'idle']) {
      await real.create({ id });
      await real.append(id, [ev(0, 'turn/end')]);
      const stored = volume.sessions.get(id)!;
      stored.summary = { ...stored.summary, updatedAt: new Date(NOW.getTime() - 40 * DAY).toISOString() };
    }
    const store = withBeforeDelete(real, async (id) => {
      if (id === 'busy') await real.append(id, [ev(1, 'turn/end')]);
    });
    const trash = await openMemoryStore();
    const lifecycle = await setup(store, trash);
    const report = await lifecycle.prune({ dryRun: false, now: NOW });
    expect(report.trashed).toEqual(['idle']);
    expect(report.failed.map((f) => [f.id, f.error.code])).toEqual([['busy', 'CONFLICT']]);
    expect(await trash.has('busy')).toBe(false);
    expect((await lifecycle.audit.history('busy')).map((e) => e.action)).toEqual([]);
    expect((await lifecycle.audit.history('idle')).map((e) => e.action)).toEqual(['pruned']);
  });
});

describe('purge', () => {
  it('destroys only the trash version it listed; one changed meanwhile starts its grace period again', async () => {
    const store = await openMemoryStore();
    const trash = await openMemoryStore();
    let now = NOW;
    const lifecycle = await setup(store, trash, () => now);
    await store.create({ id: 's' });
    await store.append('s', [ev(0, 'turn/end')]);
    await lifecycle.delete('s');
    now = new Date(NOW.getTime() + 30 * DAY);
    // Purge lists the trash; before it deletes, the copy changes (a delete resuming onto it
    // stamps a new trashedAt), so the listed version is gone.
    const racing = withBeforeDelete(trash, async (id) => {
      await trash.update(id, { title: 'changed after the listing' });
    });
    const raced = await openLifecycle({
      home,
      store,
      storeAddress: 'memory:main',
      trash: racing,
      trashAddress: 'memory:trash',
      now: () => now,
    });
    const report = await raced.purge({ now });
    expect(report.purged).toEqual([]);
    expect(report.kept.map((e) => e.id)).toEqual(['s']);
    expect(await trash.has('s')).toBe(true);
    expect((await lifecycle.audit.history('s')).map((e) => e.action)).toEqual(['deleted']);
    // Unraced, it is purged and recorded.
    expect((await lifecycle.purge({ now })).purged).toEqual(['s']);
    expect((await lifecycle.audit.history('s')).map((e) => e.action)).toEqual(['deleted', 'purged']);
  });
});

describe('sessions without events', () => {
  async function emptySession(store: SessionStore, id: string) {
    await store.create({ id, cwd: '/p', title: `title of ${id}` });
    await store.append(id, [ev(0, 'turn/start')]); // a first turn that crashed
    await store.load(id, { tail: 'cut' }); // repaired: an existing session with no events
    expect((await store.load(id)).events).toEqual([]);
  }

  it('delete removes one outright and the audit entry keeps its summary fields', async () => {
    const store = await openMemoryStore();
    const trash = await openMemoryStore();
    const lifecycle = await setup(store, trash);
    await emptySession(store, 'e');
    expect(await lifecycle.delete('e')).toBeUndefined();
    expect(await store.has('e')).toBe(false);
    expect(await trash.has('e')).toBe(false);
    const [entry] = await lifecycle.audit.history('e');
    expect(entry).toMatchObject({
      action: 'deleted',
      details: { events: 0, empty: true, summary: { cwd: '/p', title: 'title of e' } },
    });
    expect((await lifecycle.locate('e')).status).toBe('removed');
  });

  it('prune removes old ones and reports them apart from the trashed', async () => {
    const volume = new MemoryVolume();
    const store = await openMemoryStore({ volume });
    const trash = await openMemoryStore();
    const lifecycle = await setup(store, trash);
    await emptySession(store, 'e');
    await store.create({ id: 'full' });
    await store.append('full', [ev(0, 'turn/end')]);
    for (const id of ['e', 'full']) {
      const stored = volume.sessions.get(id)!;
      stored.summary = { ...stored.summary, updatedAt: new Date(NOW.getTime() - 40 * DAY).toISOString() };
    }
    const report = await lifecycle.prune({ dryRun: false, now: NOW });
    expect(report.trashed).toEqual(['full']);
    expect(report.removedEmpty).toEqual(['e']);
    expect(report.failed).toEqual([]);
    expect(await store.has('e')).toBe(false);
  });

  it('copySession says why one cannot be copied (INVALID), instead of NOT_FOUND', async () => {
    const store = await openMemoryStore();
    const target = await openMemoryStore();
    await emptySession(store, 'e');
    const error = await copySession(store, target, 'e').catch((e: unknown) => e);
    expect(isTidemarkError(error, 'INVALID')).toBe(true);
    expect((error as Error).message).toContain('no events');
    expect(await target.has('e')).toBe(false);
  });
});

describe('two moves of one session at once', () => {
  /** `store` whose delete() waits for `open` after signalling `reached`. */
  function gatedDelete(store: SessionStore) {
    let open!: () => void;
    const gate = new Promise<void>((r) => {
      open = r;
    });
    let hit!: () => void;
    const reached = new Promise<void>((r) => {
      hit = r;
    });
    return {
      proxy: withBeforeDelete(store, async () => {
        hit();
        await gate;
      }),
      reached,
      open,
    };
  }

  it('the second waits or is told CONFLICT; with an append in between, the session stays in one store', async () => {
    const main = await openMemoryStore();
    const trash = await openMemoryStore();
    await main.create({ id: 's' });
    await main.append('s', [ev(0, 'turn/start'), ev(1, 'turn/end')]);
    const a = gatedDelete(main);
    const options = { home, storeAddress: 'memory:main', trash, trashAddress: 'memory:trash' };
    const A = await openLifecycle({ ...options, store: a.proxy });
    const B = await openLifecycle({ ...options, store: main });
    const first = A.delete('s').then(
      () => 'ok',
      (e: unknown) => (isTidemarkError(e) ? e.code : e),
    );
    await a.reached; // A copied v1 and is about to delete it
    await main.append('s', [ev(2, 'turn/end')]); // an agent appends: v2
    // B cannot interleave with A: it would otherwise resume A's trash copy to v2, A would drop that
    // copy on its CONFLICT, and B would delete v2 from the main store: the session in neither.
    const second = await B.delete('s').then(
      () => 'ok',
      (e: unknown) => (isTidemarkError(e) ? e.code : e),
    );
    expect(second).toBe('CONFLICT');
    a.open();
    expect(await first).toBe('CONFLICT'); // v1 is not what the store holds any more
    expect((await main.load('s')).events).toHaveLength(3);
    expect(await trash.has('s')).toBe(false);
    // Nothing runs now: the move goes through, whole.
    await B.delete('s');
    expect(await main.has('s')).toBe(false);
    expect((await trash.load('s')).events).toHaveLength(3);
    expect((await B.audit.history('s')).map((e) => e.action)).toEqual(['deleted']);
  }, 20_000);
});

describe('restore', () => {
  it('removes only the trash version it copied; a copy changed meanwhile is kept (CONFLICT)', async () => {
    const store = await openMemoryStore();
    const trash = await openMemoryStore();
    const lifecycle = await setup(store, trash);
    await store.create({ id: 's' });
    await store.append('s', [ev(0, 'turn/end')]);
    await lifecycle.delete('s');
    // Another process, whose move lock this one outlived, refreshed the trash copy meanwhile.
    const racing = withBeforeDelete(trash, async (id) => {
      await trash.update(id, { title: 'moved again' });
    });
    const raced = await setup(store, racing);
    const error = await raced.restore('s').catch((e: unknown) => e);
    expect(isTidemarkError(error, 'CONFLICT')).toBe(true);
    expect((await store.load('s')).events).toHaveLength(1);
    expect(await trash.has('s')).toBe(true);
  });
});

describe('a move that outlived its move lock', () => {
  it('on CONFLICT leaves a trash copy that another move wrote since, so the session is never in neither store', async () => {
    const main = await openMemoryStore();
    const trash = await openMemoryStore();
    await main.create({ id: 's' });
    await main.append('s', [ev(0, 'turn/start'), ev(1, 'turn/end')]);
    // A is stopped right after its copy (at its next step, whatever it is) until its move lock
    // goes stale; an agent appends, and another process's move copies the new version into the
    // trash with its own mark, then waits to delete it from the main store.
    let fired = false;
    const otherMove = async (id: string) => {
      if (fired) return;
      fired = true;
      await main.append(id, [ev(2, 'turn/end')]);
      await copySession(main, trash, id, {
        attrs: () => ({
          'tidemark.trash': { trashedAt: NOW.toISOString(), reason: 'deleted', move: 'other' },
        }),
      });
    };
    const slowTrash = new Proxy(trash, {
      get(target, prop, receiver) {
        if (prop === 'load')
          return async (id: string, options?: never) => {
            await otherMove(id);
            return target.load(id, options);
          };
        const value = Reflect.get(target, prop, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const store = withBeforeDelete(main, otherMove);
    const A = await setup(store, slowTrash);
    const error = await A.delete('s').catch((e: unknown) => e);
    expect(isTidemarkError(error, 'CONFLICT')).toBe(true);
    // The other move finishes: it deletes the version it copied from the main store.
    await main.delete('s', { ifUpdatedAt: (await main.load('s')).summary.updatedAt });
    expect((await trash.load('s')).events).toHaveLength(3);
  });

  it('purge skips an entry restored meanwhile and purges the rest', async () => {
    const store = await openMemoryStore();
    const trash = await openMemoryStore();
    let now = NOW;
    const lifecycle = await setup(store, trash, () => now);
    for (const id of ['a', 'b']) {
      await store.create({ id });
      await store.append(id, [ev(0, 'turn/end')]);
      await lifecycle.delete(id);
    }
    now = new Date(NOW.getTime() + 30 * DAY);
    // Another process restored 'a' after this purge listed the trash (its restore ends by
    // deleting the trash copy).
    const racing = withBeforeDelete(trash, async (id) => {
      if (id === 'a' && (await trash.has('a'))) await trash.delete('a');
    });
    const raced = await setup(store, racing, () => now);
    const report = await raced.purge({ now });
    expect(report.purged).toEqual(['b']);
    expect(report.kept).toEqual([]);
    expect(await trash.has('b')).toBe(false);
  });
});

describe('a move stopped past its lock, then a restore', () => {
  it('the stopped move meets CONFLICT instead of deleting the restored session', async () => {
    const main = await openMemoryStore();
    const trash = await openMemoryStore();
    await main.create({ id: 's' });
    await main.append('s', [ev(0, 'turn/start'), ev(1, 'turn/start')]);
    let resume!: () => void;
    const resumed = new Promise<void>((r) => {
      resume = r;
    });
    let reached!: () => void;
    const atDelete = new Promise<void>((r) => {
      reached = r;
    });
    // Mover A is stopped (SIGSTOP, say) just before its delete from the main store.
    const storeA = withBeforeDelete(main, async () => {
      reached();
      await resumed;
    });
    const A = await setup(storeA, trash);
    const C = await setup(main, trash);
    const moving = A.delete('s').then(
      () => 'ok',
      (e: unknown) => (isTidemarkError(e) ? e.code : e),
    );
    await atDelete;
    // More than 10 s without a heartbeat: the move lock is stale, and a restore takes it over.
    const moves = join(home, 'moves');
    const old = new Date(Date.now() - 60_000);
    for (const name of await readdir(moves)) await utimes(join(moves, name), old, old);
    await C.restore('s'); // the main copy was complete: it only touches it, then drops the trash copy
    resume();
    expect(await moving).toBe('CONFLICT');
    expect((await main.load('s')).events).toHaveLength(2);
  });
});
