// Focused on one goal of run.mjs, for iterating on it: the cold getTuple (new saver, new
// connection, store opened before timing) of the latest checkpoint of the bench's 1,000-checkpoint
// thread, TidemarkSaver on SQLite against SqliteSaver, one call per saver and round, the order
// rotating each round; medians and the median of per-round ratios. Each thread is built once.
//   node bench/cold-focus.mjs   (after a build)
//   FOCUS_ROUNDS: rounds (default 200).
//   FOCUS_DIST: another build's langgraph dist/index.js, run as "before" in the same rounds, on
//   the sqlite package beside it when there is one (a checkout of an earlier commit, built); it
//   reads the thread this build wrote, or with FOCUS_OWN=1 a thread it wrote itself (in its own
//   stored format).
//   FOCUS_LISTS=1: before each getTuple, the same saver's cold list of the whole thread and one
//   with a limit of 10, each on its own new saver, as in run.mjs's rounds, where each cold getTuple
//   follows the lists of the one before. That leaves the process's caches and heap as run.mjs
//   meets them: the ratio comes out higher than without.
//   FOCUS_JSONL=1: TidemarkSaver on JSONL (openJsonlStore, relaxed) as a third contender;
//   FOCUS_JSONL=only: that one in place of TidemarkSaver on SQLite.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { openJsonlStore } from '@tidemark/jsonl';
import { openSqliteStore } from '@tidemark/sqlite';
import { TidemarkSaver } from '../dist/index.js';
import { benchGraph } from './graph.mjs';

const ROUNDS = Number(process.env.FOCUS_ROUNDS ?? 200);
const CHECKPOINTS = 1000;
const BIG = 64 * 1024;
const config = { configurable: { thread_id: 'bench-thread' } };
const graph = (cp) => benchGraph(cp, CHECKPOINTS, BIG);
const RELAXED = { durability: 'relaxed', boundaryTypes: [] };
const work = mkdtempSync(join(tmpdir(), 'cold-focus-'));
const contenders = [
  {
    name: 'SqliteSaver',
    open: async () => {
      const saver = SqliteSaver.fromConnString(join(work, 'cp.db'));
      saver.setup();
      return { saver, close: async () => saver.db.close() };
    },
  },
  {
    name: 'tidemark',
    open: async () => {
      const store = await openSqliteStore({ path: join(work, 'store.db'), ...RELAXED });
      return { saver: new TidemarkSaver(store), close: () => store.close() };
    },
  },
];
if (process.env.FOCUS_JSONL === '1' || process.env.FOCUS_JSONL === 'only') {
  if (process.env.FOCUS_JSONL === 'only') contenders.pop();
  contenders.push({
    name: 'jsonl',
    open: async () => {
      const store = await openJsonlStore({ root: join(work, 'sessions'), ...RELAXED });
      return { saver: new TidemarkSaver(store), close: () => store.close() };
    },
  });
}
if (process.env.FOCUS_DIST) {
  const { TidemarkSaver: Before } = await import(pathToFileURL(process.env.FOCUS_DIST).href);
  // That build's own SQLite store (and core) when it sits in a checkout beside its langgraph package.
  const sqliteDist = join(process.env.FOCUS_DIST, '..', '..', '..', 'sqlite', 'dist', 'index.js');
  const { openSqliteStore: openBefore } = await import(pathToFileURL(sqliteDist).href).catch(() => ({
    openSqliteStore,
  }));
  contenders.push({
    name: 'before',
    open: async () => {
      const file = process.env.FOCUS_OWN === '1' ? 'before.db' : 'store.db';
      const store = await openBefore({ path: join(work, file), ...RELAXED });
      return { saver: new Before(store), close: () => store.close() };
    },
  });
}
// The savers that write a thread of their own.
const writers = process.env.FOCUS_OWN === '1' ? contenders : contenders.filter((c) => c.name !== 'before');
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
try {
  for (const c of writers) {
    const o = await c.open();
    await graph(o.saver).invoke({}, { ...config, recursionLimit: CHECKPOINTS + 10, durability: 'sync' });
    await o.close();
  }
  const times = Object.fromEntries(contenders.map((c) => [c.name, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (let i = 0; i < contenders.length; i++) {
      const c = contenders[(i + r) % contenders.length];
      if (process.env.FOCUS_LISTS === '1') {
        for (const limit of [undefined, 10]) {
          const l = await c.open();
          let count = 0;
          const ns = { configurable: { ...config.configurable, checkpoint_ns: '' } };
          for await (const _ of l.saver.list(ns, limit === undefined ? {} : { limit })) count++;
          if (count !== (limit ?? CHECKPOINTS)) throw new Error(`${c.name}: list gave ${count}`);
          await l.close();
        }
      }
      const o = await c.open();
      const t = performance.now();
      const tuple = await o.saver.getTuple(config);
      times[c.name].push(performance.now() - t);
      if (
        tuple.checkpoint.channel_values.n !== CHECKPOINTS - 3 ||
        tuple.checkpoint.channel_values.big.length !== BIG
      )
        throw new Error(`${c.name}: wrong tuple`);
      await o.close();
    }
  }
  const base = median(times.SqliteSaver);
  for (const c of contenders) {
    const m = median(times[c.name]);
    const ratios = times[c.name].map((t, i) => t / times.SqliteSaver[i]);
    console.log(
      `${c.name.padEnd(12)} median ${m.toFixed(3)} ms  ratio of medians ${(m / base).toFixed(2)}  median of per-round ratios ${median(ratios).toFixed(2)}`,
    );
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
