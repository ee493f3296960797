import { readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { isTidemarkError } from '@tidemark/core';
import { afterEach, describe, expect, it } from 'vitest';
import { bucketOf, openJsonlStore, sessionPaths } from '../src/index.js';
import { ev, evs, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

async function seeded(root: string) {
  const store = await openJsonlStore({ root });
  await store.create({ id: 's' });
  await store.append('s', evs(0, 1, true));
  await store.close();
  return sessionPaths(root, bucketOf(undefined), 's');
}

describe('writer lock', () => {
  it('a lock held by a live process of this host is CONFLICT (retryable), for append, update and delete', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    writeFileSync(paths.lock, JSON.stringify({ pid: 1, host: hostname(), token: 'someone' }));
    const store = await openJsonlStore({ root });
    for (const attempt of [
      store.append('s', evs(1, 1)),
      store.update('s', { title: 't' }),
      store.delete('s'),
    ]) {
      const error = await attempt.catch((e: unknown) => e);
      expect(isTidemarkError(error, 'CONFLICT')).toBe(true);
      expect((error as { retryable: boolean }).retryable).toBe(true);
    }
    expect((await store.load('s')).events).toHaveLength(1); // readers need no lock
    await store.close();
  });

  it('an empty or garbled lock (remains of a power loss) and a dead pid are taken over', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    for (const content of [
      '',
      '{"pid":',
      JSON.stringify({ pid: 2 ** 22 + 12345, host: hostname(), token: 'dead' }),
    ]) {
      writeFileSync(paths.lock, content);
      const store = await openJsonlStore({ root });
      const next = (await store.load('s')).events.length;
      expect(await store.append('s', evs(next, 1))).toEqual({ nextSeq: next + 1 });
      await store.close();
    }
    // no lock, temp or aside file is left behind
    expect(readdirSync(paths.dir).sort()).toEqual(['s.jsonl', 's.summary.json']);
  });

  it('two instances in one process: an idle writer hands over, a busy one makes the other lose', async () => {
    const root = tempDir();
    await seeded(root);
    const a = await openJsonlStore({ root });
    const b = await openJsonlStore({ root });
    expect(await a.append('s', evs(1, 1))).toEqual({ nextSeq: 2 });
    expect(await b.append('s', evs(2, 1))).toEqual({ nextSeq: 3 }); // a was idle: it handed over
    const [fromA, fromB] = await Promise.allSettled([
      a.append('s', [ev(3, 'note', { writer: 'a' })]),
      b.append('s', [ev(3, 'note', { writer: 'b' })]),
    ]);
    const outcomes = [fromA, fromB].map((r) =>
      r.status === 'fulfilled' ? 'won' : (r.reason as { code: string }).code,
    );
    expect(outcomes.sort()).toEqual(['CONFLICT', 'won']);
    await a.close();
    await b.close();
  });

  it('instances that spell the root differently (through a symlink) still hand over instead of stealing', async () => {
    const root = tempDir();
    await seeded(root);
    const alias = join(tempDir(), 'alias');
    symlinkSync(root, alias);
    const a = await openJsonlStore({ root });
    const b = await openJsonlStore({ root: alias });
    let next = 1;
    for (let round = 0; round < 10; round++) {
      const results = await Promise.allSettled([
        a.append('s', [ev(next, 'note', { writer: 'a' })]),
        b.append('s', [ev(next, 'note', { writer: 'b' })]),
      ]);
      const won = results.filter((r) => r.status === 'fulfilled').length;
      expect(won).toBeLessThanOrEqual(1);
      for (const r of results)
        if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'CONFLICT' });
      next += won;
    }
    expect(await b.append('s', [ev(next, 'note')])).toEqual({ nextSeq: next + 1 });
    expect((await a.load('s')).events.map((e) => e.seq)).toEqual(
      Array.from({ length: next + 1 }, (_, i) => i),
    );
    await a.close();
    await b.close();
  });
});
