// What a workflow's storage calls cost: runs of STEPS steps (each step_created, step_started,
// step_completed, as the runtime sends them), then a replay's read of the run's events, on this
// World over tidemark SQLite and JSONL (durability strict: every create on stable storage before
// it resolves) and on world-local's own Storage (a JSON file per event and per entity, no fsync),
// interleaved in ROUNDS rounds in one run. Reported: ms per events.create and per events.list of
// the whole run (medians), and the ratio to world-local measured in the same round.
//
//   pnpm --filter @tidemark/workflow-world bench      (builds first)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openJsonlStore } from '@tidemark/jsonl';
import { openSqliteStore } from '@tidemark/sqlite';
import { SPEC_VERSION_CURRENT } from '@workflow/world';
import { createWorld as createLocalWorld } from '@workflow/world-local';
import { createTidemarkWorld } from '../dist/index.js';

const STEPS = Number(process.env.BENCH_STEPS ?? 50);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const bytes = (s) => new TextEncoder().encode(s);
const v = SPEC_VERSION_CURRENT;
const queue = {
  queue: async () => ({ messageId: null }),
  createQueueHandler: () => async () => new Response(),
  getDeploymentId: async () => 'dpl',
};

async function workload(world) {
  const created = await world.events.create(null, {
    eventType: 'run_created',
    specVersion: v,
    eventData: { deploymentId: 'dpl', workflowName: 'bench', input: bytes('in') },
  });
  const runId = created.run.runId;
  await world.events.create(runId, { eventType: 'run_started', specVersion: v });
  let creates = 2;
  const t0 = performance.now();
  for (let i = 0; i < STEPS; i++) {
    const correlationId = `step_${i}`;
    await world.events.create(runId, {
      eventType: 'step_created',
      specVersion: v,
      correlationId,
      eventData: { stepName: 'add', input: bytes(`in-${i}`) },
    });
    await world.events.create(runId, { eventType: 'step_started', specVersion: v, correlationId });
    await world.events.create(runId, {
      eventType: 'step_completed',
      specVersion: v,
      correlationId,
      eventData: { result: bytes(`out-${i}`) },
    });
    creates += 3;
  }
  const t1 = performance.now();
  const listed = await world.events.list({ runId, pagination: { limit: 1000 } });
  const t2 = performance.now();
  if (listed.data.length !== creates) throw new Error(`listed ${listed.data.length} of ${creates} events`);
  return { create: (t1 - t0) / (STEPS * 3), list: t2 - t1 };
}

const subjects = {
  'world-local': async (dir) => ({ world: createLocalWorld({ dataDir: dir }), close: async () => undefined }),
  'tidemark sqlite': async (dir) => {
    const store = await openSqliteStore({ path: join(dir, 'runs.db') });
    return { world: createTidemarkWorld({ store, queue }), close: () => store.close() };
  },
  'tidemark jsonl': async (dir) => {
    const store = await openJsonlStore({ root: dir });
    return { world: createTidemarkWorld({ store, queue }), close: () => store.close() };
  },
};

const results = Object.fromEntries(
  Object.keys(subjects).map((name) => [name, { create: [], list: [], createRatio: [], listRatio: [] }]),
);
for (let round = 0; round < ROUNDS; round++) {
  const perRound = {};
  for (const [name, open] of Object.entries(subjects)) {
    const dir = mkdtempSync(join(tmpdir(), 'tidemark-ww-bench-'));
    try {
      const { world, close } = await open(dir);
      perRound[name] = await workload(world);
      await close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  for (const name of Object.keys(subjects)) {
    const r = perRound[name];
    const base = perRound['world-local'];
    results[name].create.push(r.create);
    results[name].list.push(r.list);
    results[name].createRatio.push(base.create / r.create);
    results[name].listRatio.push(base.list / r.list);
  }
}
console.log(
  `${STEPS} steps per run (${STEPS * 3 + 2} events), ${ROUNDS} rounds; speed-up = world-local time / subject time, median of per-round ratios`,
);
console.log('| subject | ms per events.create | speed-up | ms per events.list of the run | speed-up |');
console.log('|---|---|---|---|---|');
for (const [name, r] of Object.entries(results))
  console.log(
    `| ${name} | ${median(r.create).toFixed(3)} | ${median(r.createRatio).toFixed(2)}x | ${median(r.list).toFixed(2)} | ${median(r.listRatio).toFixed(2)}x |`,
  );
