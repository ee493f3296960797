// migrateSessions over memory stores, with the target wrapped to count and alter what list()
// answers: the verification pass is one listing of the target, whatever the number of sessions.
// Then `tidemark migrate` through the built binary: what it announces and which sources it refuses.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ListQuery, type SessionPage, type SessionStore, TidemarkError } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import { describe, expect, inject, it } from 'vitest';
import { migrateSessions } from '../src/migrate.js';
import { exportLines, home, tidemark, useTempHome } from './run-cli.js';

const unavailable = inject('unavailable');

const T = '2026-01-01T00:00:00.000Z';

async function sourceWith(count: number): Promise<{ store: SessionStore; ids: string[] }> {
  const store = await openMemoryStore();
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const id = `s${String(i).padStart(4, '0')}`;
    ids.push(id);
    await store.create({ id, title: `t${i}` });
    await store.append(id, [
      { seq: 0, type: 'user/message', time: T, data: { i } },
      { seq: 1, type: 'turn/end', time: T, data: null },
    ]);
  }
  return { store, ids };
}

/** `store` with list() counted and its pages passed through `alter`. */
function watched(
  store: SessionStore,
  alter: (page: SessionPage) => SessionPage = (page) => page,
): { store: SessionStore; lists: () => number } {
  let lists = 0;
  const proxy = new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'list') {
        return async (query?: ListQuery) => {
          lists++;
          return alter(await target.list(query));
        };
      }
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { store: proxy, lists: () => lists };
}

describe('migrateSessions', () => {
  it('verifies 300 sessions with a bounded number of target listings (not one per session)', async () => {
    const source = await sourceWith(300);
    const target = watched(await openMemoryStore());
    const progress: [number, number][] = [];
    const report = await migrateSessions(source.store, target.store, {
      onProgress: (done, total) => progress.push([done, total]),
    });
    expect(report.ids).toEqual(source.ids);
    expect(report.results.map((r) => r.outcome)).toEqual(source.ids.map(() => 'copied'));
    expect(report).toMatchObject({ failed: [], problems: [], missing: [], unverified: [] });
    // One pass, paged: 300 sessions fit in one page of 1000 (a second call is tolerated).
    expect(target.lists()).toBeGreaterThanOrEqual(1);
    expect(target.lists()).toBeLessThanOrEqual(2);
    // Progress: once per session, then once at the end.
    expect(progress).toHaveLength(301);
    expect(progress[300]).toEqual([300, 300]);
    // Run again: everything is complete, still one listing for the verification.
    const again = watched(target.store);
    const second = await migrateSessions(source.store, again.store);
    expect(second.results.every((r) => r.outcome === 'complete')).toBe(true);
    expect(again.lists()).toBeLessThanOrEqual(2);
  });

  it('reports a session the target lists as a problem for that session, and verifies the others', async () => {
    const source = await sourceWith(5);
    const target = watched(await openMemoryStore(), (page) => ({
      ...page,
      sessions: page.sessions.filter((s) => s.id !== 's0002'),
      problems: [
        ...page.problems,
        { id: 's0002', error: new TidemarkError('CORRUPT', 'summary of s0002 is unreadable') },
      ],
    }));
    const report = await migrateSessions(source.store, target.store);
    expect(report.results).toHaveLength(5);
    expect(report.unverified).toEqual([
      { id: 's0002', code: 'CORRUPT', message: 'summary of s0002 is unreadable' },
    ]);
    expect(report.missing).toEqual([]);
    expect(report.failed).toEqual([]);
  });

  it('checks a session the listing skipped directly: present counts as verified, gone as missing', async () => {
    const source = await sourceWith(4);
    // The listing leaves out s0001 and s0003 (as a page may skip a session changed mid-pass).
    const target = watched(await openMemoryStore(), (page) => ({
      ...page,
      sessions: page.sessions.filter((s) => s.id !== 's0001' && s.id !== 's0003'),
    }));
    // s0003 is lost from the target right after it was copied.
    const report = await migrateSessions(source.store, target.store, {
      onCopied: async (result) => {
        if (result.id === 's0003') await target.store.delete(result.id);
      },
    });
    expect(report.results).toHaveLength(4);
    expect(report.missing).toEqual(['s0003']);
    expect(report.unverified).toEqual([]);
  });

  it('reports every copied session as unverified when the target cannot be listed, without throwing', async () => {
    const source = await sourceWith(2);
    const target = watched(await openMemoryStore(), () => {
      throw new TidemarkError('IO', 'EIO: i/o error, scandir');
    });
    const report = await migrateSessions(source.store, target.store);
    expect(report.results).toHaveLength(2);
    expect(report.unverified).toEqual([
      { id: 's0000', code: 'IO', message: 'EIO: i/o error, scandir' },
      { id: 's0001', code: 'IO', message: 'EIO: i/o error, scandir' },
    ]);
    expect(report.missing).toEqual([]);
  });

  it('reports a session whose count in the target differs as missing', async () => {
    const source = await sourceWith(3);
    const target = watched(await openMemoryStore(), (page) => ({
      ...page,
      sessions: page.sessions.map((s) => (s.id === 's0000' ? { ...s, eventCount: 1 } : s)),
    }));
    const report = await migrateSessions(source.store, target.store);
    expect(report.missing).toEqual(['s0000']);
  });
});

describe.skipIf(unavailable.sqlite !== undefined || unavailable.jsonl !== undefined)(
  'tidemark migrate',
  () => {
    useTempHome();

    // Regression: the summary line counted sessions whose copy failed as migrated and verified.
    it('does not announce a session it failed to copy as migrated and verified', () => {
      const from = `sqlite:${join(home(), 's.db')}`;
      expect(tidemark(['--store', from, 'import'], { input: exportLines('m1', 'one') }).status).toBe(0);
      expect(tidemark(['--store', from, 'import'], { input: exportLines('m2', 'two') }).status).toBe(0);
      // The target lies under a regular file: every copy fails with IO.
      writeFileSync(join(home(), 'plain'), 'not a directory');
      const run = tidemark(['migrate', '--from', from, '--to', `jsonl:${join(home(), 'plain', 'x')}`]);
      expect(run.status).toBe(1);
      expect(run.stderr).toMatch(/failed: m1: IO/);
      expect(run.stdout).not.toContain('migrated 2 session(s)');
      expect(run.stdout).toContain('migrated 0 of 2 session(s)');
    });

    // Regression: a mistyped source was created empty and "migrated" with nothing copied.
    it('refuses a source store that does not exist instead of creating it and copying nothing', () => {
      for (const from of [`sqlite:${join(home(), 'typo.db')}`, `jsonl:${join(home(), 'typo-dir')}`]) {
        const run = tidemark(['migrate', '--from', from, '--to', `jsonl:${join(home(), 'target')}`]);
        expect(run.status).toBe(3);
        expect(run.stderr.trim()).toBe(`tidemark: NOT_FOUND: store ${from} does not exist`);
        expect(existsSync(join(home(), 'typo.db'))).toBe(false);
        expect(existsSync(join(home(), 'typo-dir'))).toBe(false);
      }
    });
  },
);
