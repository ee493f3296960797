// Warm writes confirmed by the append itself (`append(…, { after })`): a saver that holds a thread
// plans its write on the cache and names the last event it knows, so a store that checks `after`
// refuses a write planned on a log that is no longer there, and the saver reads the thread and
// plans again; no read before the write. A store without the check gets the confirming read.
// And on every backend, with two store instances over one store: whatever another saver deleted
// and rewrote behind the cache, a write lands as planned on what the store holds, or is refused.

import type { RunnableConfig } from '@langchain/core/runnables';
import { type Checkpoint, emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';
import { checksAppendAfter, isTidemarkError, type SessionStore } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import { countingStore as counting, openTwoInstances, sharedBackends } from '@tidemark/test-hosts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionIdOfThread, TidemarkSaver } from '../src/index.js';

const meta = { source: 'loop' as const, step: 0, parents: {} };
const thread = (id: string): RunnableConfig => ({ configurable: { thread_id: id, checkpoint_ns: '' } });
const idOf = (config: RunnableConfig | undefined): unknown => config?.configurable?.checkpoint_id;

function checkpoint(values: Record<string, unknown>, versions: Record<string, number>): Checkpoint {
  return { ...emptyCheckpoint(), id: uuid6(-1), channel_values: values, channel_versions: versions };
}

/**
 * Makes `saver` hold the thread in its cache (a `list` folds it; a cold `getTuple` reads the
 * latest without keeping the thread) and hand out its latest checkpoint, as a run starts.
 */
async function hold(saver: TidemarkSaver, t: string) {
  for await (const _ of saver.list(thread(t))) {
    // folded and cached
  }
  return saver.getTuple(thread(t));
}

/** A few super-steps as a graph makes them: a put on the latest, then a task's writes on it. */
async function steps(
  saver: TidemarkSaver,
  from: RunnableConfig,
  n: number,
  start = 1,
): Promise<RunnableConfig> {
  let config = from;
  for (let i = start; i < start + n; i += 1) {
    config = await saver.put(config, checkpoint({ n: i }, { n: i }), meta, { n: i });
    await saver.putWrites(config, [['n', i + 1]], `task-${i}`);
  }
  return config;
}

describe('warm writes on a store that checks append after', () => {
  it('reads nothing: each put and putWrites is one append naming the event it follows', async () => {
    const inner = await openMemoryStore();
    expect(checksAppendAfter(inner)).toBe(true);
    const { store, calls, reset } = counting(inner, true);
    const saver = new TidemarkSaver(store);
    const root = await saver.put(thread('warm'), checkpoint({}, {}), meta, {});
    reset();
    const last = await steps(saver, root, 5);
    expect(calls).toEqual({ reads: 0, loads: 0, appends: 10, afters: 10, updates: 0, conflicts: 0 });
    const fresh = await new TidemarkSaver(inner).getTuple(thread('warm'));
    expect(idOf(fresh?.config)).toBe(idOf(last));
    expect(fresh?.checkpoint.channel_values).toEqual({ n: 5 });
    expect(fresh?.pendingWrites).toEqual([['task-5', 'n', 6]]);
  });

  it('stays without reads after warm getTuple and list calls, which confirm the cache by their own read', async () => {
    const inner = await openMemoryStore();
    const { store, calls, reset } = counting(inner, true);
    const saver = new TidemarkSaver(store);
    let config = await steps(saver, await saver.put(thread('mixed'), checkpoint({}, {}), meta, {}), 2);
    for (let i = 3; i < 6; i += 1) {
      expect(idOf((await saver.getTuple(thread('mixed')))?.config)).toBe(idOf(config));
      reset();
      config = await steps(saver, config, 1, i);
      expect(calls).toMatchObject({ reads: 0, loads: 0, appends: 2, afters: 2, conflicts: 0 });
    }
  });

  it('confirms with a read a put that the cache says is stored already, and appends nothing', async () => {
    const inner = await openMemoryStore();
    const { store, calls, reset } = counting(inner, true);
    const saver = new TidemarkSaver(store);
    const cp = checkpoint({ n: 1 }, { n: 1 });
    await saver.put(thread('again'), cp, meta, { n: 1 });
    reset();
    await saver.put(thread('again'), cp, meta, { n: 1 });
    expect(calls.appends).toBe(0);
    expect(calls.reads + calls.loads).toBeGreaterThan(0);
  });

  it('gets the confirming read on a store that does not check after, and never names an event', async () => {
    const inner = await openMemoryStore();
    const { store, calls, reset } = counting(inner, false);
    expect(checksAppendAfter(store)).toBe(false);
    const saver = new TidemarkSaver(store);
    const root = await saver.put(thread('unchecked'), checkpoint({}, {}), meta, {});
    reset();
    await steps(saver, root, 3);
    expect(calls.appends).toBe(6);
    expect(calls.afters).toBe(0);
    // One read before each write (of the log's end, from the last event known).
    expect(calls.reads).toBe(6);
  });

  it("refuses by the append a write planned on a log another saver deleted and rewrote, then plans on the store's", async () => {
    const inner = await openMemoryStore();
    const { store, calls, reset } = counting(inner, true);
    const a = new TidemarkSaver(inner);
    const b = new TidemarkSaver(store);
    await a.put(thread('behind'), checkpoint({ n: 1 }, { n: 1 }), meta, { n: 1 });
    expect(await hold(b, 'behind')).toBeDefined();
    await a.deleteThread('behind');
    const fromA = await a.put(thread('behind'), checkpoint({ n: 2 }, { n: 1 }), meta, { n: 1 });
    reset();
    // B's cache holds n@1 = 1, the store n@1 = 2: planned on the cache, B would store no value.
    const fromB = await b.put(thread('behind'), checkpoint({ n: 1 }, { n: 1 }), meta, { n: 1 });
    expect(calls.conflicts).toBe(1);
    expect(calls.appends).toBe(2);
    const fresh = new TidemarkSaver(inner);
    expect((await fresh.getTuple(fromB))?.checkpoint.channel_values).toEqual({ n: 1 });
    expect((await fresh.getTuple(fromA))?.checkpoint.channel_values).toEqual({ n: 2 });
  });
});

describe.each(await sharedBackends())(
  'behind the cache of saver B, on two $name store instances',
  (backend) => {
    let close: (() => Promise<void>) | undefined;
    let storeA: SessionStore;
    let storeB: SessionStore;
    let a: TidemarkSaver;
    let b: TidemarkSaver;
    beforeAll(async () => {
      ({ storeA, storeB, close } = await openTwoInstances(backend));
      a = new TidemarkSaver(storeA);
      b = new TidemarkSaver(storeB);
    });
    afterAll(() => close?.());

    /** A thread B cached at A's first checkpoint, which A then deleted and rewrote to the same length. */
    async function rewritten(t: string): Promise<{ first: Checkpoint; fromA: RunnableConfig }> {
      const first = checkpoint({ n: 1 }, { n: 1 });
      await a.put(thread(t), first, meta, { n: 1 });
      expect(idOf((await hold(b, t))?.config)).toBe(first.id);
      await a.deleteThread(t);
      const fromA = await a.put(thread(t), checkpoint({ n: 2 }, { n: 1 }), meta, { n: 1 });
      // As many events as the log B cached.
      expect((await storeA.load(sessionIdOfThread(t))).events).toHaveLength(3);
      return { first, fromA };
    }

    it('stores a new checkpoint on the log A rewrote, with its own value where versions collide', async () => {
      const { fromA } = await rewritten('new-on-rewrite');
      // B's cache holds n@1 = 1, the store n@1 = 2: planned on the cache, B would store no value.
      const fromB = await b.put(thread('new-on-rewrite'), checkpoint({ n: 1 }, { n: 1 }), meta, { n: 1 });
      const fresh = new TidemarkSaver(storeA);
      expect((await fresh.getTuple(fromB))?.checkpoint.channel_values).toEqual({ n: 1 });
      expect((await fresh.getTuple(fromA))?.checkpoint.channel_values).toEqual({ n: 2 });
      expect(idOf((await b.getTuple(thread('new-on-rewrite')))?.config)).toBe(idOf(fromB));
    });

    it('stores again the checkpoint B cached, which the rewritten log lacks', async () => {
      const { first, fromA } = await rewritten('same-on-rewrite');
      // B's cache holds this very checkpoint: "nothing to store" must not be decided on it.
      const config = await b.put(thread('same-on-rewrite'), first, meta, { n: 1 });
      expect(idOf(config)).toBe(first.id);
      const fresh = new TidemarkSaver(storeA);
      expect((await fresh.getTuple(config))?.checkpoint.channel_values).toEqual({ n: 1 });
      expect((await fresh.getTuple(fromA))?.checkpoint.channel_values).toEqual({ n: 2 });
    });

    it("refuses B's writes and put on its cached latest, which the rewritten log lacks, and stores nothing", async () => {
      const t = 'stale-parent';
      const { first, fromA } = await rewritten(t);
      const parent: RunnableConfig = { configurable: { ...thread(t).configurable, checkpoint_id: first.id } };
      const writes = await b.putWrites(parent, [['n', 9]], 'task-b').catch((e: unknown) => e);
      expect(isTidemarkError(writes, 'CONFLICT'), String(writes)).toBe(true);
      const put = await b
        .put(parent, checkpoint({ n: 9 }, { n: 2 }), meta, { n: 2 })
        .catch((e: unknown) => e);
      expect(isTidemarkError(put, 'CONFLICT'), String(put)).toBe(true);
      expect((await storeA.load(sessionIdOfThread(t))).events).toHaveLength(3);
      const latest = await new TidemarkSaver(storeA).getTuple(thread(t));
      expect(idOf(latest?.config)).toBe(idOf(fromA));
      expect(latest?.pendingWrites).toEqual([]);
    });

    it('stores on the log A extended, and keeps both hosts warm', async () => {
      const t = 'extended';
      const root = await a.put(thread(t), checkpoint({}, {}), meta, {});
      await hold(b, t);
      await a.putWrites(root, [['n', 1]], 'task-a');
      await b.putWrites(root, [['n', 2]], 'task-b');
      const next = await a.put(root, checkpoint({ n: 1 }, { n: 1 }), meta, { n: 1 });
      const tuple = await new TidemarkSaver(storeB).getTuple(root);
      expect(tuple?.pendingWrites).toEqual([
        ['task-a', 'n', 1],
        ['task-b', 'n', 2],
      ]);
      expect(idOf((await b.getTuple(thread(t)))?.config)).toBe(idOf(next));
    });
  },
);
