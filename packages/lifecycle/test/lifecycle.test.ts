import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isTidemarkError, type SessionEvent, type SessionStore } from '@tidemark/core';
import { MemoryVolume, openMemoryStore } from '@tidemark/memory';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { copySession, eventHash, openLifecycle, TRASH_ATTR } from '../src/index.js';

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
  home = await mkdtemp(join(tmpdir(), 'tidemark-lifecycle-'));
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

async function seed(
  store: SessionStore,
  id: string,
  cwd: string,
  extra: Partial<{ title: string; attrs: object }> = {},
) {
  await store.create({ id, cwd, ...(extra.title !== undefined && { title: extra.title }) });
  if (extra.attrs !== undefined) await store.update(id, { attrs: extra.attrs as never });
  await store.append(id, [
    ev(0, 'turn/start'),
    ev(1, 'user/message', { text: `hello ${id}`, keys: { b: 1, a: [1, 'x'] } }),
    ev(2, 'turn/end'),
  ]);
}

async function setup(now: () => Date = () => NOW) {
  const mainVolume = new MemoryVolume();
  const store = await openMemoryStore({ volume: mainVolume });
  const trash = await openMemoryStore();
  const lifecycle = await openLifecycle({
    home,
    store,
    storeAddress: 'memory:main',
    trash,
    trashAddress: 'memory:trash',
    now,
  });
  return { store, trash, lifecycle, mainVolume };
}

/** Makes the session look last updated `days` ago by rewriting its summary in the volume. */
function age(volume: MemoryVolume, id: string, days: number) {
  const stored = volume.sessions.get(id)!;
  stored.summary = { ...stored.summary, updatedAt: new Date(NOW.getTime() - days * DAY).toISOString() };
}

async function eventsText(store: SessionStore, id: string): Promise<string> {
  return (await store.load(id)).events.map((e) => JSON.stringify(e)).join('\n');
}

describe('active pointers', () => {
  it('sets and gets per project, in a 0600 file under a 0700 home', async () => {
    const { lifecycle } = await setup();
    expect(await lifecycle.getActive('/a')).toBeUndefined();
    await lifecycle.setActive('/a', 's1');
    await lifecycle.setActive('/b', 's2');
    await lifecycle.setActive('/a', 's3');
    expect(await lifecycle.getActive('/a')).toBe('s3');
    expect(await lifecycle.getActive('/b')).toBe('s2');
    expect((await stat(lifecycle.active.file)).mode & 0o777).toBe(0o600);
    expect((await stat(home)).mode & 0o777).toBe(0o700);
    await expect(lifecycle.setActive('/a', '../x')).rejects.toMatchObject({ code: 'INVALID' });
  });

  it('reports a broken pointer file as CORRUPT, not as "no pointers"', async () => {
    const { lifecycle } = await setup();
    const { writeFile } = await import('node:fs/promises');
    await writeFile(lifecycle.active.file, '{"active": [}');
    await expect(lifecycle.getActive('/a')).rejects.toMatchObject({ code: 'CORRUPT' });
  });
});

