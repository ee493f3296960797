import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { bucketOf, openJsonlStore, sessionPaths } from '../src/index.js';
import { ev, evs, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

describe('jsonl store basics', () => {
  it('creates lazily, appends, loads, lists, updates, deletes', async () => {
    const root = tempDir();
    const store = await openJsonlStore({ root });
    await store.create({ id: 's1', cwd: '/p', title: 'first' });
    expect(await store.has('s1')).toBe(false);
    expect(await store.append('s1', evs(0, 3, true))).toEqual({ nextSeq: 3 });
    expect(await store.has('s1')).toBe(true);
    expect(await store.append('s1', evs(3, 2))).toEqual({ nextSeq: 5 });
    const loaded = await store.load('s1');
    expect(loaded.events.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4]);
    expect(loaded.committedSeq).toBe(2);
    expect(loaded.interrupted).toBe(true);
    expect(loaded.summary.title).toBe('first');
    expect(loaded.summary.eventCount).toBe(5);
    const page = await store.list();
    expect(page.sessions.map((s) => s.id)).toEqual(['s1']);
    expect(page.sessions[0]).toEqual(loaded.summary);
    const updated = await store.update('s1', { title: 'renamed' });
    expect(updated.title).toBe('renamed');
    await store.close();

    const again = await openJsonlStore({ root });
    const reloaded = await again.load('s1');
    expect(reloaded.summary.title).toBe('renamed');
    expect(reloaded.events).toHaveLength(5);
    expect((await again.list()).sessions[0]).toEqual(reloaded.summary);
    expect(await again.append('s1', [ev(5, 'turn/end')])).toEqual({ nextSeq: 6 });
    // every line is a JSON object
    const lines = readFileSync(sessionPaths(root, bucketOf('/p'), 's1').log, 'utf8')
      .trimEnd()
      .split('\n');
    expect(lines).toHaveLength(7);
    for (const line of lines) expect(typeof JSON.parse(line)).toBe('object');
    await again.delete('s1');
    expect(await again.has('s1')).toBe(false);
    await expect(again.load('s1')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await again.close();
  });
});

describe('options', () => {
  it('refuses a misspelt option instead of opening the default root', async () => {
    const home = tempDir();
    const before = process.env.TIDEMARK_HOME;
    process.env.TIDEMARK_HOME = home;
    try {
      const error = await openJsonlStore({ dir: join(home, 'mine') } as never).then(
        () => undefined,
        (caught: unknown) => caught as { code?: string; message: string },
      );
      expect(error?.code).toBe('INVALID');
      expect(error?.message).toBe(
        'openJsonlStore: unknown option "dir" (known options: root, fs, lock, maxOpenWriters, lockIdleMs, durability, boundaryTypes, maxEventBytes, maxDepth)',
      );
      expect(readdirSync(home)).toEqual([]);
    } finally {
      if (before === undefined) delete process.env.TIDEMARK_HOME;
      else process.env.TIDEMARK_HOME = before;
    }
  });
});
