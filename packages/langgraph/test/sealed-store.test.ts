// TidemarkSaver over a sealed store, unchanged (issue 26: every adapter works over a sealed store):
// LangGraph's published validation suite on sealed memory and sealed JSONL, the StateGraph cases
// of ./state-graph.test.ts on sealed memory, JSONL and SQLite (./backends.js mocked so that each
// backend's store is sealed), and, on sealed JSONL and SQLite, a thread written by one saver that a
// new saver over a new store on the same files reads, continues, lists and deletes, with the
// marker string it wrote nowhere in the backend's files in clear.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import { isTidemarkError, type SessionStore } from '@tidemark/core';
import { openJsonlStore } from '@tidemark/jsonl';
import { Keyring, type KeyringInput, sealStore } from '@tidemark/sealed';
import { openSqliteStore } from '@tidemark/sqlite';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { TidemarkSaver } from '../src/index.js';
import { jsonl, memory } from './backends.js';
import { validateOn } from './validation.js';

vi.mock('./backends.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('./backends.js')>();
  const sealed = await import('@tidemark/sealed');
  const keys = { current: 'k1', keys: { k1: sealed.Keyring.generateKey() } };
  const seal = (backend: typeof original.memory) => ({
    name: `sealed ${backend.name}`,
    async open() {
      const opened = await backend.open();
      const store = sealed.sealStore(opened.store, { keys });
      return {
        ...opened,
        store,
        async close() {
          await store.close();
          await opened.close();
        },
      };
    },
  });
  return {
    ...original,
    memory: seal(original.memory),
    jsonl: seal(original.jsonl),
    sqlite: seal(original.sqlite),
  };
});

validateOn(memory);
validateOn(jsonl);
await import('./state-graph.test.js');

const MARKER = `marker-${Math.random().toString(36).slice(2)}-langgraph`;
const keys = { current: 'k1', keys: { k1: Keyring.generateKey() } };
const otherKeys = { current: 'k9', keys: { k9: Keyring.generateKey() } };

const State = Annotation.Root({
  notes: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
});

function graphOn(checkpointer: BaseCheckpointSaver) {
  return new StateGraph(State)
    .addNode('note', (s: { notes: string[] }) => ({ notes: [`seen ${s.notes.length}`] }))
    .addEdge(START, 'note')
    .addEdge('note', END)
    .compile({ checkpointer });
}

/** Every file under `dir`, as one string (latin1: byte for byte, for an ASCII marker). */
function bytesUnder(dir: string): string {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => readFileSync(join(entry.parentPath, entry.name)).toString('latin1'))
    .join('\n');
}

const fileBackends = [
  { name: 'JSONL', open: (dir: string) => openJsonlStore({ root: join(dir, 'sessions') }) },
  { name: 'SQLite', open: (dir: string) => openSqliteStore({ path: join(dir, 'sessions.db') }) },
];

describe.each(fileBackends)('TidemarkSaver over a sealed $name store', ({ open }) => {
  let dir: string;
  let stores: SessionStore[] = [];
  const closeAll = async () => {
    for (const store of stores.splice(0)) await store.close();
  };
  const sealedAt = async (k: KeyringInput | undefined = keys) => {
    const store = sealStore(await open(dir), { keys: k });
    stores.push(store);
    return store;
  };
  const config = (thread_id: string) => ({ configurable: { thread_id } });
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'tidemark-lg-sealed-'));
    stores = [];
  });
  afterEach(async () => {
    await closeAll();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a new saver over a new store reads, continues and lists the thread; no marker in clear', async () => {
    const first = await graphOn(new TidemarkSaver(await sealedAt())).invoke(
      { notes: [MARKER] },
      config('t-1'),
    );
    expect(first.notes).toEqual([MARKER, 'seen 1']);
    await graphOn(new TidemarkSaver(stores[0]!)).invoke({ notes: ['other'] }, config('t-2'));
    await closeAll(); // the first process ends

    const saver = new TidemarkSaver(await sealedAt());
    const graph = graphOn(saver);
    expect((await graph.getState(config('t-1'))).values.notes).toEqual([MARKER, 'seen 1']);
    const next = await graph.invoke({ notes: ['more'] }, config('t-1'));
    expect(next.notes).toEqual([MARKER, 'seen 1', 'more', 'seen 3']);
    const threads = new Set<string>();
    for await (const tuple of saver.list({})) threads.add(String(tuple.config.configurable?.thread_id));
    expect([...threads].sort()).toEqual(['t-1', 't-2']);
    await closeAll();

    const onDisk = bytesUnder(dir);
    expect(onDisk).toContain('tidemark:sealed');
    expect(onDisk).not.toContain(MARKER);
  });

  it('control: the same thread written unsealed has the marker in the files', async () => {
    const store = await open(dir);
    stores.push(store);
    await graphOn(new TidemarkSaver(store)).invoke({ notes: [MARKER] }, config('t-1'));
    await closeAll();
    expect(bytesUnder(dir)).toContain(MARKER);
  });

  it('answers CORRUPT, never an empty thread, when the keyring lacks the sealing key', async () => {
    await graphOn(new TidemarkSaver(await sealedAt())).invoke({ notes: [MARKER] }, config('t-1'));
    await closeAll();
    const saver = new TidemarkSaver(await sealedAt(otherKeys));
    const error = await saver.getTuple(config('t-1')).then(
      (tuple) => tuple,
      (e: unknown) => e,
    );
    expect(isTidemarkError(error, 'CORRUPT'), `expected CORRUPT, got ${String(error)}`).toBe(true);
  });

  it('deletes a thread: a new saver finds no checkpoint, the other thread stays', async () => {
    const saver = new TidemarkSaver(await sealedAt());
    await graphOn(saver).invoke({ notes: [MARKER] }, config('t-1'));
    await graphOn(saver).invoke({ notes: ['kept'] }, config('t-2'));
    await saver.deleteThread('t-1');
    await closeAll();
    const again = new TidemarkSaver(await sealedAt());
    expect(await again.getTuple(config('t-1'))).toBeUndefined();
    expect((await graphOn(again).getState(config('t-2'))).values.notes).toEqual(['kept', 'seen 1']);
  });
});