describe('prune', () => {
  it('previews by default and changes nothing', async () => {
    const { store, trash, lifecycle, mainVolume } = await setup();
    await seed(store, 'old', '/p');
    age(mainVolume, 'old', 40);
    const report = await lifecycle.prune();
    expect(report.dryRun).toBe(true);
    expect(report.toTrash.map((s) => s.id)).toEqual(['old']);
    expect(report.trashed).toEqual([]);
    expect(await store.has('old')).toBe(true);
    expect(await trash.has('old')).toBe(false);
    expect((await lifecycle.audit.read()).entries).toEqual([]);
  });

  it('moves old sessions to the trash, never the active one, and audits each move', async () => {
    const { store, trash, lifecycle, mainVolume } = await setup();
    for (const id of ['old1', 'old2', 'activeOld', 'fresh'])
      await seed(store, id, id === 'activeOld' ? '/work' : '/p');
    age(mainVolume, 'old1', 31);
    age(mainVolume, 'old2', 90);
    age(mainVolume, 'activeOld', 365);
    age(mainVolume, 'fresh', 29);
    await lifecycle.setActive('/work', 'activeOld');
    const report = await lifecycle.prune({ dryRun: false, olderThanDays: 30 });
    expect(report.trashed).toEqual(['old2', 'old1']);
    expect(report.keptActive.map((s) => s.id)).toEqual(['activeOld']);
    expect(report.failed).toEqual([]);
    expect(await store.has('activeOld')).toBe(true);
    expect(await store.has('fresh')).toBe(true);
    expect(await store.has('old1')).toBe(false);
    expect(await trash.has('old1')).toBe(true);
    const audit = await lifecycle.audit.read();
    expect(audit.entries.map((e) => [e.action, e.id, e.store])).toEqual([
      ['pruned', 'old2', 'memory:main'],
      ['pruned', 'old1', 'memory:main'],
    ]);
    expect(audit.entries[0]!.details).toMatchObject({
      trash: 'memory:trash',
      events: 3,
      updatedAt: new Date(NOW.getTime() - 90 * DAY).toISOString(),
    });
    expect((await stat(lifecycle.audit.file)).mode & 0o777).toBe(0o600);
    const listed = await lifecycle.trashList();
    expect(listed.map((e) => [e.id, e.reason, e.from])).toEqual([
      ['old1', 'pruned', 'memory:main'],
      ['old2', 'pruned', 'memory:main'],
    ]);
    expect(listed[0]!.purgeAfter).toBe(new Date(NOW.getTime() + 7 * DAY).toISOString());
  });

  it('keeps a session in the main store when moving it fails, with a typed error', async () => {
    const mainVolume = new MemoryVolume();
    const store = await openMemoryStore({ volume: mainVolume });
    let failTrash = true;
    const trash = await openMemoryStore({
      beforeStorageStep: (op) => {
        if (failTrash && op === 'write') throw Object.assign(new Error('disk full'), { code: 'ENOSPC' });
      },
    });
    const lifecycle = await openLifecycle({
      home,
      store,
      storeAddress: 'memory:main',
      trash,
      trashAddress: 'memory:trash',
      now: () => NOW,
    });
    await seed(store, 'old', '/p');
    age(mainVolume, 'old', 100);
    const before = await eventsText(store, 'old');
    const report = await lifecycle.prune({ dryRun: false });
    expect(report.trashed).toEqual([]);
    expect(report.failed).toHaveLength(1);
    expect(isTidemarkError(report.failed[0]!.error, 'IO')).toBe(true);
    expect(await store.has('old')).toBe(true);
    expect(await eventsText(store, 'old')).toBe(before);
    // the fault lifted, the next prune completes the move without duplicates
    failTrash = false;
    const again = await lifecycle.prune({ dryRun: false });
    expect(again.trashed).toEqual(['old']);
    expect(await eventsText(trash, 'old')).toBe(before);
    // still writable
    await seed(store, 'next', '/p');
  });
});

describe('trash', () => {
  it('restore brings the session back byte-identical with its summary fields', async () => {
    const { store, lifecycle } = await setup();
    await seed(store, 's1', '/p', { title: 'my work', attrs: { model: 'x', n: 1 } });
    const before = await store.load('s1');
    const entry = (await lifecycle.delete('s1'))!;
    expect(entry.reason).toBe('deleted');
    expect(entry.summary.attrs).toEqual({ model: 'x', n: 1 });
    expect(await store.has('s1')).toBe(false);
    const summary = await lifecycle.restore('s1');
    const after = await store.load('s1');
    expect(after.events.map((e) => JSON.stringify(e))).toEqual(before.events.map((e) => JSON.stringify(e)));
    expect(summary.title).toBe('my work');
    expect(summary.attrs).toEqual({ model: 'x', n: 1 });
    expect(summary.attrs?.[TRASH_ATTR]).toBeUndefined();
    expect(summary.cwd).toBe('/p');
    expect(summary.firstPrompt).toBe(before.summary.firstPrompt);
    expect(after.meta.createdAt).toBe(before.meta.createdAt);
    expect(summary.createdAt).toBe(before.summary.createdAt);
    expect(await lifecycle.trashList()).toEqual([]);
    expect((await lifecycle.audit.read()).entries.map((e) => e.action)).toEqual(['deleted', 'restored']);
  });

  it('delete clears the active pointer that names the session', async () => {
    const { store, lifecycle } = await setup();
    await seed(store, 's1', '/p');
    await lifecycle.setActive('/p', 's1');
    await lifecycle.delete('s1');
    expect(await lifecycle.getActive('/p')).toBeUndefined();
  });

  it('purge destroys only after the grace period', async () => {
    let clock = NOW;
    const { store, trash, lifecycle } = await setup(() => clock);
    await seed(store, 'a', '/p');
    await lifecycle.delete('a');
    clock = new Date(NOW.getTime() + 3 * DAY);
    await seed(store, 'b', '/p');
    await lifecycle.delete('b');
    const early = await lifecycle.purge({ now: new Date(NOW.getTime() + 7 * DAY - 1) });
    expect(early.purged).toEqual([]);
    expect(early.kept.map((e) => e.id)).toEqual(['a', 'b']);
    const mid = await lifecycle.purge({ now: new Date(NOW.getTime() + 7 * DAY) });
    expect(mid.purged).toEqual(['a']);
    expect(await trash.has('a')).toBe(false);
    expect(await trash.has('b')).toBe(true);
    expect((await lifecycle.audit.history('a')).map((e) => e.action)).toEqual(['deleted', 'purged']);
  });

  it('restore refuses to overwrite a different session of the same id', async () => {
    const { store, lifecycle } = await setup();
    await seed(store, 's1', '/p');
    await lifecycle.delete('s1');
    await store.create({ id: 's1' });
    await store.append('s1', [ev(0, 'other')]);
    await expect(lifecycle.restore('s1')).rejects.toMatchObject({ code: 'CONFLICT' });
    expect((await lifecycle.trashList()).map((e) => e.id)).toEqual(['s1']);
  });
});

