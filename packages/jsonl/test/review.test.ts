// Adversarial review: each test shows a fault turning into loss, absence or a leak, and stays as
// the regression test of its fix.

import { copyFileSync, existsSync, mkdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  DEFAULT_MAX_EVENT_BYTES,
  type FileSystem,
  isTidemarkError,
  MAX_ATTRS_BYTES,
  MAX_TAGS,
  MAX_TEXT_LENGTH,
  nodeFileSystem,
  prepareBatch,
} from '@tidemark/core';
import { afterEach, describe, expect, it } from 'vitest';
import { bucketOf, encodeBatch, encodeHeader, openJsonlStore, sessionPaths } from '../src/index.js';
import { faultyFs } from './faulty-fs.js';
import { ev, evs, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

describe('a fault reading the summary sidecar', () => {
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

describe('close() while an operation is in flight', () => {
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

describe("load({ tail: 'cut' }) that fails half way", () => {
  it('after the log was replaced, the next append does not go to the replaced file (acknowledged loss)', async () => {
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 's');
    let renamedLog = false;
    const f = faultyFs((call, path) => {
      if (call === 'rename' && path === paths.log) renamedLog = true;
      else if (renamedLog && call === 'syncDir' && path === paths.dir) return 'EIO';
      return undefined;
    });
    const store = await openJsonlStore({ root, fs: f.fs });
    await store.create({ id: 's' });
    // The boundary (seq 1) sits inside the batch: the cut must re-frame it, i.e. rewrite the log.
    await store.append('s', [ev(0), ev(1, 'turn/end'), ev(2)]);
    await expect(store.load('s', { tail: 'cut' })).rejects.toMatchObject({ code: 'IO' });
    f.rule = () => undefined;
    renamedLog = false;
    // Whatever the failed cut left, an append the store acknowledges must be in the log.
    const { events } = await store.load('s');
    const next = events.length;
    await store.append('s', [ev(next, 'turn/end')]);
    await store.close();
    const reopened = await openJsonlStore({ root });
    const after = await reopened.load('s');
    expect(after.events.map((e) => e.seq)).toEqual([...events.map((e) => e.seq), next]);
    await reopened.close();
  });

  it('when the log cannot be reopened after the rewrite, the next append does not leave a seq gap', async () => {
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 's');
    let renamedLog = false;
    let failOpen = false;
    const f = faultyFs((call, path) => {
      if (call === 'rename' && path === paths.log) renamedLog = true;
      else if (renamedLog && call === 'open' && path === paths.log && failOpen) {
        failOpen = false;
        return 'EMFILE';
      }
      return undefined;
    });
    const store = await openJsonlStore({ root, fs: f.fs });
    await store.create({ id: 's' });
    await store.append('s', [ev(0), ev(1, 'turn/end'), ev(2)]);
    failOpen = true;
    await expect(store.load('s', { tail: 'cut' })).rejects.toMatchObject({ code: 'IO' });
    f.rule = () => undefined;
    const { events } = await store.load('s');
    const next = events.length;
    await store.append('s', [ev(next, 'turn/end')]);
    await store.close();
    const reopened = await openJsonlStore({ root });
    const after = await reopened.load('s');
    expect(after.events.map((e) => e.seq)).toEqual([...events.map((e) => e.seq), next]);
    await reopened.close();
  });
});

describe('update() that fails', () => {
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

describe('a log whose header names another session (a copied file)', () => {
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
    expect((await reader.verify('b')).status).toBe('corrupt');
    await expect(reader.append('b', [ev(2, 'turn/end')])).rejects.toMatchObject({ code: 'CORRUPT' });
    await reader.close();
  });
});

describe('hostile timestamps in a sidecar or a log', () => {
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

describe('a writer evicted (maxOpenWriters) while the same session is used again', () => {
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
    const store = await openJsonlStore({ root, fs, maxOpenWriters: 1 });
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

describe('the first append into a store whose root and its parents do not exist yet', () => {
  it('fsyncs the parent of every directory it creates, so power loss cannot drop the acknowledged batch with them', async () => {
    const base = tempDir();
    const root = join(base, 'home', '.tidemark', 'sessions');
    const f = faultyFs();
    const store = await openJsonlStore({ root, fs: f.fs });
    await store.create({ id: 's' });
    await store.append('s', [ev(0, 'turn/end')]);
    await store.close();
    const synced = f.calls.filter((c) => c.startsWith('syncDir ')).map((c) => c.slice('syncDir '.length));
    for (const dir of [base, join(base, 'home'), join(base, 'home', '.tidemark'), root])
      expect(synced).toContain(dir);
  });
});

describe('a hostile sidecar too large to read', () => {
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

describe('a read() iterator its caller stops consuming', () => {
  it('gives its descriptor back at close(), and then answers CLOSED', async () => {
    const f = faultyFs();
    const store = await openJsonlStore({ root: tempDir(), fs: f.fs });
    await store.create({ id: 's' });
    await store.append('s', evs(0, 5, true));
    const held = f.openHandles; // the kept-open append descriptor
    const iterator = store.read('s')[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toEqual(ev(0));
    expect(f.openHandles).toBe(held + 1);
    // Neither break nor return(): the generator's finally never runs on its own.
    await store.close();
    expect(f.openHandles).toBe(0);
    const after = await iterator.next().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isTidemarkError(after) && after.code).toBe('CLOSED');
    expect(f.openHandles).toBe(0);
  });

  it('closes its descriptor itself when it runs to the end or is broken off', async () => {
    const f = faultyFs();
    const store = await openJsonlStore({ root: tempDir(), fs: f.fs });
    await store.create({ id: 's' });
    await store.append('s', evs(0, 5, true));
    const held = f.openHandles;
    const all = [];
    for await (const event of store.read('s')) all.push(event);
    expect(all).toHaveLength(5);
    expect(f.openHandles).toBe(held);
    for await (const event of store.read('s')) if (event.seq === 1) break;
    expect(f.openHandles).toBe(held);
    await store.close();
    expect(f.openHandles).toBe(0);
  });
});

describe('update() in relaxed mode', () => {
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

describe('a writer taking over a log another writer left', () => {
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

describe('line length: nothing acknowledged is longer than the reader accepts', () => {
  it('a maxEventBytes above what a log line may hold is INVALID at open', async () => {
    const root = tempDir();
    for (const bad of [DEFAULT_MAX_EVENT_BYTES + 1, 64 * 1024 * 1024, 0, 1.5]) {
      const error = await openJsonlStore({ root, maxEventBytes: bad }).catch((e: unknown) => e);
      expect(isTidemarkError(error, 'INVALID'), String(bad)).toBe(true);
      expect((error as Error).message).toContain('maxEventBytes');
    }
  });

  it('the largest event and the largest pending summary fields read back after reopen', async () => {
    const root = tempDir();
    const store = await openJsonlStore({ root });
    await store.create({ id: 'big' });
    // Summary fields at their limits, written into the header line of the first batch; control
    // characters take six bytes each as JSON escapes.
    const patch = {
      title: '\u0001'.repeat(MAX_TEXT_LENGTH),
      tags: Array.from({ length: MAX_TAGS }, () => '\u0001'.repeat(MAX_TEXT_LENGTH)),
      attrs: { blob: 'x'.repeat(MAX_ATTRS_BYTES - '{"blob":""}'.length) },
    };
    await store.update('big', patch);
    const data = 'y'.repeat(DEFAULT_MAX_EVENT_BYTES - JSON.stringify(ev(0, 'turn/end', '')).length);
    const event = ev(0, 'turn/end', data);
    expect(Buffer.byteLength(JSON.stringify(event))).toBe(DEFAULT_MAX_EVENT_BYTES);
    await store.append('big', [event]);
    await store.close();
    const reopened = await openJsonlStore({ root });
    const loaded = await reopened.load('big');
    expect(loaded.events).toHaveLength(1);
    expect(loaded.events[0]!.data).toBe(data);
    expect(loaded.summary.tags).toEqual(patch.tags);
    expect(loaded.summary.attrs).toEqual(patch.attrs);
    expect(await reopened.append('big', [ev(1, 'turn/end', 'next')])).toEqual({ nextSeq: 2 });
    await reopened.close();
  }, 60_000);
});

describe('a first append that finds another instance published the id after it looked', () => {
  it('keeps its reservation when its batch is refused with CONFLICT, as the memory model does', async () => {
    const root = tempDir();
    // b looks for the log (none yet), then waits at its first look at the root while a publishes
    // the session and finishes; b's link then finds a's log, and its batch goes through the seq
    // rules: CONFLICT (another batch at seq 0).
    let unblock!: () => void;
    const gate = new Promise<void>((resolve) => {
      unblock = resolve;
    });
    let gated = false;
    const fs: FileSystem = {
      ...nodeFileSystem,
      async lstat(path) {
        if (path === root && !gated) {
          gated = true;
          await gate;
        }
        return nodeFileSystem.lstat(path);
      },
    };
    const a = await openJsonlStore({ root });
    const b = await openJsonlStore({ root, fs });
    await a.create({ id: 's', title: 'a' });
    await b.create({ id: 's', title: 'b' });
    const refused = b.append('s', [ev(0, 'note', { writer: 'b' })]).then(
      () => 'ok',
      (error: unknown) => (isTidemarkError(error) ? error.code : String(error)),
    );
    while (!gated) await new Promise((resolve) => setTimeout(resolve, 1));
    expect(await a.append('s', [ev(0, 'note', { writer: 'a' })])).toEqual({ nextSeq: 1 });
    unblock();
    expect(await refused).toBe('CONFLICT');
    // The refused append changed nothing: b still holds its reservation after a deletes the session.
    await a.delete('s');
    await expect(b.create({ id: 's' })).rejects.toMatchObject({ code: 'ALREADY_EXISTS' });
    expect(await b.append('s', [ev(0, 'note', { writer: 'b' })])).toEqual({ nextSeq: 1 });
    expect((await a.load('s')).summary.title).toBe('b');
    await a.close();
    await b.close();
  });
});

describe('delete under power loss', () => {
  it('makes the log removal durable before removing the summary, so a crash cannot leave a session without its title', async () => {
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 's');
    const f = faultyFs();
    const store = await openJsonlStore({ root, fs: f.fs });
    await store.create({ id: 's', title: 'kept' });
    await store.append('s', evs(0, 2, true));
    await store.update('s', { tags: ['t'] });
    f.calls.length = 0;
    await store.delete('s');
    await store.close();
    const at = (call: string) => f.calls.indexOf(call);
    const logGone = at(`unlink ${paths.log}`);
    const summaryGone = at(`unlink ${paths.summary}`);
    expect(logGone).toBeGreaterThanOrEqual(0);
    expect(summaryGone).toBeGreaterThan(logGone);
    // A directory sync between the two unlinks: the second cannot persist without the first.
    const between = f.calls.slice(logGone + 1, summaryGone);
    expect(between).toContain(`syncDir ${paths.dir}`);
    // And one after both, as before: the delete is durable when it resolves.
    expect(f.calls.slice(summaryGone + 1)).toContain(`syncDir ${paths.dir}`);
  });
});
