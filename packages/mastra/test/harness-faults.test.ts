// The fault harness (@tidemark/faults) over the adapter's workload (harness-workload.ts): Mastra's
// memory and workflow calls through TidemarkMastraStore on JSONL (errno errors on every file-system
// operation through FaultyFs, every crash state through CrashFs) and on SQLite (errors at every
// statement step through the store's step hook). A fault must reach Mastra as a TidemarkError;
// after it is lifted and the store reopened, nothing acknowledged is missing or older, nothing
// never written is there, and the store takes the next turn (0 violations).
//
// The quick run samples the operations (every k-th, evenly, `SAMPLED_RUNS` per errno and mode) and
// the crash points; TIDEMARK_MASTRA_FAULTS=full sweeps every operation and every crash state.
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
import { checkStore, continueWork, Ledger, runWorkload } from './harness-workload.js';

const FULL = process.env.TIDEMARK_MASTRA_FAULTS === 'full';
const ERRNOS: readonly ErrnoName[] = FULL
  ? ['EIO', 'ENOSPC', 'EACCES', 'EROFS', 'EPERM']
  : ['EIO', 'ENOSPC', 'EACCES'];
const MODES = ['once', 'persistent'] as const;
const SAMPLED_RUNS = 10;
const SAMPLED_CRASH_POINTS = 6;
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
  return Array.from({ length: max }, (_, i) => Math.floor((i * count) / max));
}

/** The workload under the fault, then the checks on the live store once lifted and on a reopened one. */
async function workloadThenVerify(
  open: () => Promise<SessionStore>,
  lift: () => void,
  reopen: () => Promise<SessionStore>,
): Promise<Pick<RunResult, 'rejected' | 'violations'>> {
  const ledger = new Ledger();
  const violations: string[] = [];
  let rejected = false;
  let store: SessionStore | undefined;
  try {
    store = await open();
  } catch (error) {
    rejected = true;
    if (!(error instanceof Error && error.name === 'TidemarkError'))
      violations.push(`open rejected untyped: ${String(error)}`);
  }
  if (store !== undefined) {
    const outcome = await runWorkload(store, ledger);
    rejected = outcome.rejected !== undefined;
    violations.push(...outcome.violations);
    lift();
    violations.push(...(await checkStore(store, ledger.snapshot(), 'live store')));
    await store.close().catch(() => undefined);
  } else lift();
  const reopened = await reopen();
  try {
    violations.push(...(await checkStore(reopened, ledger.snapshot(), 'reopened')));
    violations.push(...(await continueWork(reopened, 'reopened')));
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

interface SweepTotals {
  operations: number;
  runs: number;
  errors: number;
  violations: string[];
}

async function errorSweep(run: (fault: Fault | undefined) => Promise<RunResult>): Promise<SweepTotals> {
  const baseline = await run(undefined);
  expect(baseline.violations).toEqual([]);
  expect(baseline.rejected).toBe(false);
  const totals: SweepTotals = { operations: baseline.operations, runs: 1, errors: 0, violations: [] };
  for (const errno of ERRNOS) {
    for (const mode of MODES) {
      for (const i of sample(baseline.operations, SAMPLED_RUNS)) {
        const fault: Fault = { at: i + 1, errno, mode };
        const result = await run(fault);
        totals.runs++;
        if (result.rejected) totals.errors++;
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

/** Runs the workload on CrashFs, freezing the disk (and the ledger) after every mutating operation. */
async function recordCrashPoints(): Promise<{ points: { point: CrashPoint; ledger: Ledger }[] }> {
  const ledger = new Ledger();
  const points: { point: CrashPoint; ledger: Ledger }[] = [];
  let recording = false;
  const crashFs: CrashFs = new CrashFs((_index, op) => {
    if (recording && MUTATING_OPS.has(op))
      points.push({ point: crashFs.crashPoint(op), ledger: ledger.snapshot() });
  });
  await crashFs.mkdir(ROOT, { recursive: true });
  crashFs.checkpoint();
  recording = true;
  const store = await openJsonlStore({ root: ROOT, fs: crashFs });
  const outcome = await runWorkload(store, ledger);
  expect(outcome.violations).toEqual([]);
  expect(outcome.rejected).toBeUndefined();
  await store.close();
  recording = false;
  return { points };
}

describe('Mastra storage on tidemark under storage faults', () => {
  it('JSONL, errno errors at file-system operations: an error to Mastra, never loss or absence', async () => {
    const totals = await errorSweep(jsonlRun);
    console.info(
      `mastra faults, jsonl error sweep: ${totals.operations} fs operations per run, ${totals.runs} runs (${FULL ? 'full' : 'sampled'}), ${totals.errors} errors to Mastra, ${totals.violations.length} violations`,
    );
    expect(totals.violations).toEqual([]);
    expect(totals.errors).toBeGreaterThan(totals.runs / 4);
  }, 600_000);

  it('SQLite, errors at every statement step: an error to Mastra, never loss or absence', async () => {
    const totals = await errorSweep(sqliteRun);
    console.info(
      `mastra faults, sqlite error sweep: ${totals.operations} statement steps per run, ${totals.runs} runs (${FULL ? 'full' : 'sampled'}), ${totals.errors} errors to Mastra, ${totals.violations.length} violations`,
    );
    expect(totals.violations).toEqual([]);
    expect(totals.errors).toBeGreaterThan(totals.runs / 4);
  }, 600_000);

  it('JSONL, every crash state: every acknowledged write there, the store takes the next turn', async () => {
    const { points } = await recordCrashPoints();
    const violations: string[] = [];
    let states = 0;
    const kept = sample(points.length, SAMPLED_CRASH_POINTS);
    for (const index of kept) {
      const { point, ledger } = points[index]!;
      for (const state of enumerateCrashStates(point)) {
        const where = `crash after op ${point.afterOp} (${point.op}), ${state.label}`;
        const store = await openJsonlStore({ root: ROOT, fs: materialize(state) });
        try {
          violations.push(...(await checkStore(store, ledger, where)));
          violations.push(...(await continueWork(store, where)));
        } finally {
          await store.close();
        }
        states++;
      }
    }
    console.info(
      `mastra faults, jsonl crash sweep: ${points.length} crash points, ${kept.length} swept (${FULL ? 'full' : 'sampled'}), ${states} crash states, ${violations.length} violations`,
    );
    expect(violations).toEqual([]);
    expect(states).toBeGreaterThan(kept.length);
  }, 600_000);
});