describe('locate and the audit log', () => {
  it('reports "audited but missing" distinctly from not found', async () => {
    const { store, lifecycle } = await setup();
    await seed(store, 'lost', '/p');
    await lifecycle.recordCreated('lost');
    // the store loses it behind the lifecycle's back
    await store.delete('lost');
    const where = await lifecycle.locate('lost');
    expect(where.status).toBe('audited-missing');
    if (where.status === 'audited-missing')
      expect(where.message).toContain('audited but missing from memory:main');
    expect((await lifecycle.locate('never')).status).toBe('unknown');
  });

  it('tells present, trashed and removed apart', async () => {
    const { store, lifecycle } = await setup();
    await seed(store, 'x', '/p');
    await lifecycle.recordCreated('x');
    expect((await lifecycle.locate('x')).status).toBe('present');
    await lifecycle.delete('x');
    expect((await lifecycle.locate('x')).status).toBe('trashed');
    await lifecycle.purge({ now: new Date(NOW.getTime() + 8 * DAY) });
    // the last entry about the main store is 'deleted': gone as recorded, not missing
    expect((await lifecycle.locate('x')).status).toBe('removed');
  });

  it('writes one fsynced JSON line per entry', async () => {
    const { lifecycle } = await setup();
    await lifecycle.audit.record('migrated', 'm1', 'jsonl:/a', { to: 'sqlite:/b' });
    await lifecycle.audit.record('repaired', 'm1', 'jsonl:/a');
    const text = await readFile(lifecycle.audit.file, 'utf8');
    const lines = text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toEqual([
      {
        time: NOW.toISOString(),
        action: 'migrated',
        id: 'm1',
        store: 'jsonl:/a',
        details: { to: 'sqlite:/b' },
      },
      { time: NOW.toISOString(), action: 'repaired', id: 'm1', store: 'jsonl:/a' },
    ]);
  });
});

describe('copySession', () => {
  it('continues a partial copy from the target next seq and verifies hashes', async () => {
    const from = await openMemoryStore();
    const to = await openMemoryStore();
    await seed(from, 's', '/p');
    await to.create({ id: 's', cwd: '/p' });
    await to.append('s', [ev(0, 'turn/start')]);
    const progress: number[] = [];
    const result = await copySession(from, to, 's', { batchEvents: 1, onProgress: (n) => progress.push(n) });
    expect(result.outcome).toBe('resumed');
    expect(result.appended).toBe(2);
    expect(progress).toEqual([2, 3]);
    expect(await eventsText(to, 's')).toBe(await eventsText(from, 's'));
    const again = await copySession(from, to, 's');
    expect(again.outcome).toBe('complete');
    expect(again.appended).toBe(0);
    expect(again.hash).toBe(result.hash);
  });

  it('refuses a target that diverged', async () => {
    const from = await openMemoryStore();
    const to = await openMemoryStore();
    await seed(from, 's', '/p');
    await to.create({ id: 's' });
    await to.append('s', [ev(0, 'different')]);
    await expect(copySession(from, to, 's')).rejects.toMatchObject({ code: 'CONFLICT' });
  });

  it('hashes the canonical JSON, independent of key order', () => {
    const a = ev(0, 't', { x: 1, y: { b: 2, a: 1 } });
    const b = { data: { y: { a: 1, b: 2 }, x: 1 }, time: a.time, type: 't', seq: 0 };
    expect(eventHash(a)).toBe(eventHash(b));
    expect(eventHash(a)).not.toBe(eventHash({ ...a, data: { x: 2, y: { a: 1, b: 2 } } }));
  });
});
