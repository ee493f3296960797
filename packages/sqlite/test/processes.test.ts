// Several real processes on one database file: racing writers, a writer killed with SIGKILL at a
// random instant, and a lock held past the busy timeout.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SessionEvent } from '@tidemark/core';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../src/index.js';
import { assertInvariants, events, expectNoDamage, rejectsWith, removeTempDirs, tempDir } from './helpers.js';

const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url));
const packageDir = fileURLToPath(new URL('..', import.meta.url));
const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  removeTempDirs();
});

interface Child {
  process: ChildProcess;
  lines: string[];
  /** Resolves with the first line matching `pattern`. */
  waitFor(pattern: RegExp): Promise<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
}

function start(script: string, args: string[]): Child {
  const child = spawn(process.execPath, [join(fixtures, script), ...args], {
    cwd: packageDir,
    stdio: 'pipe',
  });
  children.push(child);
  const lines: string[] = [];
  const waiters: { pattern: RegExp; resolve: (line: string) => void }[] = [];
  let buffer = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    buffer += chunk;
    let newline = buffer.indexOf('\n');
    while (newline >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      lines.push(line);
      for (const waiter of waiters.splice(0)) {
        if (waiter.pattern.test(line)) waiter.resolve(line);
        else waiters.push(waiter);
      }
      newline = buffer.indexOf('\n');
    }
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>(
    (resolve) => {
      child.on('exit', (code, signal) => resolve({ code, signal, stderr }));
    },
  );
  return {
    process: child,
    lines,
    exited,
    waitFor(pattern) {
      const seen = lines.find((line) => pattern.test(line));
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        waiters.push({ pattern, resolve });
        exited.then((e) =>
          reject(new Error(`child exited (${e.code ?? e.signal}) before ${pattern}: ${e.stderr}`)),
        );
      });
    },
  };
}

describe('processes', () => {
  it('two processes appending to one session: every seq won exactly once, no duplicates', async () => {
    const path = join(tempDir(), 'race.db');
    // Migrate once up front so the children race on appends, not on the schema.
    await (await openSqliteStore({ path })).close();
    const total = 200;
    const writers = ['a', 'b'].map((name) =>
      start('writer.mjs', [path, 'race', 'shared', name, String(total)]),
    );
    await Promise.all(writers.map((w) => w.waitFor(/^ready$/)));
    for (const writer of writers) writer.process.stdin!.write('go\n');
    const results = await Promise.all(writers.map((w) => w.exited));
    for (const result of results) expect(result, result.stderr).toMatchObject({ code: 0 });
    const won = new Map<number, string>();
    writers.forEach((writer, i) => {
      for (const line of writer.lines.filter((l) => l.startsWith('won '))) {
        const [, from, to] = line.split(' ').map(Number) as [number, number, number];
        for (let seq = from; seq <= to; seq++) {
          expect(won.has(seq), `seq ${seq} acknowledged twice`).toBe(false);
          won.set(seq, ['a', 'b'][i]!);
        }
      }
    });
    expect([...won.keys()].sort((x, y) => x - y)).toEqual(Array.from({ length: total }, (_, i) => i));
    const store = await openSqliteStore({ path });
    const loaded = await store.load('shared');
    expect(loaded.events.map((e) => e.seq)).toEqual(Array.from({ length: total }, (_, i) => i));
    for (const event of loaded.events)
      expect((event.data as { writer: string }).writer).toBe(won.get(event.seq));
    // Losers were told so: a CONFLICT means the other process had stored that seq first. (How the
    // seqs split between the processes is up to the scheduler, so it is not asserted.)
    const conflicts = writers.flatMap((w) => w.lines.filter((l) => l.startsWith('lost ')));
    expect(conflicts.length).toBeGreaterThan(0);
    await store.close();
    await expectNoDamage(path);
  });

  it('a writer killed with SIGKILL mid-stream loses no acknowledged batch and leaves no partial one', async () => {
    const path = join(tempDir(), 'kill.db');
    const batch = 4;
    let acknowledged = 0;
    for (let round = 0; round < 3; round++) {
      const writer = start('writer.mjs', [path, 'forever', 'victim', String(batch)]);
      await writer.waitFor(/^ready$/);
      await writer.waitFor(/^ack /);
      await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 150));
      writer.process.kill('SIGKILL');
      const exit = await writer.exited;
      expect(exit.signal).toBe('SIGKILL');
      const acks = writer.lines
        .filter((line) => line.startsWith('ack '))
        .map((line) => Number(line.slice(4)));
      expect(acks.length).toBeGreaterThan(0);
      acknowledged = Math.max(acknowledged, ...acks);

      const store = await openSqliteStore({ path });
      const expected: SessionEvent[] = Array.from({ length: acknowledged }, (_, seq) => ({
        seq,
        type: (seq + 1) % batch === 0 ? 'turn/end' : 'tool/call',
        time: '2026-01-01T00:00:00.000Z',
        data: { seq, pad: 'x'.repeat(200) },
      }));
      const loaded = await store.load('victim');
      expect(loaded.events.length).toBeGreaterThanOrEqual(acknowledged);
      // Batches are all-or-nothing: a batch committed just before the kill may be there whole.
      expect(loaded.events.length % batch).toBe(0);
      expect(loaded.events.slice(0, acknowledged)).toEqual(expected);
      expect(loaded.interrupted).toBe(false);
      acknowledged = loaded.events.length;
      await store.close();
    }
    await expectNoDamage(path);
    const store = await openSqliteStore({ path });
    const loaded = await assertInvariants(store, 'victim', (await store.load('victim')).events);
    expect(loaded.events.length).toBe(acknowledged);
    await store.close();
  });

  it('a write lock held by another process past busy_timeout is a retryable IO error, then clears', async () => {
    const path = join(tempDir(), 'busy.db');
    const store = await openSqliteStore({ path, busyTimeoutMs: 100 });
    await store.create({ id: 's' });
    await store.append('s', events(0, 2, 2));
    const holder = start('lock-holder.cjs', [path]);
    await holder.waitFor(/^locked$/);

    const error = await rejectsWith(store.append('s', events(2, 1)), 'IO');
    expect(error.errno).toBe('SQLITE_BUSY');
    expect(error.retryable).toBe(true);
    expect(error.sessionId).toBe('s');
    await rejectsWith(store.update('s', { title: 'x' }), 'IO');
    // Readers are not blocked in WAL mode, and nothing reads as absent.
    expect(await store.has('s')).toBe(true);
    expect((await store.load('s')).events).toEqual(events(0, 2, 2));
    expect((await store.list()).sessions.map((s) => s.id)).toEqual(['s']);

    holder.process.stdin!.write('release\n');
    await holder.waitFor(/^released$/);
    expect(await store.append('s', events(2, 1))).toEqual({ nextSeq: 3 });
    await assertInvariants(store, 's', events(0, 3, 2));
    await store.close();
  });
});
