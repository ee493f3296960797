import { existsSync, readdirSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type FileSystem, isTidemarkError, nodeFileSystem } from '@tidemark/core';
import { afterEach, describe, expect, it } from 'vitest';
import { bucketOf, openJsonlStore, sessionPaths } from '../src/index.js';
import { ev, evs, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

// The built copy of this package: a second copy of the module, as two installed versions would be.
const distIndex = fileURLToPath(new URL('../dist/index.js', import.meta.url));

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

describe('stale lock takeover races', () => {
  const gate = () => {
    let open!: () => void;
    const opened = new Promise<void>((resolve) => {
      open = resolve;
    });
    return { opened, open };
  };
  const settle = (p: Promise<unknown>) =>
    p.then(
      () => 'ok',
      (error: unknown) => (isTidemarkError(error) ? error.code : error),
    );

  it('a taker that judged a lock stale never removes the fresh lock another taker made meanwhile', async () => {
    const root = tempDir();
    const paths = await seeded(root); // seq 0 by A
    // The writer that held the lock crashed: its pid is not alive.
    writeFileSync(paths.lock, JSON.stringify({ pid: 2 ** 22 + 54321, host: hostname(), token: 'dead' }));
    const cPaused = gate();
    const cGo = gate();
    const cInGap = gate();
    const cGapGo = gate();
    // C pauses at its first step of taking the stale lock over, and (on code that moves locks
    // aside) again while the lock it moved is out of place.
    const fs: FileSystem = {
      ...nodeFileSystem,
      async rename(from, to) {
        if (from === paths.lock) {
          cPaused.open();
          await cGo.opened;
        }
        return nodeFileSystem.rename(from, to);
      },
      async link(from, to) {
        if (to.includes('.takeover.')) {
          cPaused.open();
          await cGo.opened;
        }
        return nodeFileSystem.link(from, to);
      },
      async readFile(path) {
        if (path.includes('.lock.stale-')) {
          cInGap.open();
          await cGapGo.opened;
        }
        return nodeFileSystem.readFile(path);
      },
    };
    const c = await openJsonlStore({ root, fs });
    const b = await openJsonlStore({ root });
    const d = await openJsonlStore({ root });
    const cAppend = settle(c.append('s', [ev(1, 'turn/end', 'C')]));
    await cPaused.opened; // C judged the dead lock stale
    const b1 = await settle(b.append('s', [ev(1, 'turn/end', 'B')])); // B takes it over first
    cGo.open();
    await Promise.race([cInGap.opened, cAppend]);
    const d2 = await settle(d.append('s', [ev(2, 'turn/end', 'D')]));
    cGapGo.open();
    const c1 = await cAppend;
    const b2 = await settle(b.append('s', [ev(2, 'turn/end', 'B')]));
    await Promise.all([b.close(), c.close(), d.close()]);
    // Each seq is won by one append at most, and every acknowledged append is in the log.
    expect(b1).toBe('ok');
    expect([c1, d2, b2].filter((r) => r !== 'ok' && r !== 'CONFLICT')).toEqual([]);
    expect(c1 === 'ok' && b1 === 'ok').toBe(false);
    expect(d2 === 'ok' && b2 === 'ok').toBe(false);
    const check = await openJsonlStore({ root });
    const data = (await check.load('s')).events.map((e) => e.data);
    await check.close();
    expect(data[1]).toEqual(ev(1, 'turn/end', 'B').data);
    if (d2 === 'ok') expect(data[2]).toEqual(ev(2, 'turn/end', 'D').data);
    if (b2 === 'ok') expect(data[2]).toEqual(ev(2, 'turn/end', 'B').data);
    expect(
      readdirSync(join(root, '.locks')).filter((n) => n.includes('.takeover') || n.includes('.stale-')),
    ).toEqual([]);
  });

  it('a takeover guard left by a killed taker is cleared; one held by a live process is CONFLICT', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    writeFileSync(paths.lock, JSON.stringify({ pid: 2 ** 22 + 54321, host: hostname(), token: 'dead' }));
    const guard = `${paths.lock}.takeover.${'a1'.repeat(12)}`;
    writeFileSync(guard, JSON.stringify({ pid: 1, host: hostname(), token: 'live-taker' }));
    const store = await openJsonlStore({ root });
    const error = await store.append('s', evs(1, 1)).catch((e: unknown) => e);
    expect(isTidemarkError(error, 'CONFLICT')).toBe(true);
    expect((error as { retryable: boolean }).retryable).toBe(true);
    writeFileSync(guard, JSON.stringify({ pid: 2 ** 22 + 54322, host: hostname(), token: 'dead-taker' }));
    expect(await store.append('s', evs(1, 1))).toEqual({ nextSeq: 2 });
    await store.close();
    expect(readdirSync(join(root, '.locks'))).toEqual([]);
  });
});

