// The fault harness (@tidemark/faults) over the adapter's workload (harness-workload.ts): Mastra's
// memory and workflow calls through TidemarkMastraStore on JSONL (errno errors on every file-system
// operation through FaultyFs, every crash state through CrashFs) and on SQLite (errors at every
// statement step through the store's step hook). A fault must reach Mastra as a TidemarkError;
// after it is lifted and the store reopened, nothing acknowledged is missing or older, nothing
// never written is there, and the store takes the next turn (0 violations).
//
// The quick run samples the operations (every k-th, evenly, `SAMPLED_RUNS` per errno and mode) and
// the crash points; TIDEMARK_MASTRA_FAULTS=full sweeps every operation and every crash state.
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
import { checkStore, continueWork, Ledger, runWorkload } from './harness-workload.js';

const FULL = process.env.TIDEMARK_MASTRA_FAULTS === 'full';
const ERRNOS: readonly ErrnoName[] = FULL
  ? ['EIO', 'ENOSPC', 'EACCES', 'EROFS', 'EPERM']
  : ['EIO', 'ENOSPC', 'EACCES'];
const SAMPLED_RUNS = 10;
const SAMPLED_CRASH_POINTS = 6;
// The JSONL harness driver's own opener: its writers stay held, so every run makes the same operations.
const openJsonl: OpenJsonlOn = (root, fs) => jsonlDriver().open({ root, fs });

/** The workload under the fault, then the checks on the live store once lifted and on a reopened one. */
const workloadThenVerify = adapterWorkloadThenVerify(
  () => {
    const ledger = new Ledger();
    return {
      run: (store) => runWorkload(store, ledger),
      checkLive: (store) => checkStore(store, ledger.snapshot(), 'live store'),
      checkReopened: async (store) => [
        ...(await checkStore(store, ledger.snapshot(), 'reopened')),
        ...(await continueWork(store, 'reopened')),
      ],
    };
  },
  { typedOpenError: (error) => error instanceof Error && error.name === 'TidemarkError' },
);

async function errorSweep(run: AdapterRun) {
  const totals = await adapterErrorSweep(run, { errnos: ERRNOS, sampledRuns: SAMPLED_RUNS, full: FULL });
  expect(totals.baseline.violations).toEqual([]);
  expect(totals.baseline.rejected).toBe(false);
  return { ...totals, errors: totals.rejections };
}

describe('Mastra storage on tidemark under storage faults', () => {
  it('JSONL, errno errors at file-system operations: an error to Mastra, never loss or absence', async () => {
    const totals = await errorSweep(jsonlAdapterRun(openJsonl, workloadThenVerify));
    console.info(
      `mastra faults, jsonl error sweep: ${totals.operations} fs operations per run, ${totals.runs} runs (${FULL ? 'full' : 'sampled'}), ${totals.errors} errors to Mastra, ${totals.violations.length} violations`,
    );
    expect(totals.violations).toEqual([]);
    expect(totals.errors).toBeGreaterThan(totals.runs / 4);
  }, 600_000);

  it('SQLite, errors at every statement step: an error to Mastra, never loss or absence', async () => {
    const totals = await errorSweep(engineAdapterRun(() => sqliteDriver().create(), workloadThenVerify));
    console.info(
      `mastra faults, sqlite error sweep: ${totals.operations} statement steps per run, ${totals.runs} runs (${FULL ? 'full' : 'sampled'}), ${totals.errors} errors to Mastra, ${totals.violations.length} violations`,
    );
    expect(totals.violations).toEqual([]);
    expect(totals.errors).toBeGreaterThan(totals.runs / 4);
  }, 600_000);

  it('JSONL, every crash state: every acknowledged write there, the store takes the next turn', async () => {
    const ledger = new Ledger();
    const { points, outcome } = await recordAdapterCrashPoints(
      openJsonl,
      (store) => runWorkload(store, ledger),
      () => ledger.snapshot(),
    );
    expect(outcome.violations).toEqual([]);
    expect(outcome.rejected).toBeUndefined();
    const { swept, states, violations } = await adapterCrashSweep(
      points,
      openJsonl,
      async (store, acknowledged, where) => [
        ...(await checkStore(store, acknowledged, where)),
        ...(await continueWork(store, where)),
      ],
      { sampledPoints: SAMPLED_CRASH_POINTS, full: FULL },
    );
    console.info(
      `mastra faults, jsonl crash sweep: ${points.length} crash points, ${swept} swept (${FULL ? 'full' : 'sampled'}), ${states} crash states, ${violations.length} violations`,
    );
    expect(violations).toEqual([]);
    expect(states).toBeGreaterThan(swept);
  }, 600_000);
});
