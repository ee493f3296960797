// A saver keeps the decoding of large (deflated) channel values between its reads, keyed by the
// stored form its folded state holds, so a warm getTuple or list does not inflate the same value
// again. What it hands out stays what a new saver reads: an object value is a fresh object on every
// read, a value rewritten by another saver is read anew, and the kept decodings stay within a budget.

import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { type Checkpoint, emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';
import { openMemoryStore } from '@tidemark/memory';
import { describe, expect, it } from 'vitest';
import { TidemarkSaver } from '../src/index.js';
import { DecodedValues } from '../src/tuples.js';
import type { SerializedValue } from '../src/values.js';

const meta = { source: 'loop' as const, step: 0, parents: {} };
const config = (thread: string) => ({ configurable: { thread_id: thread, checkpoint_ns: '' } });

/** A value far over the deflate threshold that deflates well: stored deflated. */
const bigText = (mark: string) => `${mark}:${'y'.repeat(8_000)}`;
const bigObject = (mark: string) => ({
  mark,
  rows: Array.from({ length: 400 }, (_, i) => ({ i, text: 'row' })),
});

function checkpoint(values: Record<string, unknown>, versions: Record<string, number>): Checkpoint {
  return { ...emptyCheckpoint(), id: uuid6(-1), channel_values: values, channel_versions: versions };
}

describe('decoded channel values kept by a saver', () => {
  it('read the same values warm as a new saver reads them, an object fresh on every read', async () => {
    const store = await openMemoryStore();
    const saver = new TidemarkSaver(store);
    await saver.put(
      config('t'),
      checkpoint({ text: bigText('a'), obj: bigObject('a') }, { text: 1, obj: 1 }),
      meta,
      { text: 1, obj: 1 },
    );
    const first = await saver.getTuple(config('t'));
    const second = await saver.getTuple(config('t'));
    const cold = await new TidemarkSaver(store).getTuple(config('t'));
    expect(first?.checkpoint.channel_values).toEqual({ text: bigText('a'), obj: bigObject('a') });
    expect(second?.checkpoint.channel_values).toEqual(cold?.checkpoint.channel_values);
    // A caller changing what one read gave cannot change what the next read gives.
    const obj = first?.checkpoint.channel_values.obj as ReturnType<typeof bigObject>;
    expect(second?.checkpoint.channel_values.obj).not.toBe(obj);
    obj.rows.length = 0;
    expect((await saver.getTuple(config('t')))?.checkpoint.channel_values.obj).toEqual(bigObject('a'));
  });

  it('read a value another saver deleted and rewrote as the new one', async () => {
    const store = await openMemoryStore();
    const a = new TidemarkSaver(store);
    const b = new TidemarkSaver(store);
    await a.put(config('t'), checkpoint({ text: bigText('first') }, { text: 1 }), meta, { text: 1 });
    expect((await a.getTuple(config('t')))?.checkpoint.channel_values.text).toBe(bigText('first'));
    await b.deleteThread('t');
    // Same channel, same version, same length: only the stored bytes differ.
    await b.put(config('t'), checkpoint({ text: bigText('again') }, { text: 1 }), meta, { text: 1 });
    expect((await a.getTuple(config('t')))?.checkpoint.channel_values.text).toBe(bigText('again'));
  });

  it('keep a warm list of an unchanged large channel equal to a new saver’s', async () => {
    const State = Annotation.Root({ big: Annotation<string>(), n: Annotation<number>() });
    const store = await openMemoryStore();
    const saver = new TidemarkSaver(store);
    await new StateGraph(State)
      .addNode('init', () => ({ big: bigText('list'), n: 0 }))
      .addNode('step', (s) => ({ n: s.n + 1 }))
      .addEdge(START, 'init')
      .addEdge('init', 'step')
      .addConditionalEdges('step', (s) => (s.n < 5 ? 'step' : END))
      .compile({ checkpointer: saver })
      .invoke({}, { configurable: { thread_id: 'g' } });
    const collect = async (s: TidemarkSaver) => {
      const out = [];
      for await (const tuple of s.list(config('g'))) out.push(tuple);
      return out;
    };
    const warm = await collect(saver);
    expect(await collect(saver)).toEqual(warm);
    expect(await collect(new TidemarkSaver(store))).toEqual(warm);
    expect(warm.filter((t) => t.checkpoint.channel_values.big === bigText('list')).length).toBeGreaterThan(5);
  });

  it('keep decodings within the budget, the least recently used dropped first', () => {
    const decoded = new DecodedValues();
    const form = (): SerializedValue => ({ t: 'json', z: 'x' });
    const text = (chars: number) => 'a'.repeat(chars);
    const [a, b, c, huge] = [form(), form(), form(), form()];
    const budget = 16 * 1024 * 1024;
    decoded.set({ value: a, bytes: text(budget / 2) });
    decoded.set({ value: b, bytes: text(budget / 4) });
    expect(decoded.get(a)?.value).toBe(a); // a is now the most recently used
    decoded.set({ value: c, bytes: text(budget / 2) });
    expect(decoded.get(b)).toBeUndefined();
    expect(decoded.get(a)?.value).toBe(a);
    expect(decoded.get(c)?.value).toBe(c);
    decoded.set({ value: huge, bytes: text(budget + 1) });
    expect(decoded.get(huge)).toBeUndefined();
    expect(decoded.get(c)?.value).toBe(c);
  });
});
