// A real LangGraph StateGraph (reducer channel, parallel tasks, Send, interrupt() and
// Command({ resume }), getStateHistory, a fork from an earlier checkpoint) gives the same states on
// TidemarkSaver as on LangGraph's own MemorySaver, on every file backend and in memory.

import {
  Annotation,
  Command,
  END,
  interrupt,
  MemorySaver,
  Send,
  START,
  StateGraph,
  type StateSnapshot,
} from '@langchain/langgraph';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import { afterEach, describe, expect, it } from 'vitest';
import { TidemarkSaver } from '../src/index.js';
import { type Backend, jsonl, memory, type OpenedStore, sqlite } from './backends.js';

const State = Annotation.Root({
  log: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
  big: Annotation<string>(),
  answer: Annotation<string>(),
});

function buildGraph(checkpointer: BaseCheckpointSaver) {
  return new StateGraph(State)
    .addNode('start', () => ({ log: ['start'], big: 'x'.repeat(2_000) }))
    .addNode('left', () => ({ log: ['left'] }))
    .addNode('right', () => ({ log: ['right'] }))
    .addNode('fan', (s: { log: string[] }) => ({ log: [`fan:${s.log.length}`] }))
    .addNode('ask', () => {
      const answer = interrupt('what next?') as string;
      return { log: [`ask:${answer}`], answer };
    })
    .addNode('finish', () => ({ log: ['finish'] }))
    .addEdge(START, 'start')
    .addEdge('start', 'left')
    .addEdge('start', 'right')
    .addConditionalEdges('left', (s) => [new Send('fan', s), new Send('fan', { ...s, log: [] })])
    .addEdge(['right', 'fan'], 'ask')
    .addEdge('ask', 'finish')
    .addEdge('finish', END)
    .compile({ checkpointer });
}

/** `value` without interrupt ids, which derive from checkpoint ids (random per run). */
function withoutInterruptIds(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutInterruptIds);
  if (typeof value !== 'object' || value === null) return value;
  const entries = Object.entries(value).filter(([key]) => !(key === 'id' && 'value' in value));
  return Object.fromEntries(entries.map(([key, v]) => [key, withoutInterruptIds(v)]));
}

/** The parts of a snapshot that do not depend on checkpoint ids or times. */
function comparable(snapshot: StateSnapshot) {
  return {
    values: withoutInterruptIds(snapshot.values),
    next: snapshot.next,
    step: snapshot.metadata?.step,
    source: snapshot.metadata?.source,
    hasParent: snapshot.parentConfig !== undefined,
    tasks: snapshot.tasks.map((t) => ({ name: t.name, interrupts: t.interrupts.map((i) => i.value) })),
  };
}

/** Runs the scenario and returns everything observable about it. */
async function scenario(checkpointer: BaseCheckpointSaver) {
  const graph = buildGraph(checkpointer);
  const config = { configurable: { thread_id: 'thread/with spaces ✓' } };
  const first = await graph.invoke({ log: ['input'] }, config);
  const interrupted = comparable(await graph.getState(config));
  const resumed = await graph.invoke(new Command({ resume: 'yes' }), config);
  const history: StateSnapshot[] = [];
  for await (const snapshot of graph.getStateHistory(config)) history.push(snapshot);
  // Fork: go back to the checkpoint where `ask` was about to run, change the state, answer differently.
  const before = history.find((s) => s.next.length === 1 && s.next[0] === 'ask');
  if (before === undefined) throw new Error('no checkpoint before ask');
  const forkConfig = await graph.updateState(before.config, { log: ['edited'] }, 'right');
  await graph.invoke(null, forkConfig);
  const forked = await graph.invoke(new Command({ resume: 'no' }), config);
  const after: StateSnapshot[] = [];
  for await (const snapshot of graph.getStateHistory(config)) after.push(snapshot);
  return {
    first: first.log,
    interrupted,
    resumed: withoutInterruptIds(resumed),
    history: history.map(comparable),
    forked: withoutInterruptIds(forked),
    after: after.map(comparable),
  };
}

describe.each<Backend>([memory, jsonl, sqlite])('a StateGraph on TidemarkSaver ($name)', (backend) => {
  let opened: OpenedStore | undefined;
  afterEach(async () => {
    await opened?.close();
    opened = undefined;
  });

  it('gives the same states, history and fork as MemorySaver', async () => {
    opened = await backend.open();
    const expected = await scenario(new MemorySaver());
    const actual = await scenario(new TidemarkSaver(opened.store));
    expect(actual).toEqual(expected);
    expect(expected.after.length).toBeGreaterThan(expected.history.length);
    expect(actual.resumed).toMatchObject({ answer: 'yes' });
    expect(actual.forked).toMatchObject({ answer: 'no' });
  });

  it('a second saver on the same store resumes the interrupted thread', async () => {
    opened = await backend.open();
    const config = { configurable: { thread_id: 't1' } };
    await buildGraph(new TidemarkSaver(opened.store)).invoke({ log: ['input'] }, config);
    const resumed = await buildGraph(new TidemarkSaver(opened.store)).invoke(
      new Command({ resume: 'later' }),
      config,
    );
    expect(resumed.answer).toBe('later');
    expect(resumed.log.at(-1)).toBe('finish');
  });
});