describe('lock registration and guards under interleavings', () => {
  /** A FileSystem that stops once at the first `op` whose path matches, until resumed. */
  function pauseAt(op: 'link' | 'unlink' | 'readdir', test: (path: string) => boolean) {
    let resume!: () => void;
    const gate = new Promise<void>((r) => {
      resume = r;
    });
    let hit!: () => void;
    const reached = new Promise<void>((r) => {
      hit = r;
    });
    let armed = true;
    const stop = async (path: string) => {
      if (armed && test(path)) {
        armed = false;
        hit();
        await gate;
      }
    };
    const fs: FileSystem = {
      ...nodeFileSystem,
      async link(from, to) {
        if (op === 'link') await stop(to);
        return nodeFileSystem.link(from, to);
      },
      async unlink(path) {
        if (op === 'unlink') await stop(path);
        return nodeFileSystem.unlink(path);
      },
      async readdir(path) {
        if (op === 'readdir') await stop(path);
        return nodeFileSystem.readdir(path);
      },
    };
    return { fs, reached, resume };
  }
  const outcome = (p: Promise<unknown>) =>
    p.then(
      () => 'ok',
      (error: unknown) => (isTidemarkError(error) ? error.code : error),
    );

  it('a lock just linked, before its temp file is removed, already counts as held in this process', async () => {
    const root = tempDir();
    await seeded(root);
    const pause = pauseAt('unlink', (path) => /\/\.locks\/\.tmp-/.test(path));
    const a = await openJsonlStore({ root, fs: pause.fs });
    const b = await openJsonlStore({ root });
    const aFirst = outcome(a.append('s', [ev(1, 'note', { w: 'x' })]));
    await pause.reached; // a's lock is linked; a is still inside its acquire
    // a is busy: b must lose, not take a's lock for a failed release and take it over.
    expect(await outcome(b.append('s', [ev(1, 'note', { w: 'x' })]))).toBe('CONFLICT');
    pause.resume();
    expect(await aFirst).toBe('ok');
    const ra = await outcome(a.append('s', [ev(2, 'note', { writer: 'a' })]));
    const rb = await outcome(b.append('s', [ev(2, 'note', { writer: 'b' })]));
    expect([ra, rb].filter((r) => r === 'ok')).toHaveLength(1);
    await Promise.all([a.close(), b.close()]);
    const check = await openJsonlStore({ root });
    const data = (await check.load('s')).events.map((e) => e.data);
    await check.close();
    expect(data[2]).toEqual({ writer: ra === 'ok' ? 'a' : 'b' });
  });

  it('three takers and a dead guard: one takes over, the others are told CONFLICT, never two writers', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    const dead = (token: string) => JSON.stringify({ pid: 2 ** 22 + 4321, host: hostname(), token });
    writeFileSync(paths.lock, dead('stale-lock')); // a writer died holding the lock
    writeFileSync(`${paths.lock}.takeover.${'d0'.repeat(12)}`, dead('stale-guard')); // a taker died inside its takeover
    // X holds its guard and has checked the lock, and stops just before removing it.
    const x = pauseAt('unlink', (path) => path === paths.lock);
    const X = await openJsonlStore({ root, fs: x.fs });
    const xFirst = outcome(X.append('s', [ev(1, 'note', { w: 'x' })]));
    await x.reached;
    const Y = await openJsonlStore({ root });
    const Z = await openJsonlStore({ root });
    // Y and Z see X's live guard (this process, a takeover under way) and withdraw.
    expect(await outcome(Y.append('s', [ev(1, 'note', { w: 'y' })]))).toBe('CONFLICT');
    expect(await outcome(Z.append('s', [ev(1, 'note', { w: 'z' })]))).toBe('CONFLICT');
    x.resume();
    expect(await xFirst).toBe('ok');
    const results = [
      await outcome(X.append('s', [ev(2, 'note', { w: 'X' })])),
      await outcome(Y.append('s', [ev(2, 'note', { w: 'Y' })])),
      await outcome(Z.append('s', [ev(2, 'note', { w: 'Z' })])),
    ];
    expect(results.filter((r) => r === 'ok')).toHaveLength(1);
    await Promise.all([X.close(), Y.close(), Z.close()]);
    expect(readdirSync(join(root, '.locks'))).toEqual([]); // the dead guard was cleaned up too
  });

  it('two takers that both created guards: the one that lists second withdraws', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    writeFileSync(paths.lock, JSON.stringify({ pid: 2 ** 22 + 4322, host: hostname(), token: 'dead' }));
    // X has created its guard and stops before listing the others.
    const x = pauseAt('readdir', (path) => path.endsWith('.locks'));
    const X = await openJsonlStore({ root, fs: x.fs });
    const xFirst = outcome(X.append('s', [ev(1, 'note', { w: 'x' })]));
    await x.reached;
    const Y = await openJsonlStore({ root });
    expect(await outcome(Y.append('s', [ev(1, 'note', { w: 'y' })]))).toBe('CONFLICT');
    x.resume();
    expect(await xFirst).toBe('ok');
    await Promise.all([X.close(), Y.close()]);
  });

  it('the guard of a live taker never expires, however long its takeover takes', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    writeFileSync(paths.lock, JSON.stringify({ pid: 2 ** 22 + 4323, host: hostname(), token: 'dead' }));
    const guard = `${paths.lock}.takeover.${'b2'.repeat(12)}`;
    writeFileSync(guard, JSON.stringify({ pid: 1, host: hostname(), token: 'b2'.repeat(12) }));
    const old = new Date(Date.now() - 60_000);
    utimesSync(guard, old, old); // a stopped or stalled taker, alive all the same
    const store = await openJsonlStore({ root });
    expect(await outcome(store.append('s', evs(1, 1)))).toBe('CONFLICT');
    await store.close();
  });

  it.each(['job.tmp', 'a.lock.takeover.b', 's.lock.takeover.0123456789abcdef01234567.lock'])(
    'ids that look like temp or guard names (%s) neither hide guards nor lose their locks',
    async (id) => {
      const root = tempDir();
      const first = await openJsonlStore({ root });
      await first.create({ id });
      await first.append(id, evs(0, 1, true));
      await first.create({ id: 's' }); // a neighbour whose lock name prefixes the odd id's
      await first.append('s', evs(0, 1, true));
      await first.close();
      const lock = sessionPaths(root, bucketOf(undefined), id).lock;
      const neighbour = sessionPaths(root, bucketOf(undefined), 's').lock;
      const dead = JSON.stringify({ pid: 2 ** 22 + 4324, host: hostname(), token: 'dead' });
      writeFileSync(lock, dead);
      writeFileSync(neighbour, dead);
      // Y takes the odd id's stale lock over and stops just before removing it.
      const y = pauseAt('unlink', (path) => path === lock);
      // Y's lock must still be held below, however slow this machine: it never goes idle.
      const Y = await openJsonlStore({ root, fs: y.fs, lockIdleMs: Number.POSITIVE_INFINITY });
      const yFirst = outcome(Y.append(id, [ev(1, 'note', { w: 'y' })]));
      await y.reached;
      const X = await openJsonlStore({ root });
      expect(await outcome(X.append(id, [ev(1, 'note', { w: 'x' })]))).toBe('CONFLICT');
      y.resume();
      expect(await yFirst).toBe('ok');
      // A live lock of the odd id survives a takeover of its neighbour's stale lock.
      const Z = await openJsonlStore({ root });
      expect(await outcome(Z.append('s', [ev(1, 'note', { w: 'z' })]))).toBe('ok');
      expect(existsSync(lock)).toBe(true);
      const results = [
        await outcome(Y.append(id, [ev(2, 'note', { w: 'Y' })])),
        await outcome(X.append(id, [ev(2, 'note', { w: 'X' })])),
      ];
      expect(results.filter((r) => r === 'ok')).toHaveLength(1);
      await Promise.all([X.close(), Y.close(), Z.close()]);
    },
  );
});

