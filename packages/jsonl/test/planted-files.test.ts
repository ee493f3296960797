// Special files planted inside the store tree (a FIFO, a link to an endless device) must give a
// typed error or a problem entry, never a hang or an endless read (contract §5).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, symlinkSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isTidemarkError } from '@tidemark/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bucketOf, openJsonlStore } from '../src/index.js';
import { evs, removeTempDirs, tempDir } from './helpers.js';

const time = '2026-11-29T10:00:00.000Z';
let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'tidemark-planted-'));
});
afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

async function seeded() {
  const store = await openJsonlStore({ root });
  await store.create({ id: 's1' });
  await store.append('s1', [{ seq: 0, type: 'user/message', time, data: 'hi' }]);
  await store.update('s1', { title: 'kept' });
  await store.close();
  return join(root, bucketOf(undefined));
}

describe('planted special files', () => {
  it('a FIFO in place of a sidecar is not ours: list rebuilds the summary from the log, no hang', async () => {
    const bucket = await seeded();
    unlinkSync(join(bucket, 's1.summary.json'));
    execFileSync('mkfifo', [join(bucket, 's1.summary.json')]);
    const store = await openJsonlStore({ root });
    const page = await store.list();
    expect(page.sessions.map((s) => [s.id, s.eventCount])).toEqual([['s1', 1]]);
    expect(page.problems).toEqual([]);
    await store.close();
  });

  it('a link to /dev/zero in place of a log is an IO error from load and has, not an endless read', async () => {
    const bucket = await seeded();
    unlinkSync(join(bucket, 's1.jsonl'));
    symlinkSync('/dev/zero', join(bucket, 's1.jsonl'));
    const store = await openJsonlStore({ root });
    for (const call of [
      () => store.load('s1'),
      () => store.append('s1', [{ seq: 1, type: 't', time, data: 1 }]),
    ]) {
      const error = await call().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isTidemarkError(error, 'IO')).toBe(true);
    }
    // has() must not call it absent: the entry exists, it just is not a log we can read.
    await expect(store.has('s1')).resolves.toBe(true);
    await store.close();
  });
});

describe('the lock directory', () => {
  it('is made again when removed while an instance is open, and never written through a planted link', async () => {
    const dir = tempDir();
    const elsewhere = tempDir();
    const store = await openJsonlStore({ root: dir });
    await store.create({ id: 'a' });
    await store.append('a', evs(0, 1, true));
    await store.delete('a'); // releases a's lock
    rmSync(join(dir, '.locks'), { recursive: true });
    await store.create({ id: 'b' });
    expect(await store.append('b', evs(0, 1, true))).toEqual({ nextSeq: 1 });
    await store.create({ id: 'c' });
    await store.append('c', evs(0, 1, true));
    await store.close();
    const again = await openJsonlStore({ root: dir });
    await again.append('b', evs(1, 1)); // holds b's lock; c's is free
    rmSync(join(dir, '.locks'), { recursive: true });
    symlinkSync(elsewhere, join(dir, '.locks'));
    const error = await again.append('c', evs(1, 1)).catch((e: unknown) => e);
    expect(isTidemarkError(error) && error.code).toBe('IO');
    expect(readdirSync(elsewhere)).toEqual([]);
    expect((await again.load('c')).events).toEqual(evs(0, 1, true));
    await again.close();
  });
});

afterEach(removeTempDirs);
