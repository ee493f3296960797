// The fault harness over the adapter's workload (harness-workload.ts): an ADK app's sessions and
// shared state through TidemarkSessionService on JSONL (errno errors at file-system operations
// through FaultyFs, every crash state of sampled crash points through CrashFs) and on SQLite
// (errors at statement steps through the store's step hook). A fault must reach the caller as a
// TidemarkError; after it is lifted and the store reopened, every acknowledged event is there once
// and in order (the one in doubt whole or absent), every acknowledged state and shared key holds,
// a read of the log's end agrees with the whole session, and the store takes the next event.
//
// The quick run samples the operations (SAMPLED_RUNS per errno and mode) and the crash points;
// TIDEMARK_ADK_FAULTS=full sweeps every operation and every crash point.
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
import { checkStore, continueWorkload, Ledger, runWorkload } from './harness-workload.js';

const FULL = process.env.TIDEMARK_ADK_FAULTS === 'full';
const ERRNOS: readonly ErrnoName[] = FULL ? ['EIO', 'ENOSPC', 'EACCES', 'EROFS', 'EPERM'] : ['EIO', 'ENOSPC'];
const SAMPLED_RUNS = 12;
const SAMPLED_CRASH_POINTS = 6;
// The JSONL harness driver's own opener: its writers stay held, so every run makes the same operations.
const openJsonl: OpenJsonlOn = (root, fs) => jsonlDriver().open({ root, fs });

const workloadThenVerify = adapterWorkloadThenVerify(() => {
  const ledger = new Ledger();
  return {
    run: (store) => runWorkload(store, ledger),
    checkLive: (store) => checkStore(store, ledger.snapshot(), 'live store'),
    checkReopened: async (store) => [
      ...(await checkStore(store, ledger.snapshot(), 'reopened')),
      ...(await continueWorkload(store, ledger.snapshot(), 'reopened')),
    ],
  };
});

async function errorSweep(run: AdapterRun) {
  // The fault-never-fired check is not asked for here: this test never made it.
  const totals = await adapterErrorSweep(run, {
    errnos: ERRNOS,
    sampledRuns: SAMPLED_RUNS,
    full: FULL,
    unfiredIsViolation: false,
  });
  expect(totals.baseline.violations).toEqual([]);
  expect(totals.baseline.rejected).toBe(false);
  return totals;
}

describe('ADK sessions on TidemarkSessionService under storage faults', () => {
  it('JSONL, errno errors at file-system operations: a typed error, never a lost or doubled event', async () => {
    const totals = await errorSweep(jsonlAdapterRun(openJsonl, workloadThenVerify));
    console.info(
      `adk faults, jsonl error sweep: ${totals.operations} fs operations per run, ${totals.runs} runs, ${totals.rejections} rejections, ${totals.violations.length} violations`,
    );
    expect(totals.violations).toEqual([]);
    expect(totals.rejections).toBeGreaterThan(totals.runs / 4);
  }, 600_000);

  it('SQLite, errors at statement steps: a typed error, never a lost or doubled event', async () => {
    const totals = await errorSweep(engineAdapterRun(() => sqliteDriver().create(), workloadThenVerify));
    console.info(
      `adk faults, sqlite error sweep: ${totals.operations} statement steps per run, ${totals.runs} runs, ${totals.rejections} rejections, ${totals.violations.length} violations`,
    );
    expect(totals.violations).toEqual([]);
    expect(totals.rejections).toBeGreaterThan(totals.runs / 4);
  }, 600_000);

  it('JSONL, every crash state of sampled crash points: every acknowledged event and shared key', async () => {
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
      async (store, snapshot, where) => [
        ...(await checkStore(store, snapshot, where)),
        ...(await continueWorkload(store, snapshot, where)),
      ],
      { sampledPoints: SAMPLED_CRASH_POINTS, full: FULL },
    );
    console.info(
      `adk faults, jsonl crash sweep: ${points.length} crash points, ${swept} swept, ${states} crash states, ${violations.length} violations`,
    );
    expect(violations).toEqual([]);
    expect(states).toBeGreaterThan(swept);
  }, 600_000);
});
