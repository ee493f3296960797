import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isTidemarkError } from '@tidemark/core';
import { afterEach, describe, expect, it } from 'vitest';
import { bucketOf, openJsonlStore, sessionPaths } from '../src/index.js';
import { evs, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

const CHILD = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'child.mjs');

function startChild(
  command: object,
  as?: { uid: number; gid: number },
): { child: ChildProcess; lines: Promise<string[]> } {
  const child = spawn(process.execPath, [CHILD, JSON.stringify(command)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(as !== undefined && as),
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr!.on('data', (chunk) => {
    stderr += chunk;
  });
  const lines = new Promise<string[]>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code !== 0 && signal === null) reject(new Error(`child exited ${code}: ${stderr}${stdout}`));
      else resolve(stdout.trim().split('\n'));
    });
  });
  return { child, lines };
}

async function runChild<T>(command: object, as?: { uid: number; gid: number }): Promise<T> {
  const lines = await startChild(command, as).lines;
  return JSON.parse(lines[lines.length - 1]!) as T;
}

async function seeded(root: string): Promise<void> {
  const store = await openJsonlStore({ root });
  await store.create({ id: 's' });
  await store.append('s', evs(0, 2, true));
  await store.close();
}

interface Outcome {
  op: string;
  ok: boolean;
  value?: unknown;
  code?: string;
  errno?: string;
}

describe('separate processes', () => {
  it('two processes appending to one session: each seq is won by exactly one, the log stays contiguous', async () => {
    const root = tempDir();
    await seeded(root);
    const count = 15;
    const [a, b] = await Promise.all([
      runChild<{ won: number[] }>({ mode: 'writer', root, id: 's', writer: 'a', count }),
      runChild<{ won: number[] }>({ mode: 'writer', root, id: 's', writer: 'b', count }),
    ]);
    const store = await openJsonlStore({ root });
    const loaded = await store.load('s');
    await store.close();
    expect(loaded.events.map((e) => e.seq)).toEqual(Array.from({ length: 2 + 2 * count }, (_, i) => i));
    expect([...a.won, ...b.won].sort((x, y) => x - y)).toEqual(loaded.events.slice(2).map((e) => e.seq));
    for (const seq of a.won) expect(loaded.events[seq]!.data).toEqual({ writer: 'a' });
    for (const seq of b.won) expect(loaded.events[seq]!.data).toEqual({ writer: 'b' });
    expect(loaded.recovered).toBeUndefined();
  });

  it('two processes creating the same ids under different cwds: each id is published once, in one bucket', async () => {
    const root = tempDir();
    const count = 40;
    const start = Date.now() + 700; // both children have loaded by then
    const [a, b] = await Promise.all([
      runChild<string[]>({ mode: 'creator', root, cwd: '/work/a', count, start }),
      runChild<string[]>({ mode: 'creator', root, cwd: '/work/b', count, start }),
    ]);
    const store = await openJsonlStore({ root });
    const listed = (await store.list({ limit: 1000 })).sessions;
    for (let i = 0; i < count; i++) {
      const id = `race-${i}`;
      // Exactly one of the two got its first batch in; the other was told, never silently split.
      expect(
        [a[i], b[i]].filter((o) => o === 'won'),
        id,
      ).toHaveLength(1);
      expect(
        [a[i], b[i]].filter((o) => o !== 'won').every((o) => o === 'CONFLICT' || o === 'ALREADY_EXISTS'),
        id,
      ).toBe(true);
      const winner = a[i] === 'won' ? '/work/a' : '/work/b';
      const copies = listed.filter((s) => s.id === id);
      expect(
        copies.map((s) => s.cwd),
        id,
      ).toEqual([winner]);
      const loaded = await store.load(id);
      expect(
        loaded.events.map((e) => e.data),
        id,
      ).toEqual([{ writer: winner }]);
    }
    expect(listed).toHaveLength(count);
    await store.close();
  });

  it('a live writer in another process makes appends here CONFLICT; once it is killed, its stale lock is taken over', async () => {
    const root = tempDir();
    await seeded(root);
    const { child, lines } = startChild({ mode: 'hold', root, id: 's', seq: 2 });
    await new Promise<void>((resolve) => {
      child.stdout!.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('ready')) resolve();
      });
    });
    const store = await openJsonlStore({ root });
    const error = await store.append('s', evs(3, 1)).catch((e: unknown) => e);
    expect(isTidemarkError(error, 'CONFLICT')).toBe(true);
    expect((error as { retryable: boolean }).retryable).toBe(true);
    child.kill('SIGKILL');
    await lines;
    expect(await store.append('s', evs(3, 1))).toEqual({ nextSeq: 4 });
    expect((await store.load('s')).events).toHaveLength(4);
    await store.close();
  });

  it('EACCES for an unprivileged process is IO from has, list, load, append and create, never absence', async () => {
    const root = tempDir();
    await seeded(root);
    chmodSync(dirname(root), 0o755);
    chmodSync(root, 0o755); // the root is readable; the bucket (0700, owned by root) is not
    const results = await runChild<Outcome[]>({ mode: 'probe', root, id: 's' }, { uid: 65534, gid: 65534 });
    expect(results.map((r) => [r.op, r.ok, r.code, r.errno])).toEqual([
      ['has', false, 'IO', 'EACCES'],
      ['list', false, 'IO', 'EACCES'],
      ['load', false, 'IO', 'EACCES'],
      ['append', false, 'IO', 'EACCES'],
      ['create', false, 'IO', 'EACCES'],
    ]);
  });
});

