// TidemarkSaver (on SQLite and on JSONL) against LangGraph's own SqliteSaver
// (@langchain/langgraph-checkpoint-sqlite) on the same StateGraph workload, in the same run,
// rounds interleaved (the order rotates each round), medians over rounds.
//
//   pnpm --filter @tidemark/langgraph bench      (or root `pnpm bench`; builds first)
//
// The graph: `init` writes one large channel (`big`, BENCH_BIG_BYTES, default 64 KiB) once, then
// `step` loops, each super-step changing a counter and a reducer channel (`total`), until the
// thread holds BENCH_CHECKPOINTS checkpoints (default 1,000). Measured per round and saver: the
// time inside put + putWrites per super-step (durability "sync", so calls do not overlap), the
// graph's wall time per super-step, getTuple of the latest checkpoint (warm: the saver that wrote
// the thread, median of BENCH_GET_CALLS; cold: a new saver on a new connection, median of
// BENCH_COLD_CALLS, default 3, each on its own new saver), list of the whole thread (warm: median
// of 3; cold: as getTuple), a cold list of the newest BENCH_LIST_LIMIT (default 10), and the bytes
// on disk once the store is closed.
//
// Durability: SqliteSaver sets journal_mode=WAL and leaves synchronous at better-sqlite3's
// default, NORMAL (read back below): commits are atomic but not fsynced. TidemarkSaver runs at the
// same level: durability 'relaxed' with no boundary types (SQLite: WAL, synchronous=NORMAL, never
// raised to FULL; JSONL: appends not fdatasynced one by one). Goals: bytes on disk >= 10x smaller
// than SqliteSaver, list >= 2x faster (warm and cold). Exit status 1 when a goal fails. Results go
// to stdout and <repo>/bench-results/langgraph.json.
//
// Once per saver and run (outside the rounds): a new saver's getTuple of the latest checkpoint of
// a BENCH_LONG_CHECKPOINTS thread (default 10,000; store opened before timing), against the same
// on the CHECKPOINTS thread (goal <= 1.5x); and the bytes on disk of a graph whose list channel
// grows by one entry every step for BENCH_GROW_CHECKPOINTS checkpoints (goal <= SqliteSaver's).
// The cold getTuple of the CHECKPOINTS thread is reported with the store opened before timing
// (goal <= 2x SqliteSaver's) and with the open. The first getTuple in a new Node process (child
// bench/first-call.mjs, BENCH_NEW_PROCESS_CALLS per round and saver, default 2): the same goal,
// where none of the saver's code has run yet, so that it is compiled as it first runs; reported
// also with the store's open and with the imports of the saver and store.
//
// BENCH_BEFORE=<label>=<path of another build's dist/index.js>[,...] (e.g. a worktree of an earlier
// commit, built): that build's TidemarkSaver runs in the same rounds, on SQLite and JSONL, as
// contenders "<label> sqlite" / "<label> jsonl", so that before and after meet the same machine
// load. Goals are checked for this build only; the once-per-run extras skip the earlier builds.
// By default an earlier build's saver runs on this build's stores; BENCH_BEFORE_STORES=own opens
// it on that build's own @tidemark/sqlite and @tidemark/jsonl (resolved from its dist path), so
// that before and after compare saver and stores together.

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { openJsonlStore } from '@tidemark/jsonl';
import { openSqliteStore } from '@tidemark/sqlite';
import { TidemarkSaver } from '../dist/index.js';
import { benchGraph } from './graph.mjs';

const size = (name, fallback) => Number(process.env[name] ?? fallback);
const ROUNDS = size('BENCH_ROUNDS', 5);
const CHECKPOINTS = size('BENCH_CHECKPOINTS', 1000);
const BIG_BYTES = size('BENCH_BIG_BYTES', 64 * 1024);
const GET_CALLS = size('BENCH_GET_CALLS', 200);
const WARM_LISTS = 3;
const COLD_CALLS = size('BENCH_COLD_CALLS', 3);
const THREAD = 'bench-thread';
const LONG_CHECKPOINTS = size('BENCH_LONG_CHECKPOINTS', 10_000);
const GROW_CHECKPOINTS = size('BENCH_GROW_CHECKPOINTS', 1000);
const LIST_LIMIT = size('BENCH_LIST_LIMIT', 10);
const NEW_PROCESS_CALLS = size('BENCH_NEW_PROCESS_CALLS', 2);

const here = dirname(fileURLToPath(import.meta.url));
const work = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), 'tidemark-langgraph-bench-'));
const now = () => performance.now();
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// Checkpoints of one run: the input's (step -1), the applied input's (step 0), init's, and one
// per `step` super-step.
const STEP_RUNS = CHECKPOINTS - 3;

