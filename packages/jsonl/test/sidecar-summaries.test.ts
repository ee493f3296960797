// The summary sidecar beside each log: a fault reading or writing it never loses the fields only
// update() stores, and it never counts log bytes that are not durable yet.
import { isTidemarkError } from '@tidemark/core';
import { afterEach, describe, expect, it } from 'vitest';
import { bucketOf, openJsonlStore, sessionPaths } from '../src/index.js';
import { faultyFs } from './faulty-fs.js';
import { evs, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

describe('a fault reading the summary sidecar', () => {
  // Guards: an EIO reading the sidecar fails update() with IO instead of rebuilding the summary without title/tags.
  it('does not make update() drop the fields earlier updates stored', async () => {
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 's');
    let failSidecar = false;
    const f = faultyFs((call, path) =>
      failSidecar && call === 'readFile' && path === paths.summary ? 'EIO' : undefined,
    );
    const store = await openJsonlStore({ root, fs: f.fs });
    await store.create({ id: 's' });
    await store.append('s', evs(0, 2, true));
    await store.update('s', { title: 'kept' });
    failSidecar = true;
    const outcome = await store.update('s', { tags: ['t'] }).then(
      (summary) => ({ ok: true as const, summary }),
      (error: unknown) => ({ ok: false as const, error }),
    );
    failSidecar = false;
    if (outcome.ok) expect(outcome.summary.title).toBe('kept');
    else expect(isTidemarkError(outcome.error, 'IO')).toBe(true);
    await store.close();
    const reopened = await openJsonlStore({ root });
    expect((await reopened.load('s')).summary.title).toBe('kept');
    await reopened.close();
  });

  // Guards: close() does not refresh the sidecar from a summary that lost the update-only fields.
  it('does not make close() rewrite the sidecar without the fields updates stored', async () => {
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 's');
    let failSidecar = false;
    const f = faultyFs((call, path) =>
      failSidecar && call === 'readFile' && path === paths.summary ? 'EIO' : undefined,
    );
    const store = await openJsonlStore({ root, fs: f.fs });
    await store.create({ id: 's' });
    await store.append('s', evs(0, 2, true));
    await store.update('s', { title: 'kept', tags: ['a'] });
    await store.append('s', evs(2, 2, true)); // the sidecar is now stale: close() refreshes it
    failSidecar = true;
    await store.close().catch(() => undefined);
    failSidecar = false;
    const reopened = await openJsonlStore({ root });
    const { summary } = await reopened.load('s');
    expect(summary.title).toBe('kept');
    expect(summary.tags).toEqual(['a']);
    await reopened.close();
  });

  // Guards: load() reports a sidecar read fault as IO instead of a summary without its title.
  it('is not hidden by load(), which would return a summary without its title', async () => {
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 's');
    let failSidecar = false;
    const f = faultyFs((call, path) =>
      failSidecar && call === 'readFile' && path === paths.summary ? 'EIO' : undefined,
    );
    const store = await openJsonlStore({ root, fs: f.fs });
    await store.create({ id: 's' });
    await store.append('s', evs(0, 2, true));
    await store.update('s', { title: 'kept' });
    failSidecar = true;
    const outcome = await store.load('s').then(
      (loaded) => ({ ok: true as const, loaded }),
      (error: unknown) => ({ ok: false as const, error }),
    );
    if (outcome.ok) expect(outcome.loaded.summary.title).toBe('kept');
    else expect(isTidemarkError(outcome.error, 'IO')).toBe(true);
    await store.close().catch(() => undefined);
  });
});

describe('update() that fails', () => {
  // Guards: a failed update restores the previous sidecar when the directory fsync fails.
  it('after the new sidecar was renamed into place (directory fsync failed) leaves the old summary visible', async () => {
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 's');
    let failDirSync = false;
    const f = faultyFs((call, path) =>
      failDirSync && call === 'syncDir' && path === paths.dir ? 'EIO' : undefined,
    );
    const store = await openJsonlStore({ root, fs: f.fs });
    await store.create({ id: 's', title: 'old' });
    await store.append('s', evs(0, 2, true));
    await store.update('s', { title: 'old', tags: ['a'] });
    const before = (await store.load('s')).summary;
    failDirSync = true;
    await expect(store.update('s', { title: 'new' })).rejects.toMatchObject({ code: 'IO' });
    failDirSync = false;
    expect((await store.load('s')).summary).toEqual(before);
    expect((await store.list()).sessions).toEqual([before]);
    await store.close();
    const reopened = await openJsonlStore({ root });
    expect((await reopened.load('s')).summary.title).toBe('old');
    await reopened.close();
  });
});

describe('update() in relaxed mode', () => {
  // Guards: update() in relaxed mode fdatasyncs pending appends before its sidecar counts them.
  it('syncs appends not yet synced before its sidecar counts them as committed', async () => {
    const f = faultyFs();
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 's');
    const store = await openJsonlStore({ root, fs: f.fs, durability: 'relaxed' });
    await store.create({ id: 's' });
    await store.append('s', evs(0, 1, true));
    await store.append('s', evs(1, 2)); // no boundary: not synced in relaxed mode
    f.calls.length = 0;
    await store.update('s', { title: 't' });
    const sync = f.calls.indexOf(`datasync ${paths.log}`);
    const sidecar = f.calls.indexOf(`rename ${paths.summary}`);
    expect(sync).toBeGreaterThanOrEqual(0);
    expect(sidecar).toBeGreaterThan(sync);
    await store.close();
  });
});
