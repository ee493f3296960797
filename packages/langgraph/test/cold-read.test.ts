// A new process's getTuple of a thread's latest checkpoint reads it through the pointers of the
// last batch (no `load`, no fold) and gives exactly the tuple a fold gives: after every step of a
// real graph (parallel tasks, Send, an interrupt left pending, a fork), for the root namespace and
// for a namespace without checkpoints; logs written before the pointers existed are folded as before.
// A cold `list` with a limit walks the newest checkpoints back by their `prev` pointers and gives
// what a fold gives; a namespace that stopped being one chain is folded. A log deleted and
// rewritten between a cold read's lookups is never mixed with the one it replaced.

import { readFileSync } from 'node:fs';
import type { RunnableConfig } from '@langchain/core/runnables';
import { Annotation, Command, END, interrupt, Send, START, StateGraph } from '@langchain/langgraph';
import type { SessionEvent, SessionStore } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import { afterEach, describe, expect, it } from 'vitest';
import { sessionIdOfThread, TidemarkSaver } from '../src/index.js';
import { type Backend, memory, type OpenedStore, sqlite } from './backends.js';

const State = Annotation.Root({
  log: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
  big: Annotation<string>(),
});

function buildGraph(saver: TidemarkSaver) {
  return new StateGraph(State)
    .addNode('start', () => ({ log: ['start'], big: 'x'.repeat(2_000) }))
    .addNode('left', () => ({ log: ['left'] }))
    .addNode('right', () => ({ log: ['right'] }))
    .addNode('fan', (s: { log: string[] }) => ({ log: [`fan:${s.log.length}`] }))
    .addNode('ask', () => ({ log: [`ask:${interrupt('next?') as string}`] }))
    .addEdge(START, 'start')
    .addEdge('start', 'left')
    .addEdge('start', 'right')
    .addConditionalEdges('left', (s) => [new Send('fan', s), new Send('fan', { ...s, log: [] })])
    .addEdge(['right', 'fan'], 'ask')
    .addEdge('ask', END)
    .compile({ checkpointer: saver });
}

/** `init` puts `big` once, then `step` counts `n` up to `steps` (the fixture's graph). */
function stepGraph(saver: TidemarkSaver, steps: number) {
  const Steps = Annotation.Root({
    log: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
    big: Annotation<string>(),
    n: Annotation<number>(),
  });
  return new StateGraph(Steps)
    .addNode('init', () => ({ log: ['init'], big: 'x'.repeat(2_000), n: 0 }))
    .addNode('step', (s: { n: number }) => ({ n: s.n + 1 }))
    .addEdge(START, 'init')
    .addEdge('init', 'step')
    .addConditionalEdges('step', (s: { n: number }) => (s.n < steps ? 'step' : END))
    .compile({ checkpointer: saver });
}