describe('telling this process from others', () => {
  const outcome = (p: Promise<unknown>) =>
    p.then(
      () => 'ok',
      (error: unknown) => (isTidemarkError(error) ? error.code : error),
    );

  it.skipIf(!existsSync(distIndex))(
    'two copies of the package in one process hand over instead of taking each other over',
    async () => {
      const root = tempDir();
      await seeded(root);
      const copy = (await import(distIndex)) as { openJsonlStore: typeof openJsonlStore };
      const a = await openJsonlStore({ root });
      const b = await copy.openJsonlStore({ root });
      expect(await outcome(a.append('s', [ev(1, 'note', { w: 'a' })]))).toBe('ok');
      expect(await outcome(b.append('s', [ev(2, 'note', { w: 'b' })]))).toBe('ok'); // handed over
      // a must learn that it lost the lock, not write seq 2 again from its cached position.
      expect(await outcome(a.append('s', [ev(2, 'note', { w: 'a' })]))).toBe('CONFLICT');
      await Promise.all([a.close(), b.close()]);
      const check = await openJsonlStore({ root });
      expect((await check.load('s')).events.map((e) => e.data)).toEqual([
        { text: 'm0' },
        { w: 'a' },
        { w: 'b' },
      ]);
      await check.close();
    },
  );

  // Only Linux names PID namespaces; elsewhere pids are compared as before.
  it.skipIf(!existsSync('/proc/self/ns/pid'))(
    'a lock from another PID namespace of this host is never judged by its pid',
    async () => {
      const root = tempDir();
      const paths = await seeded(root);
      for (const pid of [process.pid, 2 ** 22 + 4400]) {
        // A container with host networking: same host name, its own pids (ours, or a dead one here).
        writeFileSync(
          paths.lock,
          JSON.stringify({ pid, host: hostname(), token: 'c0'.repeat(12), ns: 'pid:[1]' }),
        );
        const store = await openJsonlStore({ root });
        expect(await outcome(store.append('s', evs(1, 1)))).toBe('CONFLICT');
        await store.close();
        expect(existsSync(paths.lock)).toBe(true);
      }
    },
  );

  it('a guard of this process that could not be removed is removed at its next takeover', async () => {
    const root = tempDir();
    const first = await seeded(root);
    const store0 = await openJsonlStore({ root });
    await store0.create({ id: 't' });
    await store0.append('t', evs(0, 1, true));
    await store0.close();
    const second = sessionPaths(root, bucketOf(undefined), 't');
    const dead = JSON.stringify({ pid: 2 ** 22 + 4401, host: hostname(), token: 'dead' });
    writeFileSync(first.lock, dead);
    writeFileSync(second.lock, dead);
    let failGuardUnlink = true;
    const fs: FileSystem = {
      ...nodeFileSystem,
      async unlink(path) {
        if (failGuardUnlink && path.includes('.takeover.')) {
          failGuardUnlink = false;
          throw Object.assign(new Error('EIO: i/o error, unlink'), { code: 'EIO' });
        }
        return nodeFileSystem.unlink(path);
      },
    };
    const store = await openJsonlStore({ root, fs });
    expect(await store.append('s', evs(1, 1))).toEqual({ nextSeq: 2 });
    const guards = () => readdirSync(join(root, '.locks')).filter((n) => n.includes('.takeover.'));
    expect(guards()).toHaveLength(1); // left behind; other processes would take it for live
    expect(await store.append('t', evs(1, 1))).toEqual({ nextSeq: 2 });
    expect(guards()).toEqual([]);
    await store.close();
  });
});
