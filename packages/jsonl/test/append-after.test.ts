// append(…, { after }): the session's writer checks the event the batch was planned after under its
// lock, on the log it appends to (storageChecksAfter). What it costs (nothing read when the writer
// wrote the last line, one line after it took the lock again), what it refuses, and that another
// writer's delete and rewrite in between is always seen.
import { type ChildProcess, spawn } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import {
  type FileHandlePort,
  type FileSystem,
  isTidemarkError,
  nodeFileSystem,
  prepareBatch,
  prepareEvent,
  type SessionEvent,
  type SessionStore,
} from '@tidemark/core';
import { afterEach, describe, expect, it } from 'vitest';
import {
  assertAfterIsLast,
  closingEventOfLastLine,
  knownLast,
  LAST_KEPT_MAX_BYTES,
  lastDecoded,
  lastWritten,
  placeOfAfter,
} from '../src/after.js';
import { bucketOf, encodeBatch, openJsonlStore, QUARANTINE_DIR, sessionPaths } from '../src/index.js';
import { ev, evs, removeTempDirs, tempDir } from './helpers.js';
import { batchLines, headerLine } from './logs.js';

const CHILD = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'child.mjs');
const running: ChildProcess[] = [];

afterEach(() => {
  for (const child of running.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  removeTempDirs();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits (real time) until `done()` holds; fails after a bound far above any expected wait. */
async function until(done: () => boolean, what: string, boundMs = 20_000): Promise<void> {
  const start = Date.now();
  while (!done()) {
    if (Date.now() - start > boundMs) throw new Error(`still waiting after ${boundMs} ms: ${what}`);
    await sleep(5);
  }
}

/** The code of a rejected call ('ok' when it resolved), with `retryable` for a CONFLICT. */
async function outcome(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (error) {
    if (!isTidemarkError(error)) throw error;
    return error.code === 'CONFLICT' && error.retryable === true ? 'CONFLICT (retryable)' : error.code;
  }
}

/** Appends, retrying while another writer holds the lock (the retryable CONFLICT); the final outcome. */
async function appendWhenFree(
  store: SessionStore,
  id: string,
  events: SessionEvent[],
  after?: SessionEvent,
): Promise<string> {
  const start = Date.now();
  for (;;) {
    const result = await outcome(store.append(id, events, { after }));
    if (result !== 'CONFLICT (retryable)' || Date.now() - start > 20_000) return result;
    await sleep(10);
  }
}

const pathsOf = (root: string, id = 's') => sessionPaths(root, bucketOf(undefined), id);

/** A store whose reads of session `s`'s log are counted (bytes). */
function countingStore(root: string, options: { lockIdleMs?: number } = {}) {
  const log = pathsOf(root).log;
  const counter = { bytes: 0 };
  const counting = (inner: FileHandlePort): FileHandlePort => ({
    ...inner,
    read: async (buffer, offset, length, position) => {
      const n = await inner.read(buffer, offset, length, position);
      counter.bytes += n;
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
      return path === log ? counting(handle) : handle;
    },
  };
  return { open: () => openJsonlStore({ root, fs, ...options }), counter };
}

async function seeded(root: string, batches: SessionEvent[][] = [evs(0, 2, true), evs(2, 2)]) {
  const store = await openJsonlStore({ root });
  await store.create({ id: 's' });
  for (const batch of batches) await store.append('s', batch);
  await store.close();
  return pathsOf(root);
}

async function loadedData(root: string): Promise<unknown[]> {
  const store = await openJsonlStore({ root });
  try {
    return (await store.load('s')).events.map((e) => e.data);
  } finally {
    await store.close();
  }
}

describe('after checked by the writer', () => {
  it('the stored event at after.seq is after: the batch is written', async () => {
    const root = tempDir();
    const store = await openJsonlStore({ root });
    await store.create({ id: 's' });
    await store.append('s', evs(0, 2, true));
    expect(await store.append('s', evs(2, 2), { after: ev(1, 'turn/end') })).toEqual({ nextSeq: 4 });
    expect(await store.append('s', evs(4, 1), { after: ev(3) })).toEqual({ nextSeq: 5 });
    expect((await store.load('s')).events.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4]);
    await store.close();
  });

  it('after differing in type, time or data: CONFLICT naming the seq, not retryable, nothing written', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    const store = await openJsonlStore({ root });
    const before = readFileSync(paths.log);
    const stored = ev(3);
    const wrong: SessionEvent[] = [
      { ...stored, type: 'assistant/message' },
      { ...stored, time: '2026-01-01T00:00:00.001Z' },
      { ...stored, data: { text: 'm3 edited' } },
      { ...stored, data: null },
    ];
    for (const after of wrong) {
      const error = await store.append('s', evs(4, 2), { after }).catch((e: unknown) => e);
      expect(isTidemarkError(error, 'CONFLICT')).toBe(true);
      expect(error).toMatchObject({ sessionId: 's', location: { seq: 3 } });
      expect((error as { retryable?: boolean }).retryable).not.toBe(true);
    }
    expect(readFileSync(paths.log).equals(before)).toBe(true);
    expect(await store.append('s', evs(4, 2), { after: stored })).toEqual({ nextSeq: 6 });
    await store.close();
  });

  it('the same event with its data keys in another order is after: written (compared by value, not by bytes)', async () => {
    const root = tempDir();
    const store = await openJsonlStore({ root });
    await store.create({ id: 's' });
    await store.append('s', [ev(0, 'note', { a: 1, b: { c: [1, 2], d: 'x' } })]);
    const reordered = ev(0, 'note', { b: { d: 'x', c: [1, 2] }, a: 1 });
    expect(await store.append('s', evs(1, 1), { after: reordered })).toEqual({ nextSeq: 2 });
    await expect(
      store.append('s', evs(2, 1), { after: ev(1, 'user/message', { text: 'm1', extra: 1 }) }),
    ).rejects.toMatchObject({ code: 'CONFLICT' });
    await store.close();
  });

  it('after past the end of the log: CONFLICT, nothing written', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    const store = await openJsonlStore({ root });
    const before = readFileSync(paths.log);
    // The log ends at seq 3: there is no event 4 to append after (the batch starts past the end too).
    await expect(store.append('s', evs(5, 1), { after: ev(4) })).rejects.toMatchObject({
      code: 'CONFLICT',
      location: { seq: 4 },
    });
    expect(readFileSync(paths.log).equals(before)).toBe(true);
    expect(await store.append('s', evs(4, 1))).toEqual({ nextSeq: 5 });
    await store.close();
  });

  it('a created session not yet written holds no event: after is CONFLICT, and it stays pending', async () => {
    const root = tempDir();
    const store = await openJsonlStore({ root });
    await store.create({ id: 's' });
    await expect(store.append('s', evs(1, 1), { after: ev(0) })).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(existsSync(pathsOf(root).log)).toBe(false);
    expect(await store.append('s', evs(0, 1))).toEqual({ nextSeq: 1 });
    await store.close();
  });

  it('after that is not the event right before the batch is INVALID; an absent session NOT_FOUND', async () => {
    const root = tempDir();
    await seeded(root);
    const store = await openJsonlStore({ root });
    await expect(store.append('s', evs(4, 1), { after: ev(2) })).rejects.toMatchObject({ code: 'INVALID' });
    await expect(store.append('nope', evs(4, 1), { after: ev(3) })).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    await store.close();
  });
});

describe('the pure parts (after.ts)', () => {
  const prepared = (event: SessionEvent) => prepareEvent(event, 'after');

  it('placeOfAfter: past the end, the last event, or an earlier one', () => {
    expect(placeOfAfter(prepared(ev(4)), 4)).toBe('past-end');
    expect(placeOfAfter(prepared(ev(9)), 4)).toBe('past-end');
    expect(placeOfAfter(prepared(ev(3)), 4)).toBe('last');
    expect(placeOfAfter(prepared(ev(2)), 4)).toBe('inside');
    expect(placeOfAfter(prepared(ev(0)), 0)).toBe('past-end');
  });

  it('knownLast: only at the length it was taken at', () => {
    const last = lastWritten(100, prepareBatch(evs(0, 2)));
    expect(knownLast(last, 100)).toBe(last);
    expect(knownLast(last, 99)).toBeUndefined();
    expect(knownLast(last, 101)).toBeUndefined();
    expect(knownLast(undefined, 100)).toBeUndefined();
    expect(last?.json).toBe(JSON.stringify(ev(1))); // the batch's last event, as serialized
  });

  it('an event larger than LAST_KEPT_MAX_BYTES is not kept (every open writer holds one)', () => {
    const fits = prepareEvent(ev(0, 'note', 'x'.repeat(LAST_KEPT_MAX_BYTES - 100)), 'e');
    const over = prepareEvent(ev(0, 'note', 'x'.repeat(LAST_KEPT_MAX_BYTES)), 'e');
    expect(lastWritten(1, [fits])).toBeDefined();
    expect(lastWritten(1, [over])).toBeUndefined();
    expect(lastDecoded(1, ev(0), LAST_KEPT_MAX_BYTES)).toBeDefined();
    expect(lastDecoded(1, ev(0), LAST_KEPT_MAX_BYTES + 1)).toBeUndefined();
  });

  it('assertAfterIsLast: written JSON or a decoded event, compared by the contract rule', () => {
    const stored = ev(3, 'note', { a: 1, b: [1, { c: null }] });
    const reordered = { ...stored, data: { b: [1, { c: null }], a: 1 } };
    for (const last of [lastWritten(10, [prepared(stored)])!, lastDecoded(10, stored, 100)!]) {
      expect(() => assertAfterIsLast('s', last, prepared(stored))).not.toThrow();
      expect(() => assertAfterIsLast('s', last, prepared(reordered))).not.toThrow();
      for (const other of [
        { ...stored, seq: 4 },
        { ...stored, type: 'other' },
        { ...stored, time: '2026-01-01T00:00:00.001Z' },
        { ...stored, data: { a: 1, b: [1, { c: 0 }] } },
      ]) {
        expect(() => assertAfterIsLast('s', last, prepared(other))).toThrow(
          expect.objectContaining({ code: 'CONFLICT', sessionId: 's' }),
        );
      }
    }
  });

  it('closingEventOfLastLine: the closing line of the right batch, whole; else more or nothing', () => {
    const log = Buffer.from(headerLine() + batchLines(evs(0, 2)) + batchLines([ev(2, 'turn/end')]), 'utf8');
    const lastLine = Buffer.from(batchLines([ev(2, 'turn/end')]), 'utf8').length;
    expect(closingEventOfLastLine(log, true, 2)).toEqual({ event: ev(2, 'turn/end'), lineBytes: lastLine });
    expect(closingEventOfLastLine(log, true, 3)).toBeUndefined(); // not the seq the writer expects
    // Only the end of the last line: it may start further back.
    expect(closingEventOfLastLine(log.subarray(log.length - 20), false, 2)).toBe('more');
    const lastLineStart = log.lastIndexOf('\n', -2) + 1;
    expect(closingEventOfLastLine(log.subarray(lastLineStart), false, 2)).toBe('more');
    expect(closingEventOfLastLine(log.subarray(lastLineStart - 1), false, 2)).toMatchObject({
      event: ev(2, 'turn/end'),
    });
    // The first line of a two-event batch is no closing line; a header is no event line.
    const unclosed = Buffer.from(headerLine() + batchLines(evs(0, 2)).split('\n')[0] + '\n', 'utf8');
    expect(closingEventOfLastLine(unclosed, true, 0)).toBeUndefined();
    expect(closingEventOfLastLine(Buffer.from(headerLine(), 'utf8'), true, 0)).toBeUndefined();
    // No newline at the end, a flipped byte: nothing.
    expect(closingEventOfLastLine(log.subarray(0, log.length - 1), true, 2)).toBeUndefined();
    const flipped = Buffer.from(log);
    flipped[flipped.length - 30]! ^= 1;
    expect(closingEventOfLastLine(flipped, true, 2)).toBeUndefined();
  });
});

describe('what the check reads', () => {
  it('nothing from the log when this writer wrote the last line', async () => {
    const root = tempDir();
    const { open, counter } = countingStore(root, { lockIdleMs: Number.POSITIVE_INFINITY });
    const store = await open();
    await store.create({ id: 's' });
    await store.append('s', evs(0, 2));
    counter.bytes = 0;
    for (let seq = 2; seq < 20; seq += 2) {
      expect(await store.append('s', evs(seq, 2), { after: ev(seq - 1) })).toEqual({ nextSeq: seq + 2 });
    }
    await expect(store.append('s', evs(20, 1), { after: ev(19, 'other') })).rejects.toMatchObject({
      code: 'CONFLICT',
    });
    expect(counter.bytes).toBe(0);
    await store.close();
  });

  it('a writer that opened the log by scanning it reads nothing more for after', async () => {
    const root = tempDir();
    await seeded(root);
    const { open, counter } = countingStore(root);
    const plain = await open();
    await plain.append('s', evs(4, 1));
    const scanOnly = counter.bytes;
    await plain.close();
    counter.bytes = 0;
    const checked = await open();
    expect(await checked.append('s', evs(5, 1), { after: ev(4) })).toEqual({ nextSeq: 6 });
    // One more event in the log than the first scan saw: one line's bytes more, no second read.
    const line = statSync(pathsOf(root).log).size - readFileSync(pathsOf(root).log).lastIndexOf('\n', -2) - 1;
    expect(counter.bytes).toBeLessThanOrEqual(scanOnly + line);
    await checked.close();
  });

  it('after taking the lock again (idle release): the last line only, and nothing for the next check', async () => {
    const root = tempDir();
    const paths = pathsOf(root);
    // Idle long enough that the two checks below run before the next release.
    const { open, counter } = countingStore(root, { lockIdleMs: 1000 });
    const store = await open();
    await store.create({ id: 's' });
    // Lines of ~30 KB: read back in doubling steps from 4 KiB, and small enough to be kept.
    const big = { text: 'x'.repeat(30_000) };
    for (let seq = 0; seq < 20; seq++) await store.append('s', [ev(seq, 'turn/end', big)]);
    await until(() => !existsSync(paths.lock), 'the idle release');
    const before = readFileSync(paths.log);
    const lastLine = before.length - before.lastIndexOf('\n', -2) - 1;
    counter.bytes = 0;
    // A wrong after: CONFLICT from the line read under the lock, nothing written.
    await expect(
      store.append('s', evs(20, 1), { after: ev(19, 'turn/end', { text: 'y' }) }),
    ).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(readFileSync(paths.log).equals(before)).toBe(true);
    // The parked tail (128 bytes) and the last line, read backwards in steps doubling from 4 KiB
    // (so under twice the line and a step): far less than the log.
    expect(counter.bytes).toBeLessThanOrEqual(128 + 2 * lastLine + 4096);
    expect(counter.bytes).toBeLessThan(before.length / 5);
    expect(counter.bytes).toBeGreaterThanOrEqual(lastLine);
    counter.bytes = 0;
    expect(await store.append('s', evs(20, 1), { after: ev(19, 'turn/end', big) })).toEqual({ nextSeq: 21 });
    expect(counter.bytes).toBe(0); // the line read for the refusal answered this check
    await store.close();
  });
});

describe('a last event too large to keep', () => {
  it('is read back from the log for the next check (one line), and judged as exactly', async () => {
    const root = tempDir();
    const paths = pathsOf(root);
    const { open, counter } = countingStore(root, { lockIdleMs: Number.POSITIVE_INFINITY });
    const store = await open();
    await store.create({ id: 's' });
    const huge = ev(0, 'turn/end', { text: 'h'.repeat(200_000) });
    await store.append('s', [huge]);
    counter.bytes = 0;
    await expect(
      store.append('s', evs(1, 1), { after: { ...huge, data: { text: 'h'.repeat(199_999) } } }),
    ).rejects.toMatchObject({ code: 'CONFLICT' });
    const size = statSync(paths.log).size;
    expect(counter.bytes).toBeGreaterThan(200_000);
    expect(counter.bytes).toBeLessThanOrEqual(size);
    expect(await store.append('s', evs(1, 1), { after: huge })).toEqual({ nextSeq: 2 });
    // The small event this writer wrote next is kept: nothing read for it.
    counter.bytes = 0;
    expect(await store.append('s', evs(2, 1), { after: ev(1) })).toEqual({ nextSeq: 3 });
    expect(counter.bytes).toBe(0);
    await store.close();
  });
});

describe('another writer changed the session meanwhile', () => {
  /** Deletes `s` through `store` and writes it again with `data` of the same length, as two batches. */
  async function rewrite(store: SessionStore, tag: string): Promise<void> {
    await store.delete('s');
    await store.create({ id: 's' });
    await store.append('s', [
      ev(0, 'user/message', { text: `${tag}0` }),
      ev(1, 'turn/end', { text: `${tag}1` }),
    ]);
    await store.append('s', [
      ev(2, 'user/message', { text: `${tag}2` }),
      ev(3, 'user/message', { text: `${tag}3` }),
    ]);
  }

  const original = (seq: number) => ev(seq, seq === 1 ? 'turn/end' : 'user/message', { text: `a${seq}` });

  async function writeOriginal(store: SessionStore): Promise<void> {
    await store.create({ id: 's' });
    await store.append('s', [original(0), original(1)]);
    await store.append('s', [original(2), original(3)]);
  }

  it('another instance appended: a batch planned on the old end is CONFLICT, one planned after its event lands', async () => {
    const root = tempDir();
    const a = await openJsonlStore({ root, lockIdleMs: Number.POSITIVE_INFINITY });
    const b = await openJsonlStore({ root });
    await writeOriginal(a);
    // b asks for the lock: a, idle, hands it over (its writer is parked).
    const fromB = ev(4, 'note', { writer: 'b' });
    expect(await b.append('s', [fromB])).toEqual({ nextSeq: 5 });
    await expect(a.append('s', evs(4, 1), { after: original(3) })).rejects.toMatchObject({
      code: 'CONFLICT',
    });
    await expect(a.append('s', evs(5, 1), { after: ev(4) })).rejects.toMatchObject({
      code: 'CONFLICT',
      location: { seq: 4 },
    });
    expect(await a.append('s', evs(5, 1), { after: fromB })).toEqual({ nextSeq: 6 });
    await Promise.all([a.close(), b.close()]);
  });

  it.each([
    ['holding its writer open (handed over)', Number.POSITIVE_INFINITY],
    ['after its writer went idle', 20],
  ])(
    'another instance deleted and rewrote the session to the same length, this one %s: the old after is CONFLICT, the rewrite intact',
    async (_, lockIdleMs) => {
      const root = tempDir();
      const paths = pathsOf(root);
      const a = await openJsonlStore({ root, lockIdleMs });
      await writeOriginal(a);
      const size = statSync(paths.log).size;
      if (lockIdleMs !== Number.POSITIVE_INFINITY)
        await until(() => !existsSync(paths.lock), 'the idle release');
      const b = await openJsonlStore({ root, lockIdleMs: 0 });
      await rewrite(b, 'b');
      const rewritten = readFileSync(paths.log);
      expect(rewritten.length).toBe(size);
      // Without after a's batch would land at seq 4 of b's log, planned on a log that is gone.
      expect(await appendWhenFree(a, 's', evs(4, 1), original(3))).toBe('CONFLICT');
      expect(readFileSync(paths.log).equals(rewritten)).toBe(true);
      expect(await loadedData(root)).toEqual([
        { text: 'b0' },
        { text: 'b1' },
        { text: 'b2' },
        { text: 'b3' },
      ]);
      // Planned on the rewritten log, it lands.
      expect(await appendWhenFree(a, 's', evs(4, 1), ev(3, 'user/message', { text: 'b3' }))).toBe('ok');
      await Promise.all([a.close(), b.close()]);
    },
  );

  it('another process deleted and rewrote the session to the same length: the old after is CONFLICT, the rewrite intact', async () => {
    const root = tempDir();
    const paths = pathsOf(root);
    const a = await openJsonlStore({ root, lockIdleMs: 20 });
    await writeOriginal(a);
    const size = statSync(paths.log).size;
    await until(() => !existsSync(paths.lock), 'the idle release');
    const child = new Served(root, { lockIdleMs: 20 });
    await child.ready;
    expect((await child.send({ op: 'delete', id: 's' })).ok).toBe(true);
    expect((await child.send({ op: 'create', id: 's' })).ok).toBe(true);
    const tagged = (seq: number) => ev(seq, seq === 1 ? 'turn/end' : 'user/message', { text: `c${seq}` });
    expect((await child.send({ op: 'append', id: 's', events: [tagged(0), tagged(1)] })).ok).toBe(true);
    expect((await child.send({ op: 'append', id: 's', events: [tagged(2), tagged(3)] })).ok).toBe(true);
    const rewritten = readFileSync(paths.log);
    expect(rewritten.length).toBe(size);
    expect(await appendWhenFree(a, 's', evs(4, 1), original(3))).toBe('CONFLICT');
    expect(readFileSync(paths.log).equals(rewritten)).toBe(true);
    // The child's own append with after, planned on its log, lands once this process lets go.
    await until(() => !existsSync(paths.lock), 'release by this process');
    const reply = await child.send({
      op: 'append',
      id: 's',
      events: evs(4, 1),
      options: { after: tagged(3) },
    });
    expect(reply).toMatchObject({ ok: true, value: { nextSeq: 5 } });
    const stale = await child.send({
      op: 'append',
      id: 's',
      events: evs(5, 1),
      options: { after: tagged(4) },
    });
    expect(stale).toMatchObject({ ok: false, code: 'CONFLICT' });
    await child.send({ op: 'exit' }).catch(() => undefined);
    await a.close();
    expect(await loadedData(root)).toEqual([
      { text: 'c0' },
      { text: 'c1' },
      { text: 'c2' },
      { text: 'c3' },
      { text: 'm4' },
    ]);
  });

  it('a tail cut by load: after is checked against the event that ends the log now', async () => {
    const root = tempDir();
    const store = await openJsonlStore({ root, lockIdleMs: Number.POSITIVE_INFINITY });
    await store.create({ id: 's' });
    await store.append('s', evs(0, 2, true));
    await store.append('s', evs(2, 2)); // an interrupted turn
    expect((await store.load('s', { tail: 'cut' })).recovered?.cutEvents).toBe(2);
    // Planned on the end before the cut: seq 3 is gone.
    await expect(store.append('s', evs(4, 1), { after: ev(3) })).rejects.toMatchObject({ code: 'CONFLICT' });
    // The writer no longer knows its last event: read from the log's last line, then kept.
    await expect(store.append('s', evs(2, 1), { after: ev(1) })).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await store.append('s', evs(2, 1), { after: ev(1, 'turn/end') })).toEqual({ nextSeq: 3 });
    await store.close();
  });
});

