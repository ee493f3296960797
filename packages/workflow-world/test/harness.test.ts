// The fault harness over the World's workload (test/harness-workload.ts): one run through every
// kind of World event on JSONL (errno errors at every file-system operation through FaultyFs, and
// every crash state through CrashFs) and on SQLite (errors at every statement step through the
// store's step hook). A fault must reach the caller as a TidemarkError; after it is lifted, the
// live World, and a World over the store reopened, read every acknowledged event once and in
// order (at most the call in doubt after them), every acknowledged chunk, and run on to the end.
//
// The quick run samples the operations (every k-th, evenly, SAMPLED_RUNS per errno and mode) and
// the crash points; TIDEMARK_WORKFLOW_FAULTS=full sweeps every operation and every crash state.
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
import { checkRun, continueRun, Ledger, runWorkload } from './harness-workload.js';
import { newRunId } from './world-fixtures.js';

const FULL = process.env.TIDEMARK_WORKFLOW_FAULTS === 'full';
const ERRNOS: readonly ErrnoName[] = FULL ? ['EIO', 'ENOSPC', 'EACCES', 'EROFS', 'EPERM'] : ['EIO', 'ENOSPC'];
const SAMPLED_RUNS = 12;
const SAMPLED_CRASH_POINTS = 8;
// The JSONL harness driver's own opener: its writers stay held, so every run makes the same operations.
const openJsonl: OpenJsonlOn = (root, fs) => jsonlDriver().open({ root, fs });

/** The workload under the fault; once lifted, the checks on the live store, then on a reopened one. */
const workloadThenVerify = adapterWorkloadThenVerify(
  () => {
    const ledger = new Ledger();
    const runId = newRunId();
    return {
      run: (store) => runWorkload(store, runId, ledger),
      checkLive: (store) => checkRun(store, runId, ledger.snapshot(), 'live'),
      checkReopened: async (store) => [
        ...(await checkRun(store, runId, ledger.snapshot(), 'reopened')),
        ...(await continueRun(store, runId, ledger.snapshot(), 'reopened')),
      ],
    };
  },
  // Opening may fail under the fault, with a typed error (the store's own contract).
  { typedOpenError: false },
);

async function errorSweep(run: AdapterRun) {
  const totals = await adapterErrorSweep(run, { errnos: ERRNOS, sampledRuns: SAMPLED_RUNS, full: FULL });
  expect(totals.baseline.violations).toEqual([]);
  expect(totals.baseline.rejected).toBe(false);
  return { ...totals, rejected: totals.rejections };
}

describe('the World under storage faults', () => {
  it('JSONL, errno errors at file-system operations: an error, never a lost or reordered event', async () => {
    const totals = await errorSweep(jsonlAdapterRun(openJsonl, workloadThenVerify));
    console.info(
      `workflow-world faults, jsonl error sweep: ${totals.operations} fs operations per run, ${totals.runs} runs (${FULL ? 'full' : 'sampled'}), ${totals.rejected} rejected, ${totals.violations.length} violations`,
    );
    expect(totals.violations).toEqual([]);
    expect(totals.rejected).toBeGreaterThan(totals.runs / 4);
  }, 600_000);

  it('SQLite, errors at every statement step: an error, never a lost or reordered event', async () => {
    const totals = await errorSweep(engineAdapterRun(() => sqliteDriver().create(), workloadThenVerify));
    console.info(
      `workflow-world faults, sqlite error sweep: ${totals.operations} statement steps per run, ${totals.runs} runs (${FULL ? 'full' : 'sampled'}), ${totals.rejected} rejected, ${totals.violations.length} violations`,
    );
    expect(totals.violations).toEqual([]);
    expect(totals.rejected).toBeGreaterThan(totals.runs / 4);
  }, 600_000);

  it('JSONL, every crash state: the acknowledged events in order, the call in doubt at most, and the run goes on', async () => {
    const runId = newRunId();
    const ledger = new Ledger();
    const { points, outcome } = await recordAdapterCrashPoints(
      openJsonl,
      (store) => runWorkload(store, runId, ledger),
      () => ledger.snapshot(),
    );
    expect(outcome.violations).toEqual([]);
    expect(outcome.rejected).toBeUndefined();
    const { swept, states, violations } = await adapterCrashSweep(
      points,
      openJsonl,
      async (store, snapshot, where) => [
        ...(await checkRun(store, runId, snapshot, where)),
        ...(await continueRun(store, runId, snapshot, where)),
      ],
      { sampledPoints: SAMPLED_CRASH_POINTS, full: FULL },
    );
    console.info(
      `workflow-world faults, jsonl crash sweep: ${points.length} crash points, ${swept} swept (${FULL ? 'full' : 'sampled'}), ${states} crash states, ${violations.length} violations`,
    );
    expect(violations).toEqual([]);
    expect(states).toBeGreaterThan(swept);
  }, 600_000);
});
