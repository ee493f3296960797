// Two real processes over one JSONL root: a child process keeps its store open and idle while this
// process writes the same session, and the other way round. How long the wait is goes in the
// benchmark (bench/idle-handover.mjs); here only a generous bound.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { isTidemarkError, type SessionEvent, type SessionStore } from '@tidemark/core';
import { afterEach, describe, expect, it } from 'vitest';
import { bucketOf, openJsonlStore, sessionPaths } from '../src/index.js';
import { ev, evs, removeTempDirs, tempDir } from './helpers.js';

const CHILD = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'child.mjs');

/** Far above any wait the grace should cause, for a noisy machine. */
const BOUND_MS = 20_000;

const running: ChildProcess[] = [];

afterEach(() => {
  for (const child of running.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  removeTempDirs();
});

interface Reply {
  op: string;
  ok: boolean;
  value?: unknown;
  code?: string;
  retryable?: boolean;
}

/** A child process serving one open store (child.mjs, mode `serve`). */
class Served {
  readonly child: ChildProcess;
  private readonly replies: ((line: string) => void)[] = [];
  readonly ready: Promise<void>;
  readonly exited: Promise<void>;

  constructor(root: string, options: object = {}) {
    this.child = spawn(process.execPath, [CHILD, JSON.stringify({ mode: 'serve', root, options })], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    running.push(this.child);
    let started!: () => void;
    this.ready = new Promise((resolve) => {
      started = resolve;
    });
    this.exited = new Promise((resolve) => this.child.on('exit', () => resolve()));
    let first = true;
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      if (first) {
        first = false;
        started();
      } else this.replies.shift()?.(line);
    });
  }

  async send(request: object): Promise<Reply> {
    const reply = new Promise<string>((resolve) => this.replies.push(resolve));
    this.child.stdin!.write(`${JSON.stringify(request)}\n`);
    return JSON.parse(await reply) as Reply;
  }

  /** Appends, retrying while the session is locked by another writer (a retryable CONFLICT). */
  async appendWhenFree(id: string, events: SessionEvent[]): Promise<Reply> {
    const start = Date.now();
    for (;;) {
      const reply = await this.send({ op: 'append', id, events });
      if (reply.ok || reply.retryable !== true || Date.now() - start > BOUND_MS) return reply;
      await sleep(10);
    }
  }

  async kill(): Promise<void> {
    this.child.kill('SIGKILL');
    await this.exited;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Appends from this process, retrying while another writer holds the lock; every refusal must be
 * the retryable CONFLICT. Resolves how many attempts were refused.
 */
async function appendWhenFree(store: SessionStore, id: string, events: SessionEvent[]): Promise<number> {
  const start = Date.now();
  for (let refused = 0; ; refused++) {
    try {
      await store.append(id, events);
      return refused;
    } catch (error) {
      expect(isTidemarkError(error, 'CONFLICT') && error.retryable).toBe(true);
      if (Date.now() - start > BOUND_MS) throw error;
      await sleep(10);
    }
  }
}

describe('a writer idle in another process', () => {
  it('releases the session: this process writes it without the other closing, and the other then sees it', async () => {
    const root = tempDir();
    const a = new Served(root);
    await a.ready;
    expect(await a.send({ op: 'create', id: 's' })).toMatchObject({ ok: true });
    expect(await a.send({ op: 'append', id: 's', events: evs(0, 2, true) })).toMatchObject({ ok: true });
    const acked = Date.now();
    const b = await openJsonlStore({ root });
    // Right after A's append its grace (250 ms) has not passed: A still holds the lock.
    const first = await b.append('s', [ev(2, 'note', { writer: 'b' })]).then(
      () => 'ok',
      (error: unknown) => (isTidemarkError(error) ? error.code : error),
    );
    if (Date.now() - acked < 150) expect(first).toBe('CONFLICT');
    if (first !== 'ok') await appendWhenFree(b, 's', [ev(2, 'note', { writer: 'b' })]);
    expect(a.child.exitCode).toBe(null); // A never closed its store: it is still serving
    // A appends again from what it knew (seq 2 next): refused, then at the right seq it lands.
    const stale = await a.appendWhenFree('s', [ev(2, 'note', { writer: 'a' })]);
    expect(stale).toMatchObject({ ok: false, code: 'CONFLICT', retryable: false });
    expect(await a.appendWhenFree('s', [ev(3, 'note', { writer: 'a' })])).toMatchObject({
      ok: true,
      value: { nextSeq: 4 },
    });
    expect((await a.send({ op: 'load', id: 's' })).value).toEqual([
      [0, { text: 'm0' }],
      [1, { text: 'm1' }],
      [2, { writer: 'b' }],
      [3, { writer: 'a' }],
    ]);
    await b.close();
    await a.kill();
  }, 60_000);

  it('alternating ownership over several rounds: every append lands once, in order', async () => {
    const root = tempDir();
    const a = new Served(root);
    await a.ready;
    await a.send({ op: 'create', id: 's' });
    expect(await a.send({ op: 'append', id: 's', events: evs(0, 1, true) })).toMatchObject({ ok: true });
    const b = await openJsonlStore({ root });
    const rounds = 8;
    for (let seq = 1; seq <= rounds; seq++) {
      const event = ev(seq, 'turn/end', { writer: seq % 2 === 1 ? 'b' : 'a' });
      if (seq % 2 === 1) await appendWhenFree(b, 's', [event]);
      else expect(await a.appendWhenFree('s', [event])).toMatchObject({ ok: true });
    }
    const expected = Array.from({ length: rounds }, (_, i) => [i + 1, { writer: i % 2 === 0 ? 'b' : 'a' }]);
    expect((await a.send({ op: 'load', id: 's' })).value).toEqual([[0, { text: 'm0' }], ...expected]);
    expect((await b.load('s')).events.map((e) => [e.seq, e.data])).toEqual([
      [0, { text: 'm0' }],
      ...expected,
    ]);
    await b.close();
    await a.kill();
    const check = await openJsonlStore({ root });
    expect((await check.load('s')).recovered).toBeUndefined();
    await check.close();
  }, 120_000);

  it.each([
    ['still holding its lock (a long grace)', { lockIdleMs: 600_000 }, false],
    ['still holding its lock, relaxed durability', { lockIdleMs: 600_000, durability: 'relaxed' }, false],
    ['after it released its lock', {}, true],
  ])(
    'killed (SIGKILL) while idle %s: this process takes the session over, nothing acknowledged is lost',
    async (_name, options, waitForRelease) => {
      const root = tempDir();
      const paths = sessionPaths(root, bucketOf(undefined), 's');
      const a = new Served(root, options);
      await a.ready;
      await a.send({ op: 'create', id: 's' });
      for (let seq = 0; seq < 6; seq += 2)
        expect(await a.send({ op: 'append', id: 's', events: evs(seq, 2, seq === 2) })).toMatchObject({
          ok: true,
        });
      if (waitForRelease) {
        const start = Date.now();
        while (existsSync(paths.lock) && Date.now() - start < BOUND_MS) await sleep(10);
      }
      expect(existsSync(paths.lock)).toBe(!waitForRelease);
      await a.kill();
      const b = await openJsonlStore({ root });
      expect(await b.append('s', evs(6, 1, true))).toEqual({ nextSeq: 7 });
      expect((await b.load('s')).events.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4, 5, 6]);
      await b.close();
      expect(readdirSync(join(root, '.locks'))).toEqual([]); // no lock, guard or temp file left
    },
    60_000,
  );
});