/** `store` with its `load` calls counted (a fold of a thread not held starts with one). */
function counting(store: SessionStore): { store: SessionStore; loads: () => number } {
  let loads = 0;
  const counted = new Proxy(store, {
    get(target, key, receiver) {
      if (key === 'load') {
        return (...args: Parameters<SessionStore['load']>) => {
          loads += 1;
          return target.load(...args);
        };
      }
      const value = Reflect.get(target, key, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { store: counted, loads: () => loads };
}

const config = (thread: string, ns = ''): RunnableConfig => ({
  configurable: { thread_id: thread, checkpoint_ns: ns },
});

/** `store` with its `read` calls counted (each lookup of a cold read is one). */
function countingReads(store: SessionStore): { store: SessionStore; reads: () => number } {
  let reads = 0;
  const counted = new Proxy(store, {
    get(target, key) {
      if (key === 'read') {
        return (...args: Parameters<SessionStore['read']>) => {
          reads += 1;
          return target.read(...args);
        };
      }
      const value = Reflect.get(target, key);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { store: counted, reads: () => reads };
}

/** The latest tuple as a fold gives it: a saver that folded the thread (by a read naming a checkpoint). */
async function folded(store: SessionStore, thread: string, ns = '') {
  const saver = new TidemarkSaver(store);
  const [latest] = await collect(saver.list(config(thread, ns)));
  return latest === undefined ? undefined : saver.getTuple(latest.config);
}

/** The newest `limit` tuples as a fold gives them (a `list` without a limit folds the thread). */
async function foldedList(store: SessionStore, thread: string, limit: number, ns = '') {
  return (await collect(new TidemarkSaver(store).list(config(thread, ns)))).slice(0, limit);
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

const opened: OpenedStore[] = [];
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
});

describe.each([memory, sqlite] as Backend[])('a cold getTuple on $name', (backend) => {
  it('reads the latest checkpoint without folding, after every batch, as a fold gives it', async () => {
    const store = await backend.open();
    opened.push(store);
    const graph = buildGraph(new TidemarkSaver(store.store));
    const thread = 'cold';
    await graph.invoke({ log: ['in'] }, config(thread));
    // Interrupted in `ask`: the latest checkpoint has pending writes (the interrupt).
    const pending = await new TidemarkSaver(store.store).getTuple(config(thread));
    expect(pending?.pendingWrites?.length).toBeGreaterThan(0);
    await graph.invoke(new Command({ resume: 'go' }), config(thread));
    // A fork from an earlier checkpoint: the fork's checkpoint is the latest.
    const history = await collect(graph.getStateHistory(config(thread)));
    await graph.updateState(history[history.length - 2]!.config, { log: ['forked'] });
    const forked = await new TidemarkSaver(store.store).getTuple(config(thread));
    expect(forked?.checkpoint.channel_values.log).toEqual(['in', 'forked']);
    // The thread as it stood after each batch: a copy of the log up to that batch's boundary.
    const id = sessionIdOfThread(thread);
    const { events, summary } = await store.store.load(id);
    const boundaries = events.filter((e) => e.type === 'turn/end').map((e) => e.seq);
    expect(boundaries.length).toBeGreaterThan(10);
    for (const end of boundaries) {
      const copy = await backend.open();
      opened.push(copy);
      await copy.store.create({ id });
      await copy.store.update(id, { attrs: summary.attrs ?? {} });
      await copy.store.append(id, events.slice(0, end + 1));
      const { store: counted, loads } = counting(copy.store);
      const cold = await new TidemarkSaver(counted).getTuple(config(thread));
      expect(loads(), `after event ${end}`).toBe(0);
      expect(cold, `after event ${end}`).toEqual(await folded(copy.store, thread));
      expect(cold).toBeDefined();
      for (const limit of [1, 3, 100]) {
        const list = await collect(new TidemarkSaver(counted).list(config(thread), { limit }));
        expect(list, `list ${limit} after event ${end}`).toEqual(await foldedList(copy.store, thread, limit));
      }
      // Every batch of this graph keeps the namespace one chain: no list above folded.
      expect(loads(), `after event ${end}`).toBe(0);
    }
  });

  it('folds for a cold list once a write went to a checkpoint other than the latest, and lists as a fold', async () => {
    const store = await backend.open();
    opened.push(store);
    const saver = new TidemarkSaver(store.store);
    await buildGraph(saver).invoke({ log: ['in'] }, config('late'));
    const [, older] = await collect(saver.list(config('late')));
    // A task's write for an earlier checkpoint, chosen explicitly (a late write).
    await saver.putWrites(older!.config, [['log', ['late']]], 'late-task');
    const { store: counted, loads } = counting(store.store);
    const cold = await collect(new TidemarkSaver(counted).list(config('late'), { limit: 3 }));
    expect(loads()).toBe(1);
    expect(cold).toEqual(await foldedList(store.store, 'late', 3));
    expect(cold[1]?.pendingWrites).toContainEqual(['late-task', 'log', ['late']]);
  });

  it('never mixes a log with the one that replaced it between two lookups of a cold read', async () => {
    // Two threads of the same shape whose one large value differs: the same seqs hold the same
    // kinds of records, so only the blobs' keys tell one log from the other. The values do not
    // deflate and are too large to be stored again with each checkpoint: the cold read looks the
    // value up by its seq, a second lookup.
    const source = await backend.open();
    opened.push(source);
    const bigGraph = (saver: TidemarkSaver, big: string) =>
      new StateGraph(State)
        .addNode('start', () => ({ log: ['start'], big }))
        .addNode('one', () => ({ log: ['one'] }))
        .addNode('two', () => ({ log: ['two'] }))
        .addNode('three', () => ({ log: ['three'] }))
        .addEdge(START, 'start')
        .addEdge('start', 'one')
        .addEdge('one', 'two')
        .addEdge('two', 'three')
        .addEdge('three', END)
        .compile({ checkpointer: saver });
    await bigGraph(new TidemarkSaver(source.store), noise(1, 3_000)).invoke({ log: [] }, config('a'));
    await bigGraph(new TidemarkSaver(source.store), noise(2, 3_000)).invoke({ log: [] }, config('b'));
    const a = await source.store.load(sessionIdOfThread('a'));
    const b = await source.store.load(sessionIdOfThread('b'));
    expect(b.events.map((e) => e.type)).toEqual(a.events.map((e) => e.type));
    const target = await backend.open();
    opened.push(target);
    const id = sessionIdOfThread('t');
    const write = async (events: SessionEvent[]) => {
      await target.store.create({ id });
      await target.store.update(id, { attrs: { langgraphThread: 't' } });
      await target.store.append(id, events);
    };
    await write(a.events);
    // After the cold read's first lookup, the log is deleted and rewritten to the same length.
    let reads = 0;
    const swapping = new Proxy(target.store, {
      get(store, key) {
        if (key === 'read') {
          return (sessionId: string, range?: Parameters<SessionStore['read']>[1]) => ({
            async *[Symbol.asyncIterator]() {
              reads += 1;
              if (reads === 2) {
                await store.delete(id);
                await write(b.events);
              }
              yield* store.read(sessionId, range);
            },
          });
        }
        const value = Reflect.get(store, key);
        return typeof value === 'function' ? value.bind(store) : value;
      },
    });
    const tuple = await new TidemarkSaver(swapping).getTuple(config('t'));
    expect(reads).toBeGreaterThanOrEqual(2);
    expect(tuple?.checkpoint.channel_values.big).toBe(noise(2, 3_000));
    expect(tuple?.checkpoint.id).toBe((await folded(target.store, 't'))?.checkpoint.id);
  });

  it('reads a small value put in an earlier batch from the copy stored with the checkpoint, in one lookup', async () => {
    const store = await backend.open();
    opened.push(store);
    const graph = stepGraph(new TidemarkSaver(store.store), 6);
    // `big` (2,000 characters, a few dozen deflated) is put at the start, a dozen batches back.
    await graph.invoke({ log: ['in'] }, { ...config('copies'), durability: 'sync' });
    const { store: counted, reads } = countingReads(store.store);
    const cold = await new TidemarkSaver(counted).getTuple(config('copies'));
    expect(reads()).toBe(1);
    expect(cold?.checkpoint.channel_values.big).toBe('x'.repeat(2_000));
    expect(cold).toEqual(await folded(store.store, 'copies'));
    // Each copy is a blob of the version it copies, which a fold keeps once: the same version
    // appears in more than one blob event, with the same value.
    const { events } = await store.store.load(sessionIdOfThread('copies'));
    const bigs = events.filter(
      (e) => e.type === 'langgraph/blob' && (e.data as { ch?: string }).ch === 'big',
    );
    expect(bigs.length).toBeGreaterThan(1);
    expect(new Set(bigs.map((e) => JSON.stringify((e.data as { value?: unknown }).value))).size).toBe(1);
    expect(new Set(bigs.map((e) => (e.data as { ver?: unknown }).ver)).size).toBe(1);
  });

  it('reads a log written before checkpoints were stored with copies of small values, and writes on', async () => {
    // Written by the previous version (1edcee7): the same graph shape, pointers to the one blob
    // of each version, no copies.
    const fixture = JSON.parse(
      readFileSync(new URL('./fixtures/thread-before-copies.json', import.meta.url), 'utf8'),
    ) as { attrs: Record<string, string>; events: SessionEvent[] };
    const store = await backend.open();
    opened.push(store);
    const thread = 'before-copies';
    const id = sessionIdOfThread(thread);
    await store.store.create({ id });
    await store.store.update(id, { attrs: fixture.attrs });
    await store.store.append(id, fixture.events);
    const { store: counted, reads } = countingReads(store.store);
    const { store: countedLoads, loads } = counting(counted);
    const cold = await new TidemarkSaver(countedLoads).getTuple(config(thread));
    // Not folded; `big`, put at the start, looked up by its seq.
    expect(loads()).toBe(0);
    expect(reads()).toBe(2);
    expect(cold?.checkpoint.channel_values).toMatchObject({ big: 'x'.repeat(2_000), n: 6 });
    expect(cold).toEqual(await folded(store.store, thread));
    const list = await collect(new TidemarkSaver(countedLoads).list(config(thread), { limit: 3 }));
    expect(list).toEqual(await foldedList(store.store, thread, 3));
    expect(loads()).toBe(0);
    // A new saver writes on: its checkpoint carries `big` again, read in one lookup.
    await stepGraph(new TidemarkSaver(store.store), 6).updateState(config(thread), { n: 7 });
    const { store: again, reads: readsAgain } = countingReads(store.store);
    const after = await new TidemarkSaver(again).getTuple(config(thread));
    expect(readsAgain()).toBe(1);
    expect(after?.checkpoint.channel_values).toMatchObject({ big: 'x'.repeat(2_000), n: 7 });
    expect(after).toEqual(await folded(store.store, thread));
    const walked = await collect(new TidemarkSaver(store.store).list(config(thread), { limit: 4 }));
    expect(walked).toEqual(await foldedList(store.store, thread, 4));
  });

  it('answers undefined for a namespace without checkpoints while another has one, and for a missing thread', async () => {
    const store = await backend.open();
    opened.push(store);
    await buildGraph(new TidemarkSaver(store.store)).invoke({ log: ['in'] }, config('ns'));
    const { store: counted, loads } = counting(store.store);
    expect(await new TidemarkSaver(counted).getTuple(config('ns', 'other'))).toBeUndefined();
    expect(await new TidemarkSaver(counted).getTuple(config('missing'))).toBeUndefined();
    expect(await new TidemarkSaver(store.store).getTuple(config('ns'))).toBeDefined();
    // Warm: the saver that holds the thread answers the same.
    const warm = new TidemarkSaver(store.store);
    expect(await warm.getTuple(config('ns'))).toBeDefined();
    expect(await warm.getTuple(config('ns', 'other'))).toBeUndefined();
    expect(loads()).toBeLessThanOrEqual(1);
  });
});

describe('a log written before the pointers existed', () => {
  it('is folded, and reads as it did', async () => {
    const store = await openMemoryStore();
    await buildGraph(new TidemarkSaver(store)).invoke({ log: ['in'] }, config('old'));
    const id = sessionIdOfThread('old');
    const { events, summary } = await store.load(id);
    // The same thread as the previous format wrote it: no `at`, `wat` or `langgraphLatest`.
    const old = await openMemoryStore();
    await old.create({ id });
    await old.update(id, { attrs: summary.attrs ?? {} });
    await old.append(id, events.map(withoutPointers));
    const { store: counted, loads } = counting(old);
    const tuple = await new TidemarkSaver(counted).getTuple(config('old'));
    expect(loads()).toBe(1);
    expect(tuple).toEqual(await new TidemarkSaver(store).getTuple(config('old')));
    // And a new saver writes on: its batches carry pointers again.
    const saver = new TidemarkSaver(old);
    await buildGraph(saver).invoke(new Command({ resume: 'x' }), config('old'));
    const { store: again, loads: loadsAgain } = counting(old);
    expect(await new TidemarkSaver(again).getTuple(config('old'))).toEqual(await folded(old, 'old'));
    expect(loadsAgain()).toBe(0);
  });
});

/** `length` characters that deflate hardly shrinks, the same for the same `seed`. */
function noise(seed: number, length: number): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  let state = seed;
  let out = '';
  for (let i = 0; i < length; i += 1) {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    out += alphabet[(state >>> 16) % 64];
  }
  return out;
}

function withoutPointers(event: SessionEvent): SessionEvent {
  const data = event.data as Record<string, unknown>;
  const { at: _at, ak: _ak, wat: _wat, prev: _prev, pw: _pw, k: _k, ...rest } = data;
  const { langgraphLatest: _latest, langgraphChain: _chain, ...plain } = rest;
  return { ...event, data: plain as SessionEvent['data'] };
}
