// The fault harness over the saver's workload: a StateGraph run through TidemarkSaver on JSONL
// (errno errors on every file-system operation through FaultyFs, every crash state through
// CrashFs) and on SQLite (errors at every statement through the store's step hook). A fault must
// give the graph an error carrying a TidemarkError; after it is lifted and the store reopened, the
// thread's latest checkpoint is the last acknowledged one (or a later one in doubt), never older,
// never missing, and the graph runs on from it.
//
// The quick run samples the operations (every k-th, evenly, `SAMPLED_RUNS` per errno and mode) and
// the crash points; TIDEMARK_LANGGRAPH_FAULTS=full (or TIDEMARK_FULL=1) sweeps every operation and every crash state.

import {
  type AdapterRun,
  adapterCrashSweep,
  adapterErrorSweep,
  adapterWorkloadThenVerify,
  type ErrnoName,
  engineAdapterRun,
  jsonlAdapterRun,
  type OpenJsonlOn,
  recordAdapterCrashPoints,
} from '@tidemark/faults';
import { jsonlDriver } from '@tidemark/jsonl/harness';
import { sqliteDriver } from '@tidemark/sqlite/harness';
import { describe, expect, it } from 'vitest';
import { TidemarkSaver } from '../src/index.js';
import {
  checkColdMatchesFold,
  checkLatest,
  continueGraph,
  PutLedger,
  runGraphWorkload,
} from './graph-fault-workload.js';

const FULL = process.env.TIDEMARK_LANGGRAPH_FAULTS === 'full' || process.env.TIDEMARK_FULL === '1';
const ERRNOS: readonly ErrnoName[] = FULL
  ? ['EIO', 'ENOSPC', 'EACCES', 'EROFS', 'EPERM']
  : ['EIO', 'ENOSPC', 'EACCES'];
// The quick run's samples fit `pnpm test`'s 12-minute budget on two cores (10 runs and 6 crash
// points made this file 3.6 minutes of a loaded CI run); the full sweep is one variable away.
/** Operations swept per errno and mode in the quick run. */
const SAMPLED_RUNS = 6;
/** Crash points kept in the quick run (every state of each). */
const SAMPLED_CRASH_POINTS = 4;
// The JSONL harness driver's own opener: its writers stay held, so every run makes the same operations.
const openJsonl: OpenJsonlOn = (root, fs) => jsonlDriver().open({ root, fs });

/** Workload under the fault, then the live saver's view once lifted, then a reopened store's. */
const workloadThenVerify = adapterWorkloadThenVerify(
  () => {
    const ledger = new PutLedger();
    return {
      run: (store) => runGraphWorkload(store, ledger),
      checkLive: (_store, outcome) =>
        checkLatest(outcome.saver, ledger, ledger.snapshot(), 'live saver', true),
      checkReopened: async (store) => [
        ...(await checkLatest(new TidemarkSaver(store), ledger, ledger.snapshot(), 'reopened', false)),
        ...(await checkColdMatchesFold(store, 'reopened')),
        ...(await continueGraph(store, 'reopened')),
      ],
    };
  },
  // Opening may fail under the fault (with a typed error); only the graph's errors count as rejections.
  { openFailureRejects: false },
);

/** The error sweep; a graph error is how a rejected run shows. */
async function errorSweep(run: AdapterRun) {
  const totals = await adapterErrorSweep(run, { errnos: ERRNOS, sampledRuns: SAMPLED_RUNS, full: FULL });
  expect(totals.baseline.violations).toEqual([]);
  expect(totals.baseline.rejected).toBe(false);
  return { ...totals, graphErrors: totals.rejections };
}

describe('a StateGraph on TidemarkSaver under storage faults', () => {
  it('JSONL, errno errors at file-system operations: an error, never an older or missing checkpoint', async () => {
    const totals = await errorSweep(jsonlAdapterRun(openJsonl, workloadThenVerify));
    console.info(
      `langgraph faults, jsonl error sweep: ${totals.operations} fs operations per run, ${totals.runs} runs (${FULL ? 'full' : 'sampled'}), ${totals.graphErrors} graph errors, ${totals.violations.length} violations`,
    );
    expect(totals.violations).toEqual([]);
    expect(totals.graphErrors).toBeGreaterThan(totals.runs / 4);
  }, 300_000);

  it('SQLite, errors at every statement step: an error, never an older or missing checkpoint', async () => {
    const totals = await errorSweep(engineAdapterRun(() => sqliteDriver().create(), workloadThenVerify));
    console.info(
      `langgraph faults, sqlite error sweep: ${totals.operations} statement steps per run, ${totals.runs} runs (${FULL ? 'full' : 'sampled'}), ${totals.graphErrors} graph errors, ${totals.violations.length} violations`,
    );
    expect(totals.violations).toEqual([]);
    expect(totals.graphErrors).toBeGreaterThan(totals.runs / 4);
  }, 300_000);

  it('JSONL, every crash state: the latest checkpoint is the last acknowledged or a later one in doubt', async () => {
    const ledger = new PutLedger();
    const { points, outcome } = await recordAdapterCrashPoints(
      openJsonl,
      (store) => runGraphWorkload(store, ledger),
      () => ledger.snapshot(),
    );
    expect(outcome.violations).toEqual([]);
    expect(outcome.rejected).toBeUndefined();
    const { swept, states, violations } = await adapterCrashSweep(
      points,
      openJsonl,
      async (store, snapshot, where) => [
        ...(await checkLatest(new TidemarkSaver(store), ledger, snapshot, where, false)),
        ...(await checkColdMatchesFold(store, where)),
        ...(await continueGraph(store, where)),
      ],
      { sampledPoints: SAMPLED_CRASH_POINTS, full: FULL },
    );
    console.info(
      `langgraph faults, jsonl crash sweep: ${points.length} crash points, ${swept} swept (${FULL ? 'full' : 'sampled'}), ${states} crash states, ${violations.length} violations`,
    );
    expect(violations).toEqual([]);
    expect(states).toBeGreaterThan(swept);
  }, 300_000);
});
