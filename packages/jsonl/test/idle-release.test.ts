// A writer idle for `lockIdleMs` releases its session's lock (other processes may then write), and
// taking it again never trusts what the writer remembered: the log is checked first. The
// cross-process behaviour is in idle-processes.test.ts; this file drives one process.
import { existsSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { type FileHandlePort, type FileSystem, isTidemarkError, nodeFileSystem } from '@tidemark/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { bucketOf, encodeBatch, openJsonlStore, sessionPaths } from '../src/index.js';
import { faultyFs } from './faulty-fs.js';
import { ev, evs, removeTempDirs, tempDir } from './helpers.js';

afterEach(() => {
  vi.useRealTimers();
  removeTempDirs();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** One turn of the event loop (setImmediate is never faked here). */
const tick = () => new Promise((resolve) => setImmediate(resolve));

/** Waits (real time) until `done()` holds; fails after a bound far above any expected wait. */
async function until(done: () => boolean, what: string, boundMs = 20_000): Promise<void> {
  const start = Date.now();
  while (!done()) {
    if (Date.now() - start > boundMs) throw new Error(`still waiting after ${boundMs} ms: ${what}`);
    await sleep(5);
  }
}

const outcome = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (error: unknown) => (isTidemarkError(error) ? error.code : error),
  );

describe('idle release', () => {
  it('releases the lock once idle, without close(), and takes it again for the next append', async () => {
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 's');
    const store = await openJsonlStore({ root, lockIdleMs: 20 });
    await store.create({ id: 's' });
    await store.append('s', evs(0, 2, true));
    expect(existsSync(paths.lock)).toBe(true);
    await until(() => !existsSync(paths.lock), 'the idle writer releases its lock');
    expect(await store.append('s', evs(2, 1))).toEqual({ nextSeq: 3 });
    expect(existsSync(paths.lock)).toBe(true);
    await store.close();
    expect(existsSync(paths.lock)).toBe(false);
    const check = await openJsonlStore({ root });
    expect((await check.load('s')).events.map((e) => e.seq)).toEqual([0, 1, 2]);
    await check.close();
  });

  it('a writer used more often than lockIdleMs keeps its lock; the grace counts from its last use', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 's');
    const store = await openJsonlStore({ root, lockIdleMs: 250 });
    await store.create({ id: 's' });
    await store.append('s', evs(0, 1, true));
    const held = readFileSync(paths.lock, 'utf8');
    for (let seq = 1; seq <= 5; seq++) {
      vi.advanceTimersByTime(200);
      await store.append('s', evs(seq, 1));
      expect(readFileSync(paths.lock, 'utf8')).toBe(held); // the very same lock: no release in between
    }
    vi.advanceTimersByTime(200);
    await tick();
    expect(readFileSync(paths.lock, 'utf8')).toBe(held);
    vi.advanceTimersByTime(100); // 300 ms since the last append
    await tick(); // the release has looked at the (fake) clock
    vi.useRealTimers();
    await until(() => !existsSync(paths.lock), 'the release once idle');
    await store.close();
  });

  it('lockIdleMs: Infinity keeps the lock until close(); an invalid value is INVALID', async () => {
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 's');
    const store = await openJsonlStore({ root, lockIdleMs: Number.POSITIVE_INFINITY });
    await store.create({ id: 's' });
    await store.append('s', evs(0, 1, true));
    await sleep(400); // longer than the default grace
    expect(existsSync(paths.lock)).toBe(true);
    await store.close();
    expect(existsSync(paths.lock)).toBe(false);
    for (const lockIdleMs of [-1, Number.NaN, '10' as unknown as number])
      await expect(openJsonlStore({ root, lockIdleMs })).rejects.toMatchObject({ code: 'INVALID' });
  });

  it('taking the lock again checks only the end of an unchanged log, not the whole log', async () => {
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 's');
    let logBytesRead = 0;
    const counting = (inner: FileHandlePort): FileHandlePort => ({
      ...inner,
      read: async (buffer, offset, length, position) => {
        const n = await inner.read(buffer, offset, length, position);
        logBytesRead += n;
        return n;
      },
      write: (...args) => inner.write(...args),
      datasync: () => inner.datasync(),
      sync: () => inner.sync(),
      truncate: (length) => inner.truncate(length),
      size: () => inner.size(),
      close: () => inner.close(),
    });
    const fs: FileSystem = {
      ...nodeFileSystem,
      async open(path, flags, mode) {
        const handle = await nodeFileSystem.open(path, flags, mode);
        return path === paths.log ? counting(handle) : handle;
      },
    };
    const store = await openJsonlStore({ root, fs, lockIdleMs: 20 });
    await store.create({ id: 's' });
    const big = { text: 'x'.repeat(10_000) };
    for (let seq = 0; seq < 100; seq++) await store.append('s', [ev(seq, 'turn/end', big)]);
    const size = statSync(paths.log).size;
    expect(size).toBeGreaterThan(1_000_000);
    await until(() => !existsSync(paths.lock), 'the idle release');
    // Another live process holds the lock for a while (and writes nothing): CONFLICT, and what the
    // writer knew is still used once the lock is free again.
    writeFileSync(paths.lock, JSON.stringify({ pid: 1, host: hostname(), token: 'other' }));
    expect(await outcome(store.append('s', evs(100, 1)))).toBe('CONFLICT');
    unlinkSync(paths.lock);
    logBytesRead = 0;
    expect(await store.append('s', evs(100, 1))).toEqual({ nextSeq: 101 });
    expect(logBytesRead).toBeLessThanOrEqual(128);
    await store.close();
  });

  it('another instance of this process asking while the release is under way is handed the lock, not CONFLICT', async () => {
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 's');
    let armed = false;
    let reached!: () => void;
    const atUnlink = new Promise<void>((resolve) => {
      reached = resolve;
    });
    let resume!: () => void;
    const gate = new Promise<void>((resolve) => {
      resume = resolve;
    });
    const fs: FileSystem = {
      ...nodeFileSystem,
      async unlink(path) {
        if (armed && path === paths.lock) {
          armed = false;
          reached();
          await gate; // the idle release stops just before removing its lock
        }
        return nodeFileSystem.unlink(path);
      },
    };
    const a = await openJsonlStore({ root, fs, lockIdleMs: 0 });
    const b = await openJsonlStore({ root });
    await a.create({ id: 's' });
    armed = true;
    await a.append('s', evs(0, 1, true));
    await atUnlink;
    const fromB = outcome(b.append('s', evs(1, 1)));
    await sleep(50);
    resume();
    expect(await fromB).toBe('ok');
    expect((await a.load('s')).events.map((e) => e.seq)).toEqual([0, 1]);
    await Promise.all([a.close(), b.close()]);
  });

  it('another writer that appended meanwhile: the stale seq is CONFLICT, the next one lands', async () => {
    const root = tempDir();
    const a = await openJsonlStore({ root, lockIdleMs: 20 });
    const b = await openJsonlStore({ root, lockIdleMs: 20 });
    await a.create({ id: 's' });
    await a.append('s', evs(0, 2, true));
    await until(() => !existsSync(sessionPaths(root, bucketOf(undefined), 's').lock), 'release');
    expect(await b.append('s', [ev(2, 'note', { writer: 'b' })])).toEqual({ nextSeq: 3 });
    expect(await outcome(a.append('s', [ev(2, 'note', { writer: 'a' })]))).toBe('CONFLICT');
    expect(await a.append('s', [ev(3, 'note', { writer: 'a' })])).toEqual({ nextSeq: 4 });
    expect((await a.load('s')).events.map((e) => e.data)).toEqual([
      { text: 'm0' },
      { text: 'm1' },
      { writer: 'b' },
      { writer: 'a' },
    ]);
    await Promise.all([a.close(), b.close()]);
  });

  it('a log cut and written again to the very length the idle writer left is scanned, not trusted', async () => {
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 's');
    const a = await openJsonlStore({ root, lockIdleMs: 20 });
    await a.create({ id: 's' });
    await a.append('s', evs(0, 2, true));
    const committed = statSync(paths.log).size;
    await a.append('s', [ev(2, 'note', { text: 'interrupted turn '.repeat(20) })]); // no boundary after it
    const aLength = statSync(paths.log).size;
    await until(() => !existsSync(paths.lock), 'release');
    // Another writer cuts the interrupted tail and appends two events (seqs 2 and 3) padded so
    // that the log ends at exactly the length `a` knew: only its last bytes differ.
    const b = await openJsonlStore({ root, lockIdleMs: 20 });
    const loaded = await b.load('s', { tail: 'cut' });
    expect(loaded.recovered?.cutEvents).toBe(1);
    expect(statSync(paths.log).size).toBe(committed);
    const framedLength = (pad: string) =>
      Buffer.byteLength(
        encodeBatch(
          [ev(2, 'note', { p: '' }), ev(3, 'turn/end', { p: pad })].map((e) => ({ json: JSON.stringify(e) })),
          3,
          new Date().toISOString(),
        ),
      );
    const pad = 'y'.repeat(aLength - committed - framedLength(''));
    expect(framedLength(pad)).toBe(aLength - committed);
    await b.append('s', [ev(2, 'note', { p: '' }), ev(3, 'turn/end', { p: pad })]);
    expect(statSync(paths.log).size).toBe(aLength);
    await until(() => !existsSync(paths.lock), 'release by b');
    // `a` remembers seq 3 as next; the log's next is 4.
    expect(await outcome(a.append('s', [ev(3, 'note', { writer: 'a' })]))).toBe('CONFLICT');
    expect(await a.append('s', [ev(4, 'note', { writer: 'a' })])).toEqual({ nextSeq: 5 });
    await Promise.all([a.close(), b.close()]);
    const check = await openJsonlStore({ root });
    expect((await check.load('s')).events.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4]);
    await check.close();
  });

  it('a session deleted while its writer was idle is NOT_FOUND to that writer, not written at its old end', async () => {
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 's');
    const a = await openJsonlStore({ root, lockIdleMs: 20 });
    await a.create({ id: 's' });
    await a.append('s', evs(0, 2, true));
    await until(() => !existsSync(paths.lock), 'release');
    const b = await openJsonlStore({ root });
    await b.delete('s');
    expect(await outcome(a.append('s', evs(2, 1)))).toBe('NOT_FOUND');
    expect(existsSync(paths.log)).toBe(false);
    await Promise.all([a.close(), b.close()]);
  });

  it('relaxed durability: what is owed is synced before the lock goes; a failed sync is reported by close()', async () => {
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 's');
    const f = faultyFs();
    const store = await openJsonlStore({ root, fs: f.fs, durability: 'relaxed', lockIdleMs: 20 });
    await store.create({ id: 's' });
    await store.append('s', evs(0, 1, true));
    await store.append('s', evs(1, 1)); // no boundary: not synced by the append
    f.calls.length = 0;
    await until(() => !existsSync(paths.lock), 'release');
    const sync = f.calls.indexOf(`datasync ${paths.log}`);
    const unlock = f.calls.indexOf(`unlink ${paths.lock}`);
    expect(sync).toBeGreaterThanOrEqual(0);
    expect(unlock).toBeGreaterThan(sync);
    // Now the sync at the idle release fails: the lock is released all the same (the next
    // writer reopens and syncs again), and close() says IO, as it would have for an open writer.
    await store.append('s', evs(2, 1));
    f.rule = (call, path) => (call === 'datasync' && path === paths.log ? 'EIO' : undefined);
    await until(() => !existsSync(paths.lock), 'release after a failed sync');
    f.rule = () => undefined;
    expect(f.syncAfterFailure).toBe(0);
    expect(await store.append('s', evs(3, 1, true))).toEqual({ nextSeq: 4 });
    await expect(store.close()).rejects.toMatchObject({ code: 'IO', errno: 'EIO' });
    const check = await openJsonlStore({ root });
    expect((await check.load('s')).events.map((e) => e.seq)).toEqual([0, 1, 2, 3]);
    await check.close();
  });
});