function buildGraph(checkpointer, checkpoints = CHECKPOINTS) {
  return benchGraph(checkpointer, checkpoints, BIG_BYTES);
}

const Growing = Annotation.Root({
  items: Annotation({ reducer: (a, b) => [...a, ...b], default: () => [] }),
});

/** A graph whose list channel grows by one entry every step (so every checkpoint stores it whole). */
function buildGrowingGraph(checkpointer) {
  return new StateGraph(Growing)
    .addNode('step', (s) => ({ items: [{ step: s.items.length, text: `entry number ${s.items.length}` }] }))
    .addEdge(START, 'step')
    .addConditionalEdges('step', (s) => (s.items.length < GROW_CHECKPOINTS - 2 ? 'step' : END))
    .compile({ checkpointer });
}

/**
 * Once per saver and run: the cold getTuple of a LONG_CHECKPOINTS thread (store opened before
 * timing), and the bytes on disk of the growing-list graph.
 */
async function extras(contender) {
  const dir = join(work, `${contender.name.replace(/\W+/g, '-')}-long`);
  mkdirSync(dir, { recursive: true });
  const writer = await contender.open(dir);
  await buildGraph(writer.saver, LONG_CHECKPOINTS).invoke(
    {},
    { ...config, recursionLimit: LONG_CHECKPOINTS + 10, durability: 'sync' },
  );
  await writer.close();
  const coldGets = [];
  for (let i = 0; i < COLD_CALLS * 2; i++) {
    const cold = await contender.open(dir);
    const g = now();
    const tuple = await cold.saver.getTuple(config);
    coldGets.push(now() - g);
    if (tuple?.checkpoint.channel_values.n !== LONG_CHECKPOINTS - 3)
      throw new Error(`${contender.name}: long thread's latest is wrong`);
    await cold.close();
  }
  rmSync(dir, { recursive: true, force: true });
  const growDir = join(work, `${contender.name.replace(/\W+/g, '-')}-grow`);
  mkdirSync(growDir, { recursive: true });
  const grower = await contender.open(growDir);
  await buildGrowingGraph(grower.saver).invoke(
    { items: [] },
    { ...config, recursionLimit: GROW_CHECKPOINTS + 10, durability: 'sync' },
  );
  await grower.close();
  const growingBytes = bytesUnder(growDir);
  rmSync(growDir, { recursive: true, force: true });
  return { longGetTupleColdMs: median(coldGets), growingBytes };
}

/** Adds up the time spent inside put and putWrites of `saver`. */
function timeWrites(saver) {
  const spent = { put: 0, putWrites: 0, puts: 0 };
  for (const method of ['put', 'putWrites']) {
    const original = saver[method].bind(saver);
    saver[method] = async (...args) => {
      const t = now();
      try {
        return await original(...args);
      } finally {
        spent[method] += now() - t;
        if (method === 'put') spent.puts++;
      }
    };
  }
  return spent;
}

function bytesUnder(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, name) => sum + bytesUnder(join(path, name)), 0);
}

/** The savers compared: each `open(dir)` gives a saver and how to close what it opened. */
const RELAXED = { durability: 'relaxed', boundaryTypes: [] };

/**
 * The tidemark contenders of one build of TidemarkSaver, named `<label> sqlite` and `<label> jsonl`,
 * on `stores` (this build's by default).
 */
function tidemarkContenders(
  label,
  Saver,
  before = false,
  stores = { openSqliteStore, openJsonlStore },
  dist,
) {
  return [
    {
      name: `${label} sqlite`,
      before,
      child: ['sqlite', ...(dist === undefined ? [] : [dist])],
      async open(dir) {
        const store = await stores.openSqliteStore({ path: join(dir, 'store.db'), ...RELAXED });
        return {
          saver: new Saver(store),
          mode: 'relaxed: WAL, synchronous=NORMAL',
          close: () => store.close(),
        };
      },
    },
    {
      name: `${label} jsonl`,
      before,
      child: ['jsonl', ...(dist === undefined ? [] : [dist])],
      async open(dir) {
        const store = await stores.openJsonlStore({ root: join(dir, 'sessions'), ...RELAXED });
        return {
          saver: new Saver(store),
          mode: 'relaxed: appends not fdatasynced',
          close: () => store.close(),
        };
      },
    },
  ];
}

