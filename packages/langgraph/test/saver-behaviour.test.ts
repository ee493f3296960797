// What the saver guarantees beyond LangGraph's validation suite: concurrent writers surface as
// CONFLICT, retries store nothing twice, special writes are replaced, storage grows with what
// changed, thread ids of any form map to distinct sessions, and a storage fault is an error that
// leaves the previous checkpoint as the latest.
import { type Checkpoint, ERROR, emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';
import {
  type AppendOptions,
  isTidemarkError,
  type SessionEvent,
  type SessionStore,
  TidemarkError,
} from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import { describe, expect, it } from 'vitest';
import { sessionIdOfThread, TidemarkSaver } from '../src/index.js';

const meta = { source: 'loop' as const, step: 0, parents: {} };

function checkpoint(values: Record<string, unknown>, versions: Record<string, number>): Checkpoint {
  return { ...emptyCheckpoint(), id: uuid6(-1), channel_values: values, channel_versions: versions };
}

describe('TidemarkSaver', () => {
  it('rejects a put with CONFLICT when another saver added a checkpoint to the thread since it read', async () => {
    const store = await openMemoryStore();
    const a = new TidemarkSaver(store);
    const b = new TidemarkSaver(store);
    const root = await a.put({ configurable: { thread_id: 't' } }, checkpoint({}, {}), meta, {});
    expect(await b.getTuple({ configurable: { thread_id: 't' } })).toBeDefined();
    const fromB = await b.put(root, checkpoint({}, {}), meta, {});
    const error = await a.put(root, checkpoint({}, {}), meta, {}).catch((e: unknown) => e);
    expect(isTidemarkError(error, 'CONFLICT')).toBe(true);
    // Nothing of a's put was stored; b's checkpoint is the latest.
    const latest = await a.getTuple({ configurable: { thread_id: 't' } });
    expect(latest?.config.configurable?.checkpoint_id).toBe(fromB.configurable?.checkpoint_id);
  });

  it('retries once when the other writer only added pending writes', async () => {
    const store = await openMemoryStore();
    const a = new TidemarkSaver(store);
    const b = new TidemarkSaver(store);
    const root = await a.put({ configurable: { thread_id: 't' } }, checkpoint({}, {}), meta, {});
    await b.getTuple({ configurable: { thread_id: 't' } });
    await b.putWrites(root, [['ch', 'from b']], 'task-b');
    await a.putWrites(root, [['ch', 'from a']], 'task-a');
    const tuple = await b.getTuple(root);
    expect(tuple?.pendingWrites).toEqual([
      ['task-a', 'ch', 'from a'],
      ['task-b', 'ch', 'from b'],
    ]);
  });

  it('stores a retried putWrites once and replaces special writes', async () => {
    const store = await openMemoryStore();
    const saver = new TidemarkSaver(store);
    const root = await saver.put({ configurable: { thread_id: 't' } }, checkpoint({}, {}), meta, {});
    await saver.putWrites(root, [['ch', 1]], 'task');
    const before = (await store.load(sessionIdOfThread('t'))).events.length;
    await saver.putWrites(root, [['ch', 2]], 'task');
    expect((await store.load(sessionIdOfThread('t'))).events.length).toBe(before);
    await saver.putWrites(root, [[ERROR, 'first error']], 'task');
    await saver.putWrites(root, [[ERROR, 'second error']], 'task');
    expect((await saver.getTuple(root))?.pendingWrites).toEqual([
      ['task', ERROR, 'second error'],
      ['task', 'ch', 1],
    ]);
  });

  it('stores an unchanged channel once, however many checkpoints carry it', async () => {
    const store = await openMemoryStore();
    const saver = new TidemarkSaver(store);
    const big = 'x'.repeat(100_000);
    let config = await saver.put(
      { configurable: { thread_id: 't' } },
      checkpoint({ big, n: 0 }, { big: 1, n: 1 }),
      meta,
      { big: 1, n: 1 },
    );
    for (let n = 1; n <= 50; n += 1) {
      config = await saver.put(config, checkpoint({ big, n }, { big: 1, n: n + 1 }), meta, { n: n + 1 });
    }
    const stored = (await store.load(sessionIdOfThread('t'))).events;
    const bytes = stored.reduce((sum: number, e: SessionEvent) => sum + JSON.stringify(e).length, 0);
    expect(bytes).toBeLessThan(2 * big.length);
    expect((await saver.getTuple(config))?.checkpoint.channel_values).toEqual({ big, n: 50 });
  });

  it('lists an unchanged channel with its value in every tuple, never one object shared by two', async () => {
    const store = await openMemoryStore();
    const saver = new TidemarkSaver(store);
    let config = await saver.put(
      { configurable: { thread_id: 't' } },
      checkpoint({ text: 'kept', obj: { items: [1] }, n: 0 }, { text: 1, obj: 1, n: 1 }),
      meta,
      { text: 1, obj: 1, n: 1 },
    );
    for (let n = 1; n <= 3; n += 1) {
      const values = { text: 'kept', obj: { items: [1] }, n };
      config = await saver.put(config, checkpoint(values, { text: 1, obj: 1, n: n + 1 }), meta, { n: n + 1 });
      await saver.putWrites(config, [['obj', { items: [1] }]], 'task');
    }
    const tuples = [];
    for await (const tuple of saver.list({ configurable: { thread_id: 't' } })) tuples.push(tuple);
    expect(tuples.map((t) => t.checkpoint.channel_values.n)).toEqual([3, 2, 1, 0]);
    (tuples[0]!.checkpoint.channel_values.obj as { items: number[] }).items.push(2);
    (tuples[0]!.pendingWrites![0]![2] as { items: number[] }).items.push(2);
    for (const tuple of tuples.slice(1)) {
      expect(tuple.checkpoint.channel_values).toMatchObject({ text: 'kept', obj: { items: [1] } });
    }
    expect(tuples[1]!.pendingWrites).toEqual([['task', 'obj', { items: [1] }]]);
  });

  it('maps thread ids of any form to distinct sessions and lists them by their own id', async () => {
    const threads = ['plain-id', 'with space', 'with/slash ✓', 'x'.repeat(200), '', '.hidden', 'lg-plain-id'];
    const ids = threads.map(sessionIdOfThread);
    expect(new Set(ids).size).toBe(threads.length);
    const store = await openMemoryStore();
    const saver = new TidemarkSaver(store);
    for (const thread_id of threads)
      await saver.put({ configurable: { thread_id } }, checkpoint({}, {}), meta, {});
    const listed = new Set<unknown>();
    for await (const tuple of saver.list({})) listed.add(tuple.config.configurable?.thread_id);
    expect(listed).toEqual(new Set(threads));
  });

  it('rejects with the storage error and keeps the previous checkpoint as the latest', async () => {
    const inner = await openMemoryStore();
    let failing = false;
    const store: SessionStore = Object.create(inner, {
      append: {
        value: (id: string, events: readonly SessionEvent[], options?: AppendOptions) =>
          failing
            ? Promise.reject(new TidemarkError('IO', 'injected EIO', { errno: 'EIO', retryable: true }))
            : inner.append(id, events, options),
      },
      // Forwards append's options: declares the check with its own append (see checksAppendAfter).
      capabilities: { value: inner.capabilities },
    });
    const saver = new TidemarkSaver(store);
    const first = await saver.put(
      { configurable: { thread_id: 't' } },
      checkpoint({ a: 1 }, { a: 1 }),
      meta,
      { a: 1 },
    );
    failing = true;
    const error = await saver
      .put(first, checkpoint({ a: 2 }, { a: 2 }), meta, { a: 2 })
      .catch((e: unknown) => e);
    expect(isTidemarkError(error, 'IO')).toBe(true);
    failing = false;
    const latest = await saver.getTuple({ configurable: { thread_id: 't' } });
    expect(latest?.config).toEqual(first);
    expect(latest?.checkpoint.channel_values).toEqual({ a: 1 });
  });

  it('waits before appending again while another writer holds the thread, and stores the batch once it lets go', async () => {
    // As a JSONL store answers while another process holds the session's writer lock (until that
    // writer has been idle for 250 ms): CONFLICT, the log unchanged.
    const inner = await openMemoryStore();
    let heldUntil = 0;
    let refused = 0;
    const store: SessionStore = Object.create(inner, {
      append: {
        value: (id: string, events: readonly SessionEvent[], options?: AppendOptions) => {
          if (performance.now() < heldUntil) {
            refused += 1;
            return Promise.reject(
              new TidemarkError('CONFLICT', 'held by another writer', { retryable: true }),
            );
          }
          return inner.append(id, events, options);
        },
      },
      capabilities: { value: inner.capabilities },
    });
    const saver = new TidemarkSaver(store);
    const first = await saver.put({ configurable: { thread_id: 't' } }, checkpoint({}, {}), meta, {});
    heldUntil = performance.now() + 250;
    const second = await saver.put(first, checkpoint({ a: 1 }, { a: 1 }), meta, { a: 1 });
    expect(refused).toBeGreaterThan(0);
    const latest = await new TidemarkSaver(inner).getTuple({ configurable: { thread_id: 't' } });
    expect(latest?.config).toEqual(second);
    expect(latest?.checkpoint.channel_values).toEqual({ a: 1 });
  });
});