describe('a last line the quick read cannot vouch for', () => {
  it('longer than its bound (8 MiB): the whole-log reader answers, and the check is as exact', async () => {
    const root = tempDir();
    const store = await openJsonlStore({ root, lockIdleMs: Number.POSITIVE_INFINITY });
    await store.create({ id: 's' });
    const huge = ev(0, 'turn/end', { text: 'h'.repeat(9 * 1024 * 1024) });
    await store.append('s', [huge]);
    await store.append('s', evs(1, 1)); // an interrupted turn, cut below: the writer forgets its last event
    expect((await store.load('s', { tail: 'cut' })).recovered?.cutEvents).toBe(1);
    await expect(
      store.append('s', evs(1, 1), { after: { ...huge, data: { text: 'h'.repeat(9 * 1024 * 1024 - 1) } } }),
    ).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await store.append('s', evs(1, 1), { after: huge })).toEqual({ nextSeq: 2 });
    await store.close();
  });
});

describe('idempotent retries with after', () => {
  it('a retry of the stored batch with the right after succeeds and writes nothing', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    const store = await openJsonlStore({ root });
    const before = readFileSync(paths.log);
    expect(await store.append('s', evs(2, 2), { after: ev(1, 'turn/end') })).toEqual({ nextSeq: 4 });
    expect(await store.append('s', evs(3, 1), { after: ev(2) })).toEqual({ nextSeq: 4 });
    expect(readFileSync(paths.log).equals(before)).toBe(true);
    await store.close();
  });

  it('a retry with a wrong after is CONFLICT even though the batch itself matches', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    const store = await openJsonlStore({ root });
    const before = readFileSync(paths.log);
    await expect(store.append('s', evs(2, 2), { after: ev(1) })).rejects.toMatchObject({
      code: 'CONFLICT',
      location: { seq: 1 },
    });
    await expect(store.append('s', evs(3, 1), { after: ev(2, 'note') })).rejects.toMatchObject({
      code: 'CONFLICT',
    });
    // A right after with a batch that differs from the stored one: CONFLICT by the retry rule.
    await expect(store.append('s', [ev(2, 'note')], { after: ev(1, 'turn/end') })).rejects.toMatchObject({
      code: 'CONFLICT',
    });
    expect(readFileSync(paths.log).equals(before)).toBe(true);
    await store.close();
  });
});

