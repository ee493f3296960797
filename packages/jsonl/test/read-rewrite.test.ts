// read() of a log that another store instance rewrites (repairs a torn tail, cuts an interrupted
// tail, finishes a write) or deletes while the stream is paused between two events. Every case is
// deterministic: the reader is an async iterator advanced by hand, and the other instance does its
// work between two next() calls. A log rewritten under the reader is not damage: the stream ends
// (or goes on with the rewritten bytes) and never reports CORRUPT; damage that stays is CORRUPT.
import { appendFileSync, closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import {
  type FileHandlePort,
  type FileSystem,
  isTidemarkError,
  nodeFileSystem,
  type SessionEvent,
} from '@tidemark/core';
import { afterEach, describe, expect, it } from 'vitest';
import { NO_CWD_BUCKET, openJsonlStore, sessionPaths } from '../src/index.js';
import { faultyFs } from './faulty-fs.js';
import { ev, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

const ID = 's1';
const logOf = (root: string) => sessionPaths(root, NO_CWD_BUCKET, ID).log;
const now = () => new Date().toISOString();

/** Advances a read() by hand; `rest()` drains it, answering the events or the error it ended with. */
function reader(iterable: AsyncIterable<SessionEvent>) {
  const iterator = iterable[Symbol.asyncIterator]();
  return {
    async next(): Promise<SessionEvent> {
      const step = await iterator.next();
      if (step.done === true) throw new Error('the stream ended early');
      return step.value;
    },
    async rest(): Promise<{ seqs: number[]; error?: unknown }> {
      const seqs: number[] = [];
      try {
        for (let step = await iterator.next(); step.done !== true; step = await iterator.next()) {
          seqs.push(step.value.seq);
        }
        return { seqs };
      } catch (error) {
        return { seqs, error };
      }
    },
  };
}

/** The error a read ended with, described for an assertion message. */
function describeError(error: unknown): string | undefined {
  if (error === undefined) return undefined;
  return isTidemarkError(error) ? `${error.code}: ${error.message}` : String(error);
}

/** A log of `batches` one-event batches of about `bytes` each, closed so that its sidecar counts them all. */
async function bigLog(root: string, batches: number, bytes: number): Promise<void> {
  const store = await openJsonlStore({ root, durability: 'relaxed' }); // no boundary: close() syncs
  await store.create({ id: ID });
  for (let seq = 0; seq < batches; seq++) {
    await store.append(ID, [ev(seq, 'user/message', { text: `${seq}:`.padEnd(bytes, 'x') })]);
  }
  await store.close();
}

describe('read() while another instance repairs the torn tail and appends', () => {
  // Reviewer's read-vs-repair.mjs: the reader has scanned the torn fragment when the writer cuts it
  // off, appends, and closes (its sidecar then counts the new batch, past where the tear began).
  for (const [name, tornLength] of [
    ['a fragment longer than the new batch', 400],
    ['a fragment shorter than the new batch', 40],
  ] as const) {
    it(`ends normally with every committed event, not CORRUPT (${name})`, async () => {
      const root = tempDir();
      const a = await openJsonlStore({ root });
      await a.create({ id: ID });
      await a.append(ID, [{ seq: 0, type: 'user/message', time: now(), data: { text: 'hi' } }]);
      await a.append(ID, [{ seq: 1, type: 'turn/end', time: now(), data: null }]);
      await a.close();
      // A crash in the middle of the next append left half a line.
      appendFileSync(
        logOf(root),
        `{"seq":2,"type":"tool/result","time":"${now()}","data":"${'y'.repeat(tornLength)}`,
      );

      const store = await openJsonlStore({ root });
      const writer = await openJsonlStore({ root });
      const read = reader(store.read(ID));
      expect((await read.next()).seq).toBe(0);
      await writer.append(ID, [{ seq: 2, type: 'turn/end', time: now(), data: { n: 2 } }]);
      await writer.close();
      const { seqs, error } = await read.rest();
      expect(describeError(error)).toBeUndefined();
      expect(seqs).toEqual([1, 2]);

      // The log is healthy, as a fresh load and read say.
      expect((await store.load(ID)).events.map((e) => e.seq)).toEqual([0, 1, 2]);
      await store.close();
    });
  }
});

describe("read() while another instance cuts the interrupted tail (load tail: 'cut') and appends", () => {
  // Reviewer's read-vs-cut.mjs: the cut truncates below what the reader has read, and the appends
  // put other bytes where the reader's next read lands.
  it('ends where the log was rewritten, without CORRUPT', async () => {
    const root = tempDir();
    const a = await openJsonlStore({ root });
    await a.create({ id: ID });
    await a.append(ID, [{ seq: 0, type: 'user/message', time: now(), data: { text: 'hi' } }]);
    await a.append(ID, [{ seq: 1, type: 'turn/end', time: now(), data: null }]);
    await a.append(ID, [{ seq: 2, type: 'tool/call', time: now(), data: { cmd: 'ls' } }]); // interrupted turn
    await a.close();

    const store = await openJsonlStore({ root });
    const writer = await openJsonlStore({ root });
    const read = reader(store.read(ID));
    expect((await read.next()).seq).toBe(0);
    await writer.load(ID, { tail: 'cut' });
    await writer.append(ID, [
      { seq: 2, type: 'user/message', time: now(), data: { text: 'a longer prompt '.repeat(20) } },
    ]);
    await writer.append(ID, [{ seq: 3, type: 'turn/end', time: now(), data: null }]);
    await writer.close();
    const { seqs, error } = await read.rest();
    expect(describeError(error)).toBeUndefined();
    // What the reader had already taken in (the cut tool/call included), then the end: the bytes
    // after it are another generation of the log.
    expect(seqs).toEqual([1, 2]);

    const types = (await store.load(ID)).events.map((e) => `${e.seq}:${e.type}`);
    expect(types).toEqual(['0:user/message', '1:turn/end', '2:user/message', '3:turn/end']);
    await store.close();
  });
});

/**
 * A file system whose log writes stop half way until `release()`: the first write to the log
 * after `arm()` writes half its bytes and returns; the next write waits for `release()`.
 */
function halfWritingFs(): {
  fs: FileSystem;
  arm: () => void;
  halfWritten: Promise<void>;
  release: () => void;
} {
  let armed = false;
  let gate: Promise<void> | undefined;
  let open!: () => void;
  let signal!: () => void;
  const halfWritten = new Promise<void>((resolve) => {
    signal = resolve;
  });
  const wrap = (inner: FileHandlePort, path: string): FileHandlePort => ({
    read: (...args) => inner.read(...args),
    async write(buffer, offset, length, position) {
      if (path.endsWith('.jsonl') && armed) {
        armed = false;
        gate = new Promise<void>((resolve) => {
          open = resolve;
        });
        const n = await inner.write(buffer, offset, Math.ceil(length / 2), position);
        signal();
        return n;
      }
      if (path.endsWith('.jsonl') && gate !== undefined) {
        const waiting = gate;
        gate = undefined;
        await waiting;
      }
      return inner.write(buffer, offset, length, position);
    },
    datasync: () => inner.datasync(),
    sync: () => inner.sync(),
    truncate: (length) => inner.truncate(length),
    size: () => inner.size(),
    close: () => inner.close(),
  });
  return {
    fs: {
      ...nodeFileSystem,
      open: async (path, flags, mode) => wrap(await nodeFileSystem.open(path, flags, mode), path),
    },
    arm: () => {
      armed = true;
    },
    halfWritten,
    release: () => open(),
  };
}

/** A file system that runs `hook` (once) before the first read of a summary sidecar. */
function sidecarHookFs(hook: () => Promise<void>): FileSystem {
  let pending: (() => Promise<void>) | undefined = hook;
  return {
    ...nodeFileSystem,
    async readFile(path) {
      if (path.endsWith('.summary.json') && pending !== undefined) {
        const run = pending;
        pending = undefined;
        await run();
      }
      return nodeFileSystem.readFile(path);
    },
  };
}

describe('read() that meets an append in flight', () => {
  it('does not judge the half-written batch against the sidecar the writer wrote afterwards', async () => {
    const root = tempDir();
    const slow = halfWritingFs();
    const writer = await openJsonlStore({ root, fs: slow.fs });
    await writer.create({ id: ID });
    await writer.append(ID, [ev(0), ev(1, 'turn/end')]);
    await writer.update(ID, { title: 't' }); // the sidecar counts batch 0-1
    slow.arm();
    const appended = writer.append(ID, [ev(2), ev(3), ev(4, 'turn/end')]);
    await slow.halfWritten;

    // The reader has scanned the half batch when it looks at the sidecar; by then the write is
    // done and the writer closed, so the sidecar counts batch 2-4, past where the reader saw a tear.
    const store = await openJsonlStore({
      root,
      fs: sidecarHookFs(async () => {
        slow.release();
        await appended;
        await writer.close();
      }),
    });
    const { seqs, error } = await reader(store.read(ID)).rest();
    expect(describeError(error)).toBeUndefined();
    expect(seqs).toEqual([0, 1, 2, 3, 4]);
    await store.close();
  });
});

describe('read() of a log damaged while the stream is under way', () => {
  it('is still CORRUPT, at the offset of the damaged line, when the damage stays', async () => {
    const root = tempDir();
    await bigLog(root, 600, 1000); // ~650 KiB: read() takes it in several chunks
    const path = logOf(root);
    const bytes = readFileSync(path);
    // A line well past the first chunk: flip one byte of its data.
    const lineStart = bytes.indexOf('\n', 400 * 1024) + 1;
    const lineSeq = Number(/"seq":(\d+)/.exec(bytes.subarray(lineStart, lineStart + 64).toString())![1]);

    const f = faultyFs();
    const store = await openJsonlStore({ root, fs: f.fs });
    const read = reader(store.read(ID));
    expect((await read.next()).seq).toBe(0);
    const fd = openSync(path, 'r+');
    writeSync(fd, Buffer.from('#'), 0, 1, lineStart + 40);
    closeSync(fd);
    const { seqs, error } = await read.rest();
    expect(isTidemarkError(error) && error.code).toBe('CORRUPT');
    expect(isTidemarkError(error) && error.location).toEqual({ file: path, offset: lineStart, seq: lineSeq });
    expect(seqs).toEqual(Array.from({ length: lineSeq - 1 }, (_, i) => i + 1));
    // The first open, then one per look at the log as it is now: three re-reads, then the verdict.
    expect(f.opens.filter((open) => open === `r ${path}`)).toHaveLength(5);
    expect(f.openHandles).toBe(0);
    await store.close();
  });

  it('is still CORRUPT when the damage is in the last batch, which the sidecar counts as committed', async () => {
    const root = tempDir();
    await bigLog(root, 600, 1000);
    const path = logOf(root);
    const bytes = readFileSync(path);
    const lastLine = bytes.lastIndexOf('\n', bytes.length - 2) + 1;

    const store = await openJsonlStore({ root });
    const read = reader(store.read(ID));
    expect((await read.next()).seq).toBe(0);
    const fd = openSync(path, 'r+');
    writeSync(fd, Buffer.from('#'), 0, 1, lastLine + 40);
    closeSync(fd);
    const { seqs, error } = await read.rest();
    expect(isTidemarkError(error) && error.code).toBe('CORRUPT');
    expect(isTidemarkError(error) && error.location).toEqual({ file: path, offset: lastLine, seq: 599 });
    expect(seqs).toHaveLength(598);
    await store.close();
  });
});

describe('read() of a session deleted while the stream is under way', () => {
  // Documented: the stream goes on reading the log it opened (the descriptor keeps the unlinked
  // file) and ends normally; a read() started after the delete is NOT_FOUND.
  it('reads the log as it was to its end, and a later read() is NOT_FOUND', async () => {
    const root = tempDir();
    await bigLog(root, 600, 1000);
    const store = await openJsonlStore({ root });
    const other = await openJsonlStore({ root });
    const read = reader(store.read(ID));
    expect((await read.next()).seq).toBe(0);
    await other.delete(ID);
    await other.close();
    const { seqs, error } = await read.rest();
    expect(describeError(error)).toBeUndefined();
    expect(seqs).toHaveLength(599);
    const again = await reader(store.read(ID)).rest();
    expect(isTidemarkError(again.error) && again.error.code).toBe('NOT_FOUND');
    await store.close();
  });

  it('ends without CORRUPT or NOT_FOUND when the deleted log ended in a torn fragment', async () => {
    const root = tempDir();
    const a = await openJsonlStore({ root });
    await a.create({ id: ID });
    await a.append(ID, [ev(0), ev(1, 'turn/end')]);
    await a.close();
    appendFileSync(logOf(root), '{"seq":2,"type":"user/message"');
    const store = await openJsonlStore({ root });
    const other = await openJsonlStore({ root });
    const read = reader(store.read(ID));
    expect((await read.next()).seq).toBe(0);
    await other.delete(ID);
    await other.close();
    const { seqs, error } = await read.rest();
    expect(describeError(error)).toBeUndefined();
    expect(seqs).toEqual([1]);
    await store.close();
  });
});
