// Two processes ("hosts") over one shared store (one JSONL root, one SQLite file, one PostgreSQL
// schema), each with its own long-lived TidemarkSaver, as every deployment with more than one
// worker has. What must hold: one chain per thread and namespace (a run overtaken by another
// host's run fails with CONFLICT and hides nothing), and no write planned from a stale cache (after
// another host's append, delete or rewrite, a saver behaves as in a process that has just started).
// The hosts load the built package: build it before running these tests.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunnableConfig } from '@langchain/core/runnables';
import { type Checkpoint, emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';
import { isTidemarkError, type SessionStore } from '@tidemark/core';
import { type Host, openStoreAt, type SharedStore, sharedBackends, startHost } from '@tidemark/test-hosts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TidemarkSaver } from '../src/index.js';

const HOST = new URL('./fixtures/saver-host.mjs', import.meta.url);
const backends = await sharedBackends();
const ROUNDS = 10;
/** Generous: two processes on a machine shared with other work. */
const TIMEOUT = 180_000;

const meta = { source: 'loop' as const, step: 0, parents: {} };
const thread = (id: string): RunnableConfig => ({ configurable: { thread_id: id, checkpoint_ns: '' } });
const idOf = (config: RunnableConfig | undefined): unknown => config?.configurable?.checkpoint_id;

function checkpoint(values: Record<string, unknown>, versions: Record<string, number>): Checkpoint {
  return { ...emptyCheckpoint(), id: uuid6(-1), channel_values: values, channel_versions: versions };
}

/** What a process that has just started reads: the latest checkpoint, and every checkpoint's id and parent. */
async function freshView(store: SessionStore, threadId: string) {
  const saver = new TidemarkSaver(store);
  const latest = await saver.getTuple(thread(threadId));
  const parents = new Map<string, string | undefined>();
  for await (const tuple of saver.list(thread(threadId))) {
    parents.set(String(idOf(tuple.config)), idOf(tuple.parentConfig) as string | undefined);
  }
  return { latest, parents };
}

/** Every checkpoint of the thread is an ancestor of the latest (or the latest): one chain, no fork. */
function expectOneChain(view: Awaited<ReturnType<typeof freshView>>): void {
  const chain = new Set<string>();
  let id = idOf(view.latest?.config) as string | undefined;
  while (id !== undefined) {
    chain.add(id);
    id = view.parents.get(id);
  }
  expect([...view.parents.keys()].sort()).toEqual([...chain].sort());
}

async function settle<T>(promise: Promise<T>): Promise<{ value?: T; error?: unknown }> {
  try {
    return { value: await promise };
  } catch (error) {
    return { error };
  }
}

describe.each(backends)('two hosts over one $name store', (backend) => {
  let shared: SharedStore;
  let store: SessionStore;
  let a: Host;
  let b: Host;
  beforeAll(async () => {
    shared = await backend.create();
    store = await openStoreAt(shared.address);
    [a, b] = await Promise.all([startHost(shared.address, HOST), startHost(shared.address, HOST)]);
  }, TIMEOUT);
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await store?.close();
    await shared?.cleanup();
  }, TIMEOUT);

  it(
    'reads on B what A wrote after B cached the thread',
    async () => {
      const root = await a.call<RunnableConfig>(
        'put',
        thread('read-after-cache'),
        checkpoint({}, {}),
        meta,
        {},
      );
      expect(
        idOf((await b.call<{ config: RunnableConfig }>('getTuple', thread('read-after-cache'))).config),
      ).toBe(idOf(root));
      const next = await a.call<RunnableConfig>('put', root, checkpoint({ n: 1 }, { n: 1 }), meta, { n: 1 });
      const seen = await b.call<{ config: RunnableConfig; checkpoint: Checkpoint }>(
        'getTuple',
        thread('read-after-cache'),
      );
      expect(idOf(seen.config)).toBe(idOf(next));
      expect(seen.checkpoint.channel_values).toEqual({ n: 1 });
    },
    TIMEOUT,
  );

  it(
    "refuses B's put and putWrites on a parent A built on, and keeps A's checkpoint the latest",
    async () => {
      const t = 'overtaken-put';
      const root = await a.call<RunnableConfig>('put', thread(t), checkpoint({}, {}), meta, {});
      await b.call('getTuple', thread(t));
      const fromA = await a.call<RunnableConfig>('put', root, checkpoint({ by: 'A' }, { by: 1 }), meta, {
        by: 1,
      });
      const writes = await settle(b.call('putWrites', root, [['by', 'B']], 'task-b'));
      expect(isTidemarkError(writes.error, 'CONFLICT')).toBe(true);
      const put = await settle(b.call('put', root, checkpoint({ by: 'B' }, { by: 1 }), meta, { by: 1 }));
      expect(isTidemarkError(put.error, 'CONFLICT')).toBe(true);
      const view = await freshView(store, t);
      expect(idOf(view.latest?.config)).toBe(idOf(fromA));
      expect(view.latest?.pendingWrites).toEqual([]);
      expect(view.parents.size).toBe(2);
      expectOneChain(view);
    },
    TIMEOUT,
  );

  it(
    'lets one of two racing first puts to a new thread land, and refuses the other',
    async () => {
      for (let round = 0; round < ROUNDS; round += 1) {
        const t = `first-put-${round}`;
        await Promise.all([a.call('getTuple', thread(t)), b.call('getTuple', thread(t))]);
        const [fromA, fromB] = await Promise.all([
          settle(
            a.call<RunnableConfig>('put', thread(t), checkpoint({ by: 'A' }, { by: 1 }), meta, { by: 1 }),
          ),
          settle(
            b.call<RunnableConfig>('put', thread(t), checkpoint({ by: 'B' }, { by: 1 }), meta, { by: 1 }),
          ),
        ]);
        const landed = [fromA, fromB].filter((r) => r.error === undefined);
        expect(landed).toHaveLength(1);
        const refused = [fromA, fromB].find((r) => r.error !== undefined);
        expect(isTidemarkError(refused?.error, 'CONFLICT')).toBe(true);
        const view = await freshView(store, t);
        expect(idOf(view.latest?.config)).toBe(idOf(landed[0]?.value));
        expect(view.parents.size).toBe(1);
      }
    },
    TIMEOUT,
  );

  it(
    'completes one of two racing graph runs on one thread, fails the other with CONFLICT, and never forks',
    async () => {
      for (let round = 0; round < ROUNDS; round += 1) {
        const t = `race-${round}`;
        // Every other round the thread already holds a run: the race is then on its latest checkpoint.
        if (round % 2 === 1) await a.call('run', t, 'seed', { steps: 2 });
        const dir = await mkdtemp(join(tmpdir(), 'tidemark-race-barrier-'));
        const [runA, runB] = await Promise.all([
          settle(
            a.call<{ log: string[] }>('run', t, 'A', { steps: 3, delayMs: 40, barrier: { dir, peer: 'B' } }),
          ),
          settle(
            b.call<{ log: string[] }>('run', t, 'B', { steps: 3, delayMs: 40, barrier: { dir, peer: 'A' } }),
          ),
        ]);
        await rm(dir, { recursive: true, force: true });
        const done = [runA, runB].filter((r) => r.error === undefined);
        const failed = [runA, runB].filter((r) => r.error !== undefined);
        expect(done, `round ${round}: ${failed.map((f) => String(f.error)).join('; ')}`).toHaveLength(1);
        expect(isTidemarkError(failed[0]?.error, 'CONFLICT'), String(failed[0]?.error)).toBe(true);
        const view = await freshView(store, t);
        expectOneChain(view);
        // The latest checkpoint is the end of the completed run, as that run returned it.
        expect(view.latest?.checkpoint.channel_values.log).toEqual(done[0]?.value?.log);
      }
    },
    TIMEOUT,
  );

  it(
    "fails a run whose slow node is overtaken by the other host's run, and keeps that run's end the latest",
    async () => {
      const t = 'slow-node';
      await a.call('run', t, 'seed', { steps: 1 });
      // B reads the latest, stores its input, then sleeps in its node; A runs past it. (JSONL: A's
      // first write comes over a second after B's last, once B's idle writer lock is released.)
      const slow = settle(b.call('run', t, 'B', { steps: 1, delayMs: 4_000 }));
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      const fast = await a.call<{ log: string[] }>('run', t, 'A', { steps: 2 });
      const { error } = await slow;
      expect(isTidemarkError(error, 'CONFLICT'), String(error)).toBe(true);
      const view = await freshView(store, t);
      expectOneChain(view);
      expect(view.latest?.checkpoint.channel_values.log).toEqual(fast.log);
    },
    TIMEOUT,
  );

  it(
    'stores again a checkpoint B had cached once A deleted the thread',
    async () => {
      const t = 'put-after-delete';
      const cp = checkpoint({ n: 1 }, { n: 1 });
      await a.call('put', thread(t), cp, meta, { n: 1 });
      expect(await b.call('getTuple', thread(t))).toBeDefined();
      await a.call('deleteThread', t);
      const config = await b.call<RunnableConfig>('put', thread(t), cp, meta, { n: 1 });
      expect(idOf(config)).toBe(cp.id);
      const view = await freshView(store, t);
      expect(idOf(view.latest?.config)).toBe(cp.id);
      expect(view.latest?.checkpoint.channel_values).toEqual({ n: 1 });
      expect(idOf((await b.call<{ config: RunnableConfig }>('getTuple', thread(t))).config)).toBe(cp.id);
    },
    TIMEOUT,
  );

  it(
    "neither appends onto nor hides A's rewrite of the thread to the same length",
    async () => {
      const t = 'rewrite-same-length';
      const first = await a.call<RunnableConfig>('put', thread(t), checkpoint({ n: 1 }, { n: 1 }), meta, {
        n: 1,
      });
      expect(idOf((await b.call<{ config: RunnableConfig }>('getTuple', thread(t))).config)).toBe(
        idOf(first),
      );
      await a.call('deleteThread', t);
      // The same events, one for one: the rewritten log is as long as the one B cached.
      const rewritten = await a.call<RunnableConfig>('put', thread(t), checkpoint({ n: 2 }, { n: 1 }), meta, {
        n: 1,
      });
      const writes = await settle(b.call('putWrites', first, [['n', 3]], 'task-b'));
      expect(isTidemarkError(writes.error, 'CONFLICT'), String(writes.error)).toBe(true);
      const seen = await b.call<{ config: RunnableConfig; checkpoint: Checkpoint }>('getTuple', thread(t));
      expect(idOf(seen.config)).toBe(idOf(rewritten));
      expect(seen.checkpoint.channel_values).toEqual({ n: 2 });
      const view = await freshView(store, t);
      expect(idOf(view.latest?.config)).toBe(idOf(rewritten));
      expect(view.latest?.pendingWrites).toEqual([]);
      expect(view.parents.size).toBe(1);
    },
    TIMEOUT,
  );

  it(
    "stores B's puts on A's rewrite of the thread to the same length as planned on it, not on B's cache",
    async () => {
      /** A thread B holds at `first` (n@1 = 1), which A deleted and rewrote with n@1 = 2. */
      const rewritten = async (t: string) => {
        const first = checkpoint({ n: 1 }, { n: 1 });
        await a.call('put', thread(t), first, meta, { n: 1 });
        // B holds the thread (a list folds and keeps it; a cold getTuple would not), warm.
        expect(await b.call<unknown[]>('list', thread(t))).toHaveLength(1);
        expect(idOf((await b.call<{ config: RunnableConfig }>('getTuple', thread(t))).config)).toBe(first.id);
        await a.call('deleteThread', t);
        const fromA = await a.call<RunnableConfig>('put', thread(t), checkpoint({ n: 2 }, { n: 1 }), meta, {
          n: 1,
        });
        return { first, fromA };
      };
      const fresh = new TidemarkSaver(store);
      // Planned on the cache, this put would store nothing: the cache holds `first` already.
      const same = await rewritten('rewrite-behind-cache-same');
      const again = await b.call<RunnableConfig>(
        'put',
        thread('rewrite-behind-cache-same'),
        same.first,
        meta,
        {
          n: 1,
        },
      );
      expect((await fresh.getTuple(again))?.checkpoint.channel_values).toEqual({ n: 1 });
      expect((await fresh.getTuple(same.fromA))?.checkpoint.channel_values).toEqual({ n: 2 });
      // Planned on the cache, this put would store no value for n@1 (and read A's n = 2).
      const t = 'rewrite-behind-cache-new';
      const other = await rewritten(t);
      const fromB = await b.call<RunnableConfig>('put', thread(t), checkpoint({ n: 1 }, { n: 1 }), meta, {
        n: 1,
      });
      expect((await fresh.getTuple(fromB))?.checkpoint.channel_values).toEqual({ n: 1 });
      expect((await fresh.getTuple(other.fromA))?.checkpoint.channel_values).toEqual({ n: 2 });
      expect(idOf((await fresh.getTuple(thread(t)))?.config)).toBe(idOf(fromB));
      const seen = await b.call<{ config: RunnableConfig; checkpoint: Checkpoint }>('getTuple', thread(t));
      expect(idOf(seen.config)).toBe(idOf(fromB));
      expect(seen.checkpoint.channel_values).toEqual({ n: 1 });
    },
    TIMEOUT,
  );

  it(
    'reads as absent on B a thread A deleted after B cached it',
    async () => {
      const t = 'read-after-delete';
      await a.call('put', thread(t), checkpoint({}, {}), meta, {});
      expect(await b.call('getTuple', thread(t))).toBeDefined();
      await a.call('deleteThread', t);
      expect(await b.call('getTuple', thread(t))).toBeUndefined();
      expect(await b.call('list', thread(t))).toEqual([]);
    },
    TIMEOUT,
  );
});