describe('after on a log with a torn tail', () => {
  it('a torn last line is no event: after the last complete event writes, after the torn one is CONFLICT', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    const torn = '{"seq":4,"type":"user/message","ti';
    appendFileSync(paths.log, torn);
    const store = await openJsonlStore({ root });
    await expect(store.append('s', evs(5, 1), { after: ev(4) })).rejects.toMatchObject({
      code: 'CONFLICT',
      location: { seq: 4 },
    });
    expect(await store.append('s', evs(4, 1), { after: ev(3) })).toEqual({ nextSeq: 5 });
    expect((await store.load('s')).events.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4]);
    const quarantine = join(root, QUARANTINE_DIR);
    expect(existsSync(quarantine)).toBe(true);
    await store.close();
  });

  it('a batch cut short (its closing line missing): its complete lines are no events', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    // The first line of batch 4..5, whole and valid, without the line that closes the batch.
    const lines = encodeBatch(
      evs(4, 2).map((e) => ({ json: JSON.stringify(e) })),
      5,
      new Date().toISOString(),
    ).split('\n');
    appendFileSync(paths.log, `${lines[0]}\n`);
    const store = await openJsonlStore({ root });
    await expect(store.append('s', evs(5, 1), { after: ev(4) })).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await store.append('s', evs(4, 1), { after: ev(3) })).toEqual({ nextSeq: 5 });
    expect((await store.load('s')).events.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4]);
    await store.close();
  });
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

  constructor(root: string, options: object = {}) {
    this.child = spawn(process.execPath, [CHILD, JSON.stringify({ mode: 'serve', root, options })], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    running.push(this.child);
    let started!: () => void;
    this.ready = new Promise((resolve) => {
      started = resolve;
    });
    let first = true;
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      if (first) {
        first = false;
        started();
      } else this.replies.shift()?.(line);
    });
  }

  /** Sends one request; retries while the session is locked by another writer (a retryable CONFLICT). */
  async send(request: object): Promise<Reply> {
    const start = Date.now();
    for (;;) {
      const reply = new Promise<string>((resolve) => this.replies.push(resolve));
      this.child.stdin!.write(`${JSON.stringify(request)}\n`);
      if ((request as { op: string }).op === 'exit') return { op: 'exit', ok: true };
      const parsed = JSON.parse(await reply) as Reply;
      if (parsed.ok || parsed.retryable !== true || Date.now() - start > 20_000) return parsed;
      await sleep(10);
    }
  }
}
