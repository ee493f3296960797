// A graph process killed with SIGKILL mid-run resumes from its last checkpoint: the thread's
// newest checkpoint is one the process wrote in full, and running on from it completes the count
// with every number exactly once (no step lost, none applied twice).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import type { SessionStore } from '@tidemark/core';
import { openJsonlStore } from '@tidemark/jsonl';
import { openSqliteStore } from '@tidemark/sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { TidemarkSaver } from '../src/index.js';

const CHILD = fileURLToPath(new URL('./fixtures/counting-graph.mjs', import.meta.url));
const STEPS = 150;

/** Runs the child until it has printed `step N` with N >= `atLeast`, then kills it; returns N. */
function runAndKill(kind: string, address: string, thread: string, atLeast: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, kind, address, thread, String(STEPS)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let seen = 0;
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.stdout.on('data', (chunk: Buffer) => {
      for (const match of chunk.toString().matchAll(/step (\d+)/g)) seen = Math.max(seen, Number(match[1]));
      if (seen >= atLeast) child.kill('SIGKILL');
    });
    child.on('exit', (_code, signal) => {
      if (signal === 'SIGKILL') resolve(seen);
      else reject(new Error(`child exited before the kill (seen ${seen}): ${stderr}`));
    });
  });
}

function countingGraph(store: SessionStore) {
  const State = Annotation.Root({
    numbers: Annotation<number[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
  });
  return new StateGraph(State)
    .addNode('count', (s) => ({ numbers: [s.numbers.length + 1] }))
    .addEdge(START, 'count')
    .addConditionalEdges('count', (s) => (s.numbers.length >= STEPS ? END : 'count'))
    .compile({ checkpointer: new TidemarkSaver(store) });
}

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe.each([
  {
    kind: 'jsonl',
    open: (address: string) => openJsonlStore({ root: address }),
    address: (dir: string) => dir,
  },
  {
    kind: 'sqlite',
    open: (address: string) => openSqliteStore({ path: address }),
    address: (dir: string) => join(dir, 'store.db'),
  },
])('a graph process killed mid-run ($kind)', ({ kind, open, address: addressIn }) => {
  it('resumes from its last checkpoint and completes the count exactly once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tidemark-langgraph-crash-'));
    dirs.push(dir);
    const address = addressIn(dir);
    const printed = await runAndKill(kind, address, 'crash-thread', 40);
    const store = await open(address);
    try {
      const graph = countingGraph(store);
      const config = { configurable: { thread_id: 'crash-thread' }, recursionLimit: STEPS * 4 };
      const atCrash = (await graph.getState(config)).values.numbers as number[];
      // With durability 'sync' every step the child reported was checkpointed before it was streamed.
      expect(atCrash.length).toBeGreaterThanOrEqual(printed);
      expect(atCrash).toEqual(Array.from({ length: atCrash.length }, (_, i) => i + 1));
      const final = await graph.invoke(null, config);
      expect(final.numbers).toEqual(Array.from({ length: STEPS }, (_, i) => i + 1));
    } finally {
      await store.close();
    }
  }, 60_000);
});
