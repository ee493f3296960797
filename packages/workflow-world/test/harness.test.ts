// The fault harness over the World's workload (test/harness-workload.ts): one run through every
// kind of World event on JSONL (errno errors at every file-system operation through FaultyFs, and
// every crash state through CrashFs) and on SQLite (errors at every statement step through the
// store's step hook). A fault must reach the caller as a TidemarkError; after it is lifted, the
// live World, and a World over the store reopened, read every acknowledged event once and in
// order (at most the call in doubt after them), every acknowledged chunk, and run on to the end.
//
// The quick run samples the operations (every k-th, evenly, SAMPLED_RUNS per errno and mode) and
// the crash points; TIDEMARK_WORKFLOW_FAULTS=full sweeps every operation and every crash state.
import type { SessionStore } from '@tidemark/core';
import {
  CrashFs,
  type CrashPoint,
  type ErrnoName,
  enumerateCrashStates,
  FaultyFs,
  makeErrnoError,
  materialize,
  memfsFileSystem,
} from '@tidemark/faults';
import { openJsonlStore } from '@tidemark/jsonl';
import { sqliteDriver } from '@tidemark/sqlite/harness';
import { describe, expect, it } from 'vitest';
import { checkRun, continueRun, Ledger, type LedgerSnapshot, runWorkload } from './harness-workload.js';
import { newRunId } from './world-fixtures.js';

const FULL = process.env.TIDEMARK_WORKFLOW_FAULTS === 'full';
const ERRNOS: readonly ErrnoName[] = FULL ? ['EIO', 'ENOSPC', 'EACCES', 'EROFS', 'EPERM'] : ['EIO', 'ENOSPC'];
const MODES = ['once', 'persistent'] as const;
const SAMPLED_RUNS = 12;
const SAMPLED_CRASH_POINTS = 8;
const ROOT = '/store/sessions';

interface Fault {
  at: number;
  errno: ErrnoName;
  mode: (typeof MODES)[number];
}
interface RunResult {
  operations: number;
  injected: number;
  rejected: boolean;
  violations: string[];
}

function sample(count: number, max: number): number[] {
  const all = Array.from({ length: count }, (_, i) => i);
  if (FULL || count <= max) return all;
  const step = count / max;
  return Array.from({ length: max }, (_, i) => Math.floor(i * step));
}

/** The workload under the fault; once lifted, the checks on the live store, then on a reopened one. */
async function workloadThenVerify(
  open: () => Promise<SessionStore>,
  lift: () => void,
  reopen: () => Promise<SessionStore>,
): Promise<Pick<RunResult, 'rejected' | 'violations'>> {
  const runId = newRunId();
  const ledger = new Ledger();
  const violations: string[] = [];
  let rejected = false;
  let store: SessionStore | undefined;
  try {
    store = await open();
  } catch {
    rejected = true; // opening may fail under the fault, with a typed error (the store's own contract)
  }
  if (store !== undefined) {
    const outcome = await runWorkload(store, runId, ledger);
    rejected = outcome.rejected !== undefined;
    violations.push(...outcome.violations);
    lift();
    violations.push(...(await checkRun(store, runId, ledger.snapshot(), 'live')));
    await store.close().catch(() => undefined);
  } else lift();
  const reopened = await reopen();
  try {
    violations.push(...(await checkRun(reopened, runId, ledger.snapshot(), 'reopened')));
    violations.push(...(await continueRun(reopened, runId, ledger.snapshot(), 'reopened')));
  } finally {
    await reopened.close();
  }
  return { rejected, violations };
}

async function jsonlRun(fault: Fault | undefined): Promise<RunResult> {
  const base = memfsFileSystem();
  await base.mkdir(ROOT, { recursive: true });
  const faulty = new FaultyFs(base, { plans: fault === undefined ? [] : [fault] });
  let operations = 0;
  const result = await workloadThenVerify(
    () => openJsonlStore({ root: ROOT, fs: faulty.fs }),
    () => {
      operations = faulty.trace.length;
      faulty.lift();
    },
    () => openJsonlStore({ root: ROOT, fs: base }),
  );
  return { ...result, operations, injected: faulty.injected };
}

async function sqliteRun(fault: Fault | undefined): Promise<RunResult> {
  const storage = await sqliteDriver().create();
  let steps = 0;
  let injected = 0;
  let lifted = false;
  const inject = (step: string, detail?: string) => {
    if (lifted) return;
    steps++;
    if (fault === undefined) return;
    if (fault.mode === 'persistent' ? steps >= fault.at : steps === fault.at) {
      injected++;
      throw makeErrnoError(fault.errno, step, detail);
    }
  };
  try {
    const result = await workloadThenVerify(
      () => storage.open(inject),
      () => {
        lifted = true;
      },
      () => storage.open(),
    );
    return { ...result, operations: steps, injected };
  } finally {
    await storage.destroy();
  }
}

