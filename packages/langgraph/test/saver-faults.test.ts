// Every saver operation meets a failing store, not only loads: each store method in turn fails
// (an IO error, as a disk or connection fault gives), for a saver that holds the thread (warm) and
// for a new one (cold). Each call must succeed with the healthy answer or reject with the typed
// error (never an absent thread or a short list), no acknowledged checkpoint is lost, and the
// store stays writable once the fault is lifted.
import type { RunnableConfig } from '@langchain/core/runnables';
import { type Checkpoint, emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';
import { isTidemarkError, type SessionStore, TidemarkError } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import { describe, expect, it } from 'vitest';
import { TidemarkSaver } from '../src/index.js';

const meta = { source: 'loop' as const, step: 0, parents: {} };
const METHODS = ['create', 'append', 'load', 'read', 'list', 'has', 'update', 'delete'] as const;
type Method = (typeof METHODS)[number];

function checkpoint(values: Record<string, unknown>, versions: Record<string, number>): Checkpoint {
  return { ...emptyCheckpoint(), id: uuid6(-1), channel_values: values, channel_versions: versions };
}

const injected = () => new TidemarkError('IO', 'injected EIO', { errno: 'EIO', retryable: true });

/** `inner` with `failing.method` (when set) rejecting every call with an IO error. */
function faulty(inner: SessionStore, failing: { method?: Method }): SessionStore {
  return new Proxy(inner, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      if (key === failing.method && key === 'read') {
        return () => ({
          // biome-ignore lint/correctness/useYield: it fails before the first event
          async *[Symbol.asyncIterator]() {
            throw injected();
          },
        });
      }
      if (key === failing.method) return () => Promise.reject(injected());
      return value.bind(target);
    },
  });
}

const thread = (id: string, ns = ''): RunnableConfig => ({
  configurable: { thread_id: id, checkpoint_ns: ns },
});

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

/** A thread of two checkpoints, the latest with a pending write; its configs. */
async function seed(store: SessionStore, id: string) {
  const saver = new TidemarkSaver(store);
  const first = await saver.put(thread(id), checkpoint({ n: 1 }, { n: 1 }), meta, { n: 1 });
  const second = await saver.put(first, checkpoint({ n: 2 }, { n: 2 }), meta, { n: 2 });
  await saver.putWrites(second, [['n', 3]], 'task');
  return { first, second };
}

type Operation = (saver: TidemarkSaver, configs: Awaited<ReturnType<typeof seed>>) => Promise<unknown>;
const OPERATIONS: [string, Operation][] = [
  ['getTuple latest', (saver) => saver.getTuple(thread('t'))],
  ['getTuple by id', (saver, { first }) => saver.getTuple(first)],
  ['getTuple of a namespace without checkpoints', (saver) => saver.getTuple(thread('t', 'other'))],
  ['list of the thread', (saver) => collect(saver.list(thread('t')))],
  ['list with a limit', (saver) => collect(saver.list(thread('t'), { limit: 1 }))],
  ['list of every thread', (saver) => collect(saver.list({}))],
  ['put', (saver, { second }) => saver.put(second, checkpoint({ n: 4 }, { n: 4 }), meta, { n: 4 })],
  ['putWrites', (saver, { second }) => saver.putWrites(second, [['n', 5]], 'other-task')],
  ['deleteThread', (saver) => saver.deleteThread('t')],
  [
    'getDeltaChannelHistory',
    (saver) => saver.getDeltaChannelHistory({ config: thread('t'), channels: ['n'] }),
  ],
];

/** What a new saver reads of the thread: the latest checkpoint's values and the number of checkpoints. */
async function view(store: SessionStore) {
  const saver = new TidemarkSaver(store);
  const latest = await saver.getTuple(thread('t'));
  return {
    values: latest?.checkpoint.channel_values,
    count: (await collect(saver.list(thread('t')))).length,
  };
}

describe.each(['warm', 'cold'] as const)(
  'every saver operation, %s, under a failing store',
  (temperature) => {
    it.each(OPERATIONS)(
      '%s: the healthy answer or a typed error, nothing acknowledged lost',
      async (_, operation) => {
        for (const method of METHODS) {
          // The healthy answer, on a twin store.
          const twin = await openMemoryStore();
          const twinSaver = new TidemarkSaver(twin);
          const twinConfigs = await seed(twin, 't');
          if (temperature === 'warm') await twinSaver.getTuple(thread('t'));
          const healthy = await operation(twinSaver, twinConfigs);

          const inner = await openMemoryStore();
          const failing: { method?: Method } = {};
          const store = faulty(inner, failing);
          const saver = new TidemarkSaver(store);
          const configs = await seed(store, 't');
          if (temperature === 'warm') await saver.getTuple(thread('t'));
          const before = await view(inner);
          failing.method = method;
          let outcome: { value?: unknown; error?: unknown };
          try {
            outcome = { value: await operation(saver, configs) };
          } catch (error) {
            outcome = { error };
          }
          failing.method = undefined;
          if (outcome.error !== undefined) {
            expect(isTidemarkError(outcome.error, 'IO'), `${method}: ${String(outcome.error)}`).toBe(true);
            // Nothing was acknowledged: the thread is as it was.
            expect(await view(inner), method).toEqual(before);
          } else {
            expect(shape(outcome.value), method).toEqual(shape(healthy));
          }
          // Writable once the fault is lifted, from the latest checkpoint there is.
          const latest = await saver.getTuple(thread('t'));
          const next = await saver.put(latest?.config ?? thread('t'), checkpoint({ n: 9 }, { n: 9 }), meta, {
            n: 9,
          });
          expect((await new TidemarkSaver(inner).getTuple(thread('t')))?.config).toEqual(next);
        }
      },
    );
  },
);

/** An answer without the ids and times that differ between the twin stores. */
function shape(value: unknown): unknown {
  return JSON.parse(
    JSON.stringify(value ?? null, (key, v) =>
      key === 'checkpoint_id' || key === 'id' || key === 'ts' ? typeof v : (v as unknown),
    ),
  );
}