const BEFORE = [];
for (const entry of (process.env.BENCH_BEFORE ?? '').split(',').filter(Boolean)) {
  const cut = entry.indexOf('=');
  const [label, path] = cut > 0 ? [entry.slice(0, cut), entry.slice(cut + 1)] : ['before', entry];
  const { TidemarkSaver: Saver } = await import(pathToFileURL(path).href);
  let stores;
  if (process.env.BENCH_BEFORE_STORES === 'own') {
    // The stores that build's package depends on, as its own node_modules resolve them.
    const resolve = createRequire(pathToFileURL(path)).resolve;
    const [{ openSqliteStore }, { openJsonlStore }] = await Promise.all(
      ['@tidemark/sqlite', '@tidemark/jsonl'].map((name) => import(pathToFileURL(resolve(name)).href)),
    );
    stores = { openSqliteStore, openJsonlStore };
  }
  // The new-process calls always run that build on its own stores (the child resolves them from it).
  BEFORE.push(...tidemarkContenders(label, Saver, true, stores, path));
}

const CONTENDERS = [
  {
    name: 'SqliteSaver',
    child: ['SqliteSaver'],
    async open(dir) {
      const saver = SqliteSaver.fromConnString(join(dir, 'checkpoints.db'));
      saver.setup();
      const mode = `journal_mode=${saver.db.pragma('journal_mode', { simple: true })}, synchronous=${saver.db.pragma('synchronous', { simple: true })}`;
      return { saver, mode, close: async () => saver.db.close() };
    },
  },
  ...tidemarkContenders('tidemark', TidemarkSaver),
  ...BEFORE,
];

const config = { configurable: { thread_id: THREAD } };

async function listAll(saver, limit) {
  const t = now();
  let count = 0;
  // The root namespace named, as LangGraph's getStateHistory names it.
  const options = limit === undefined ? {} : { limit };
  for await (const _ of saver.list({ configurable: { ...config.configurable, checkpoint_ns: '' } }, options))
    count++;
  return { ms: now() - t, count };
}

async function latestOk(saver) {
  const tuple = await saver.getTuple(config);
  const values = tuple?.checkpoint.channel_values;
  if (values?.n !== STEP_RUNS || values.big?.length !== BIG_BYTES || values.total !== STEP_RUNS)
    throw new Error(`the latest checkpoint is not the end of the run: n=${values?.n}`);
}

/** One round of one saver: run the graph, read it back warm and cold, measure the disk. */
async function round(contender, r) {
  const dir = join(work, `${contender.name.replace(/\W+/g, '-')}-${r}`);
  mkdirSync(dir, { recursive: true });
  const opened = await contender.open(dir);
  const spent = timeWrites(opened.saver);
  const t = now();
  await buildGraph(opened.saver).invoke(
    {},
    { ...config, recursionLimit: CHECKPOINTS + 10, durability: 'sync' },
  );
  const superSteps = spent.puts - 1; // the input's checkpoint is no super-step
  const graphMs = now() - t;
  const gets = [];
  for (let i = 0; i < GET_CALLS; i++) {
    const g = now();
    await opened.saver.getTuple(config);
    gets.push(now() - g);
  }
  const warmLists = [];
  for (let i = 0; i < WARM_LISTS; i++) {
    const { ms, count } = await listAll(opened.saver);
    if (count !== CHECKPOINTS) throw new Error(`${contender.name}: list gave ${count} checkpoints`);
    warmLists.push(ms);
  }
  await opened.close();
  // Each cold call is one sample on a machine shared with other work: a few per round, each on a
  // new saver over a new connection, make the round's median less a matter of one unlucky call.
  const coldGets = [];
  const coldLists = [];
  const coldGetsWithOpen = [];
  const coldRecentLists = [];
  for (let i = 0; i < COLD_CALLS; i++) {
    const o = now();
    const coldGet = await contender.open(dir);
    const g = now();
    await latestOk(coldGet.saver);
    const done = now();
    coldGets.push(done - g);
    coldGetsWithOpen.push(done - o);
    await coldGet.close();
    const coldList = await contender.open(dir);
    const { ms, count } = await listAll(coldList.saver);
    if (count !== CHECKPOINTS) throw new Error(`${contender.name}: cold list gave ${count} checkpoints`);
    coldLists.push(ms);
    await coldList.close();
    const coldRecent = await contender.open(dir);
    const recent = await listAll(coldRecent.saver, LIST_LIMIT);
    if (recent.count !== LIST_LIMIT)
      throw new Error(`${contender.name}: cold list gave ${recent.count} checkpoints`);
    coldRecentLists.push(recent.ms);
    await coldRecent.close();
  }
  // The first getTuple in a new process (bench/first-call.mjs), where none of the saver's code
  // has run: what a serverless function or a new worker meets, JIT and caches cold.
  const firstCalls = [];
  for (let i = 0; i < NEW_PROCESS_CALLS; i++) {
    const out = execFileSync(process.execPath, [
      join(here, 'first-call.mjs'),
      contender.child[0],
      dir,
      ...contender.child.slice(1),
    ]);
    firstCalls.push(JSON.parse(out.toString()));
  }
  const bytes = bytesUnder(dir);
  rmSync(dir, { recursive: true, force: true });
  return {
    mode: opened.mode,
    writesPerStepMs: (spent.put + spent.putWrites) / superSteps,
    graphPerStepMs: graphMs / superSteps,
    getTupleWarmMs: median(gets),
    getTupleColdMs: median(coldGets),
    getTupleColdWithOpenMs: median(coldGetsWithOpen),
    getTupleNewProcessMs: median(firstCalls.map((c) => c.firstMs)),
    getTupleNewProcessWithOpenMs: median(firstCalls.map((c) => c.openMs + c.firstMs)),
    getTupleNewProcessWithImportMs: median(firstCalls.map((c) => c.importMs + c.openMs + c.firstMs)),
    listWarmMs: median(warmLists),
    listColdMs: median(coldLists),
    listRecentColdMs: median(coldRecentLists),
    bytes,
  };
}