async function errorSweep(run: (fault: Fault | undefined) => Promise<RunResult>) {
  const baseline = await run(undefined);
  expect(baseline.violations).toEqual([]);
  expect(baseline.rejected).toBe(false);
  const totals = { operations: baseline.operations, runs: 1, rejected: 0, violations: [] as string[] };
  for (const errno of ERRNOS) {
    for (const mode of MODES) {
      for (const i of sample(baseline.operations, SAMPLED_RUNS)) {
        const fault: Fault = { at: i + 1, errno, mode };
        const result = await run(fault);
        totals.runs++;
        if (result.rejected) totals.rejected++;
        const label = `${errno} ${mode} at operation ${fault.at}`;
        totals.violations.push(...result.violations.map((v) => `${label}: ${v}`));
        if (result.injected === 0 && !result.rejected && fault.at <= result.operations)
          totals.violations.push(`${label}: the fault never fired`);
      }
    }
  }
  return totals;
}

const MUTATING_OPS = new Set([
  'open',
  'write',
  'truncate',
  'datasync',
  'sync',
  'syncDir',
  'link',
  'rename',
  'unlink',
  'mkdir',
  'rmdir',
]);

async function recordCrashPoints(runId: string) {
  const ledger = new Ledger();
  const points: { point: CrashPoint; snapshot: LedgerSnapshot }[] = [];
  let recording = false;
  const crashFs: CrashFs = new CrashFs((_index, op) => {
    if (recording && MUTATING_OPS.has(op))
      points.push({ point: crashFs.crashPoint(op), snapshot: ledger.snapshot() });
  });
  await crashFs.mkdir(ROOT, { recursive: true });
  crashFs.checkpoint();
  recording = true;
  const store = await openJsonlStore({ root: ROOT, fs: crashFs });
  const outcome = await runWorkload(store, runId, ledger);
  expect(outcome.violations).toEqual([]);
  expect(outcome.rejected).toBeUndefined();
  await store.close();
  recording = false;
  return points;
}

describe('the World under storage faults', () => {
  it('JSONL, errno errors at file-system operations: an error, never a lost or reordered event', async () => {
    const totals = await errorSweep(jsonlRun);
    console.info(
      `workflow-world faults, jsonl error sweep: ${totals.operations} fs operations per run, ${totals.runs} runs (${FULL ? 'full' : 'sampled'}), ${totals.rejected} rejected, ${totals.violations.length} violations`,
    );
    expect(totals.violations).toEqual([]);
    expect(totals.rejected).toBeGreaterThan(totals.runs / 4);
  }, 600_000);

  it('SQLite, errors at every statement step: an error, never a lost or reordered event', async () => {
    const totals = await errorSweep(sqliteRun);
    console.info(
      `workflow-world faults, sqlite error sweep: ${totals.operations} statement steps per run, ${totals.runs} runs (${FULL ? 'full' : 'sampled'}), ${totals.rejected} rejected, ${totals.violations.length} violations`,
    );
    expect(totals.violations).toEqual([]);
    expect(totals.rejected).toBeGreaterThan(totals.runs / 4);
  }, 600_000);

  it('JSONL, every crash state: the acknowledged events in order, the call in doubt at most, and the run goes on', async () => {
    const runId = newRunId();
    const points = await recordCrashPoints(runId);
    const violations: string[] = [];
    let states = 0;
    const kept = sample(points.length, SAMPLED_CRASH_POINTS);
    for (const index of kept) {
      const { point, snapshot } = points[index] as (typeof points)[number];
      for (const state of enumerateCrashStates(point)) {
        const where = `crash after op ${point.afterOp} (${point.op}), ${state.label}`;
        const store = await openJsonlStore({ root: ROOT, fs: materialize(state) });
        try {
          violations.push(...(await checkRun(store, runId, snapshot, where)));
          violations.push(...(await continueRun(store, runId, snapshot, where)));
        } finally {
          await store.close();
        }
        states++;
      }
    }
    console.info(
      `workflow-world faults, jsonl crash sweep: ${points.length} crash points, ${kept.length} swept (${FULL ? 'full' : 'sampled'}), ${states} crash states, ${violations.length} violations`,
    );
    expect(violations).toEqual([]);
    expect(states).toBeGreaterThan(kept.length);
  }, 600_000);
});
