// The pool of open writers and their locks: close() with operations in flight, LRU eviction while
// the same session is used again, and a writer taking over a log another writer left.
import { existsSync } from 'node:fs';
import { type FileSystem, isTidemarkError, nodeFileSystem } from '@tidemark/core';
import { afterEach, describe, expect, it } from 'vitest';
import { bucketOf, openJsonlStore, sessionPaths } from '../src/index.js';
import { faultyFs } from './faulty-fs.js';
import { ev, evs, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

describe('close() while an operation is in flight', () => {
  // Guards: close() waits for in-flight operations, so no lock or writer outlives it.
  it('leaves no lock file or open writer behind once both have settled', async () => {
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 's');
    let reached!: () => void;
    const atLink = new Promise<void>((resolve) => {
      reached = resolve;
    });
    let go!: () => void;
    const gate = new Promise<void>((resolve) => {
      go = resolve;
    });
    const fs: FileSystem = {
      ...nodeFileSystem,
      async link(from, to) {
        if (to === paths.log) {
          reached();
          await gate;
        }
        return nodeFileSystem.link(from, to);
      },
    };
    const store = await openJsonlStore({ root, fs });
    await store.create({ id: 's' });
    const append = store.append('s', [ev(0, 'turn/end')]).then(
      () => 'ok',
      (error: unknown) => error,
    );
    await atLink;
    expect(existsSync(paths.lock)).toBe(true);
    const closing = store.close();
    go();
    await closing;
    const result = await append;
    if (result !== 'ok') expect(isTidemarkError(result, 'CLOSED')).toBe(true);
    expect(existsSync(paths.lock)).toBe(false);
  });
});

describe('a writer evicted (maxOpenWriters) while the same session is used again', () => {
  // Guards: an evicted writer's delayed lock release never removes the lock a new writer just took.
  it('does not let the eviction remove the lock the new writer just took', async () => {
    const root = tempDir();
    const a = sessionPaths(root, bucketOf(undefined), 'a');
    let atUnlink!: () => void;
    const unlinkReached = new Promise<void>((resolve) => {
      atUnlink = resolve;
    });
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    let gated = false;
    let stalled = false;
    const fs: FileSystem = {
      ...nodeFileSystem,
      async unlink(path) {
        if (gated && path === a.lock) {
          gated = false;
          stalled = true;
          atUnlink();
          await gate; // the eviction's release stalls between checking the lock and removing it
        }
        return nodeFileSystem.unlink(path);
      },
      async link(from, to) {
        await nodeFileSystem.link(from, to);
        if (stalled && to === a.lock) open(); // a new lock for 'a' is in place: let the stalled release go on
      },
    };
    // Never released while idle: the lock checked below is the one this eviction race left.
    const store = await openJsonlStore({ root, fs, maxOpenWriters: 1, lockIdleMs: Number.POSITIVE_INFINITY });
    await store.create({ id: 'a' });
    await store.append('a', evs(0, 1, true));
    await store.create({ id: 'b' });
    gated = true;
    const appendB = store.append('b', evs(0, 1, true)); // registers b, evicts a
    await unlinkReached;
    const timer = setTimeout(open, 300);
    const settle = (p: Promise<unknown>) =>
      p.then(
        () => 'ok',
        (error: unknown) => (isTidemarkError(error) ? error.code : error),
      );
    // Not a CONFLICT either: no other writer holds 'a', this very store is only closing its old writer.
    expect(await settle(store.append('a', evs(1, 1, true)))).toBe('ok');
    await appendB;
    clearTimeout(timer);
    const { nextSeq } = { nextSeq: (await store.load('a')).events.length };
    // 'a' has a live writer in `store` again: another instance must get the session handed over or
    // CONFLICT, never a second writer beside it (the stalled release must not remove the new lock).
    const lockHeld = existsSync(a.lock);
    const other = await openJsonlStore({ root });
    const first = await settle(other.append('a', [ev(nextSeq, 'turn/end', 'other')]));
    const second = await settle(store.append('a', [ev(nextSeq, 'turn/end', 'store')]));
    expect([first, second].sort()).toEqual(['CONFLICT', 'ok']);
    expect(lockHeld).toBe(true);
    await other.close();
    await store.close();
  });
});

describe('a writer taking over a log another writer left', () => {
  // Guards: a writer opening a log syncs the bytes no sidecar counted before its sidecar counts them.
  it('syncs the bytes no sidecar counted yet before its own sidecar can count them', async () => {
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 's');
    // A relaxed writer that appended without a boundary and was never closed (as if killed).
    const gone = await openJsonlStore({ root, durability: 'relaxed', lock: 'none' });
    await gone.create({ id: 's' });
    await gone.append('s', evs(0, 1, true));
    await gone.append('s', evs(1, 2));
    const f = faultyFs();
    const next = await openJsonlStore({ root, fs: f.fs, lock: 'none' });
    await next.update('s', { title: 'after takeover' });
    const sync = f.calls.indexOf(`datasync ${paths.log}`);
    const sidecar = f.calls.indexOf(`rename ${paths.summary}`);
    expect(sync).toBeGreaterThanOrEqual(0);
    expect(sidecar).toBeGreaterThan(sync);
    await next.close();
  });
});
