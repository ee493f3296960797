// Files in the store that are not what they claim: a copied log under another id, hostile
// timestamps, a sidecar too large to read. Each is malformed data (CORRUPT or rebuilt), never IO
// that hides a session or a duplicate that list paging skips.
import { copyFileSync, mkdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { isTidemarkError, prepareBatch } from '@tidemark/core';
import { afterEach, describe, expect, it } from 'vitest';
import { bucketOf, encodeBatch, encodeHeader, openJsonlStore, sessionPaths } from '../src/index.js';
import { ev, evs, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

describe('a log whose header names another session (a copied file)', () => {
  // Guards: a log holding another session's header is CORRUPT, not a duplicate that list paging skips.
  it('is not listed or loaded under the other id: list pages would show one id twice and skip a session', async () => {
    const root = tempDir();
    const store = await openJsonlStore({ root });
    await store.create({ id: 'a' });
    await store.append('a', evs(0, 2, true));
    await store.close();
    const a = sessionPaths(root, bucketOf(undefined), 'a');
    const b = sessionPaths(root, bucketOf(undefined), 'b');
    copyFileSync(a.log, b.log);
    copyFileSync(a.summary, b.summary);
    const reader = await openJsonlStore({ root });
    const seen: string[] = [];
    const problems: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await reader.list({ limit: 1, ...(cursor !== undefined && { cursor }) });
      seen.push(...page.sessions.map((s) => s.id));
      problems.push(...page.problems.map((p) => p.id));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    // Every session appears exactly once, under its own id or in problems.
    expect(seen).toEqual(['a']);
    expect([...new Set(problems)]).toEqual(['b']);
    const loaded = await reader.load('b').then(
      (l) => l.meta.id,
      (error: unknown) => (isTidemarkError(error, 'CORRUPT') ? 'CORRUPT' : error),
    );
    expect(loaded).toBe('CORRUPT');
    expect((await reader.verify({ id: 'b' })).sessions[0]?.status).toBe('corrupt');
    await expect(reader.append('b', [ev(2, 'turn/end')])).rejects.toMatchObject({ code: 'CORRUPT' });
    await reader.close();
  });
});

describe('hostile timestamps in a sidecar or a log', () => {
  // Guards: a non-time updatedAt in a sidecar is malformed data, not a RangeError wedging appends as IO.
  it('a sidecar whose updatedAt is not a time does not wedge every later append and update with IO', async () => {
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 's');
    const store = await openJsonlStore({ root });
    await store.create({ id: 's' });
    await store.append('s', evs(0, 2, true));
    await store.close();
    const sidecar = JSON.parse(readFileSync(paths.summary, 'utf8'));
    sidecar.summary.updatedAt = 'garbage';
    writeFileSync(paths.summary, JSON.stringify(sidecar));
    const writer = await openJsonlStore({ root });
    const outcome = await writer.append('s', evs(2, 1, true)).then(
      () => 'ok',
      (error: unknown) => (isTidemarkError(error) ? error.code : error),
    );
    expect(['ok', 'CORRUPT']).toContain(outcome);
    const updated = await writer.update('s', { title: 't' }).then(
      () => 'ok',
      (error: unknown) => (isTidemarkError(error) ? error.code : error),
    );
    expect(['ok', 'CORRUPT']).toContain(updated);
    await writer.close();
  });

  // Guards: a checksummed header with a non-time createdAt is CORRUPT, not IO.
  it('a checksummed header whose createdAt is not a time reads as CORRUPT, not as an IO fault', async () => {
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 's');
    mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
    const batch = prepareBatch([ev(0, 'turn/end')], {}, 's');
    writeFileSync(
      paths.log,
      encodeHeader({ id: 's', createdAt: 'not a time' }, {}) +
        encodeBatch(batch, 0, '2026-01-01T00:00:00.000Z'),
    );
    const store = await openJsonlStore({ root });
    const code = (p: Promise<unknown>) =>
      p.then(
        () => 'ok',
        (error: unknown) => (isTidemarkError(error) ? error.code : error),
      );
    expect(['ok', 'CORRUPT']).toContain(await code(store.load('s')));
    expect(['ok', 'CORRUPT']).toContain(await code(store.append('s', [ev(1, 'turn/end')])));
    const page = await store.list();
    for (const problem of page.problems) expect(problem.error.code).toBe('CORRUPT');
    expect(page.sessions.length + page.problems.length).toBe(1);
    await store.close();
  });
});

describe('a hostile sidecar too large to read', () => {
  // Guards: an oversized sidecar is malformed (rebuilt from the log), not an IO fault hiding the session.
  it('is malformed data (rebuilt from the log), not an IO fault that hides the session', async () => {
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 's');
    const store = await openJsonlStore({ root });
    await store.create({ id: 's' });
    await store.append('s', evs(0, 2, true));
    await store.close();
    truncateSync(paths.summary, 2 ** 31 + 1); // sparse: nothing is written
    const reader = await openJsonlStore({ root });
    const page = await reader.list();
    expect(page.problems).toEqual([]);
    expect(page.sessions.map((s) => s.id)).toEqual(['s']);
    expect((await reader.load('s')).events).toHaveLength(2);
    await reader.close();
  });
});