const METRICS = [
  ['writesPerStepMs', 'put + putWrites per super-step (ms)'],
  ['graphPerStepMs', 'graph wall time per super-step (ms)'],
  ['getTupleWarmMs', 'getTuple latest, warm (ms)'],
  ['getTupleColdMs', 'getTuple latest, cold: new saver, store opened before timing (ms)'],
  ['getTupleColdWithOpenMs', 'getTuple latest, cold: new saver, with the store open (ms)'],
  ['getTupleNewProcessMs', 'getTuple latest, first call in a new process, store opened before timing (ms)'],
  ['getTupleNewProcessWithOpenMs', 'getTuple latest, first call in a new process, with the store open (ms)'],
  [
    'getTupleNewProcessWithImportMs',
    'getTuple latest, first call in a new process, with imports and open (ms)',
  ],
  ['listWarmMs', `list ${CHECKPOINTS} checkpoints, warm (ms)`],
  ['listColdMs', `list ${CHECKPOINTS} checkpoints, cold: new saver (ms)`],
  ['listRecentColdMs', `list with limit ${LIST_LIMIT}, cold: new saver (ms)`],
  ['bytes', `bytes on disk after ${CHECKPOINTS} checkpoints`],
];

try {
  const perRound = Object.fromEntries(CONTENDERS.map((c) => [c.name, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (let i = 0; i < CONTENDERS.length; i++) {
      const contender = CONTENDERS[(i + r) % CONTENDERS.length];
      const result = await round(contender, r);
      perRound[contender.name].push(result);
      process.stderr.write(
        `round ${r} ${contender.name}: ${result.writesPerStepMs.toFixed(3)} ms/step, list ${result.listWarmMs.toFixed(0)}/${result.listColdMs.toFixed(0)} ms, ${(result.bytes / 1e6).toFixed(2)} MB\n`,
      );
    }
  }
  const medians = Object.fromEntries(
    CONTENDERS.map((c) => [
      c.name,
      Object.fromEntries(METRICS.map(([key]) => [key, median(perRound[c.name].map((x) => x[key]))])),
    ]),
  );
  const base = medians.SqliteSaver;
  console.log(
    `LangGraph checkpointers, ${ROUNDS} interleaved rounds, medians; ${CHECKPOINTS} checkpoints, one unchanged ${BIG_BYTES}-byte channel`,
  );
  for (const c of CONTENDERS) console.log(`  ${c.name}: ${perRound[c.name][0].mode}`);
  console.table(
    METRICS.map(([key, label]) => ({
      measure: label,
      ...Object.fromEntries(CONTENDERS.map((c) => [c.name, Number(medians[c.name][key].toPrecision(4))])),
    })),
  );
  const extra = {};
  // BENCH_EXTRAS=0 skips them (a quicker run of the rounds alone; their goals are then not checked).
  const EXTRA_CONTENDERS = process.env.BENCH_EXTRAS === '0' ? [] : CONTENDERS.filter((c) => !c.before);
  for (const c of EXTRA_CONTENDERS) {
    extra[c.name] = await extras(c);
    process.stderr.write(`extras ${c.name}: ${JSON.stringify(extra[c.name])}\n`);
  }
  console.table(
    [
      ['longGetTupleColdMs', `getTuple latest, cold, ${LONG_CHECKPOINTS} checkpoints (ms)`],
      ['growingBytes', `bytes on disk, list channel growing every step, ${GROW_CHECKPOINTS} checkpoints`],
    ].map(([key, label]) => ({
      measure: label,
      ...Object.fromEntries(EXTRA_CONTENDERS.map((c) => [c.name, Number(extra[c.name][key].toPrecision(4))])),
    })),
  );
  const goals = [];
  for (const name of ['tidemark sqlite', 'tidemark jsonl']) {
    const m = medians[name];
    const x = extra[name];
    const coldRatio = m.getTupleColdMs / base.getTupleColdMs;
    goals.push({
      goal: `${name}: cold getTuple <= 2x SqliteSaver's (time ratio)`,
      ratio: coldRatio,
      pass: coldRatio <= 2,
    });
    const firstRatio = m.getTupleNewProcessMs / base.getTupleNewProcessMs;
    goals.push({
      goal: `${name}: first getTuple in a new process <= 2x SqliteSaver's (time ratio)`,
      ratio: firstRatio,
      pass: firstRatio <= 2,
    });
    for (const b of BEFORE.filter((c) => c.name.endsWith(name.slice('tidemark'.length)))) {
      for (const key of [
        'writesPerStepMs',
        'getTupleWarmMs',
        'getTupleColdMs',
        'getTupleNewProcessMs',
        'listWarmMs',
        'listColdMs',
        'listRecentColdMs',
      ]) {
        const ratio = m[key] / medians[b.name][key];
        goals.push({ goal: `${name}: ${key} against ${b.name} (time ratio, no goal)`, ratio, pass: true });
      }
    }
    if (x !== undefined) {
      const longRatio = x.longGetTupleColdMs / m.getTupleColdMs;
      goals.push({
        goal: `${name}: cold getTuple of ${LONG_CHECKPOINTS} <= 1.5x of ${CHECKPOINTS} (time ratio)`,
        ratio: longRatio,
        pass: longRatio <= 1.5,
      });
      const growRatio = x.growingBytes / extra.SqliteSaver.growingBytes;
      goals.push({
        goal: `${name}: growing-list bytes <= SqliteSaver's (bytes ratio)`,
        ratio: growRatio,
        pass: growRatio <= 1,
      });
    }
    const bytesRatio = base.bytes / m.bytes;
    goals.push({ goal: `${name}: bytes >= 10x smaller`, ratio: bytesRatio, pass: bytesRatio >= 10 });
    for (const key of ['listWarmMs', 'listColdMs']) {
      const ratio = base[key] / m[key];
      goals.push({ goal: `${name}: ${key} >= 2x faster`, ratio, pass: ratio >= 2 });
    }
    for (const key of [
      'writesPerStepMs',
      'getTupleWarmMs',
      'getTupleColdWithOpenMs',
      'getTupleNewProcessMs',
      'getTupleNewProcessWithOpenMs',
      'getTupleNewProcessWithImportMs',
      'listRecentColdMs',
    ]) {
      goals.push({ goal: `${name}: ${key} speed-up (no goal)`, ratio: base[key] / m[key], pass: true });
    }
  }
  console.table(
    goals.map((g) => ({ ...g, ratio: Number(g.ratio.toPrecision(3)), pass: g.pass ? 'pass' : 'FAIL' })),
  );
  const out = join(here, '..', '..', '..', 'bench-results');
  mkdirSync(out, { recursive: true });
  writeFileSync(
    join(out, 'langgraph.json'),
    `${JSON.stringify(
      {
        package: '@tidemark/langgraph',
        at: new Date().toISOString(),
        node: process.version,
        sizes: {
          ROUNDS,
          CHECKPOINTS,
          BIG_BYTES,
          GET_CALLS,
          WARM_LISTS,
          COLD_CALLS,
          NEW_PROCESS_CALLS,
          LONG_CHECKPOINTS,
          GROW_CHECKPOINTS,
          LIST_LIMIT,
        },
        modes: Object.fromEntries(CONTENDERS.map((c) => [c.name, perRound[c.name][0].mode])),
        beforeStores: process.env.BENCH_BEFORE_STORES === 'own' ? 'own' : 'this build',
        medians,
        extra,
        goals,
        perRound,
      },
      null,
      2,
    )}\n`,
  );
  console.log(`wrote ${join(out, 'langgraph.json')}`);
  process.exitCode = goals.every((g) => g.pass) ? 0 : 1;
} finally {
  rmSync(work, { recursive: true, force: true });
}