describe('a parent the user may write and search but not read', () => {
  // Such a parent cannot be opened to fsync the root's entry; that is its owner's affair, and the
  // store must still work rather than refuse every first append.
  it.each([
    ['the root is missing (parent 0733)', 0o733, false],
    ['the root exists (parent 0711)', 0o711, true],
  ])('%s: the first append lands and reads back', async (_name, mode, rootExists) => {
    const parent = join(tempDir(), 'parent');
    const root = join(parent, 'root');
    mkdirSync(parent);
    if (rootExists) {
      mkdirSync(root, { mode: 0o700 });
      chownSync(root, 65534, 65534);
    }
    chmodSync(parent, mode);
    chmodSync(dirname(parent), 0o755);
    const results = await runChild<Outcome[]>(
      { mode: 'first-append', root, id: 's' },
      { uid: 65534, gid: 65534 },
    );
    expect(results.map((r) => [r.op, r.ok, r.ok ? r.value : r.code])).toEqual([
      ['create', true, 's'],
      ['append', true, { nextSeq: 1 }],
      ['load', true, 1],
    ]);
  });
});

describe('ENOTDIR', () => {
  it('a bucket path that is a regular file is IO from has, list, load, append and create', async () => {
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 's');
    writeFileSync(paths.dir, 'not a directory');
    const store = await openJsonlStore({ root });
    const outcomes = await Promise.all([
      store.has('s').catch((e: unknown) => e),
      store.list().catch((e: unknown) => e),
      store.load('s').catch((e: unknown) => e),
      store.append('s', evs(0, 1)).catch((e: unknown) => e),
      store.create({ id: 's' }).catch((e: unknown) => e),
      store.list({ cwd: '/elsewhere' }).then((p) => p.sessions.length),
    ]);
    for (const outcome of outcomes.slice(0, 5))
      expect(outcome).toMatchObject({ code: 'IO', errno: 'ENOTDIR' });
    expect(outcomes[5]).toBe(0); // another cwd's bucket is simply absent
    await store.close();
  });

  it('a store root that is a regular file is IO, and so is a first append under it', async () => {
    const parent = tempDir();
    const root = join(parent, 'file');
    writeFileSync(root, 'x');
    const store = await openJsonlStore({ root: join(root, 'sessions') });
    await expect(store.has('s')).rejects.toMatchObject({ code: 'IO', errno: 'ENOTDIR' });
    await expect(store.list()).rejects.toMatchObject({ code: 'IO', errno: 'ENOTDIR' });
    await expect(store.create({ id: 's' })).rejects.toMatchObject({ code: 'IO', errno: 'ENOTDIR' });
    await store.close();
  });
});
