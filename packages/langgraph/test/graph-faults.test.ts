// The fault harness over the saver's workload: a StateGraph run through TidemarkSaver on JSONL
// (errno errors on every file-system operation through FaultyFs, every crash state through
// CrashFs) and on SQLite (errors at every statement through the store's step hook). A fault must
// give the graph an error carrying a TidemarkError; after it is lifted and the store reopened, the
// thread's latest checkpoint is the last acknowledged one (or a later one in doubt), never older,
// never missing, and the graph runs on from it.
//
// The quick run samples the operations (every k-th, evenly, `SAMPLED_RUNS` per errno and mode) and
// the crash points; TIDEMARK_LANGGRAPH_FAULTS=full sweeps every operation and every crash state.

import { isTidemarkError, type SessionStore } from '@tidemark/core';
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
import { TidemarkSaver } from '../src/index.js';
import {
  checkColdMatchesFold,
  checkLatest,
  continueGraph,
  type LedgerSnapshot,
  PutLedger,
  runGraphWorkload,
} from './graph-fault-workload.js';

const FULL = process.env.TIDEMARK_LANGGRAPH_FAULTS === 'full';
const ERRNOS: readonly ErrnoName[] = FULL
  ? ['EIO', 'ENOSPC', 'EACCES', 'EROFS', 'EPERM']
  : ['EIO', 'ENOSPC', 'EACCES'];
const MODES = ['once', 'persistent'] as const;
/** Operations swept per errno and mode in the quick run. */
const SAMPLED_RUNS = 10;
/** Crash points kept in the quick run (every state of each). */
const SAMPLED_CRASH_POINTS = 6;
const ROOT = '/store/sessions';

/** One fault: call `at` (1-based) fails with `errno`, once or from there on. */
interface Fault {
  at: number;
  errno: ErrnoName;
  mode: (typeof MODES)[number];
}

/** What one run under a fault gave. */
interface RunResult {
  /** Storage operations (file-system calls or statements) the run made while the fault was armed. */
  operations: number;
  injected: number;
  graphRejected: boolean;
  violations: string[];
}

/** Every k-th of `count` items, evenly, at most `max` of them (all when sweeping in full). */
function sample(count: number, max: number): number[] {
  const all = Array.from({ length: count }, (_, i) => i);
  if (FULL || count <= max) return all;
  const step = count / max;
  return Array.from({ length: max }, (_, i) => Math.floor(i * step));
}

/** Workload under the fault, then the live saver's view once lifted, then a reopened store's. */
async function workloadThenVerify(
  open: () => Promise<SessionStore>,
  lift: () => void,
  reopen: () => Promise<SessionStore>,
): Promise<Pick<RunResult, 'graphRejected' | 'violations'>> {
  const ledger = new PutLedger();
  const violations: string[] = [];
  let graphRejected = false;
  let store: SessionStore | undefined;
  try {
    store = await open();
  } catch (error) {
    // Opening may fail under the fault; it must say so with a typed error.
    if (!isTidemarkError(error)) violations.push(`open rejected untyped: ${String(error)}`);
  }
  if (store !== undefined) {
    const outcome = await runGraphWorkload(store, ledger);
    graphRejected = outcome.rejected !== undefined;
    violations.push(...outcome.violations);
    lift();
    violations.push(...(await checkLatest(outcome.saver, ledger, ledger.snapshot(), 'live saver', true)));
    await store.close().catch(() => undefined);
  } else lift();
  const reopened = await reopen();
  try {
    const snapshot = ledger.snapshot();
    violations.push(...(await checkLatest(new TidemarkSaver(reopened), ledger, snapshot, 'reopened', false)));
    violations.push(...(await checkColdMatchesFold(reopened, 'reopened')));
    violations.push(...(await continueGraph(reopened, 'reopened')));
  } finally {
    await reopened.close();
  }
  return { graphRejected, violations };
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

/** Totals of an error sweep. */
interface SweepTotals {
  operations: number;
  runs: number;
  graphErrors: number;
  violations: string[];
}

async function errorSweep(run: (fault: Fault | undefined) => Promise<RunResult>): Promise<SweepTotals> {
  const baseline = await run(undefined);
  expect(baseline.violations).toEqual([]);
  expect(baseline.graphRejected).toBe(false);
  const totals: SweepTotals = { operations: baseline.operations, runs: 1, graphErrors: 0, violations: [] };
  for (const errno of ERRNOS) {
    for (const mode of MODES) {
      for (const i of sample(baseline.operations, SAMPLED_RUNS)) {
        const fault: Fault = { at: i + 1, errno, mode };
        const result = await run(fault);
        totals.runs++;
        if (result.graphRejected) totals.graphErrors++;
        const label = `${errno} ${mode} at operation ${fault.at}`;
        totals.violations.push(...result.violations.map((v) => `${label}: ${v}`));
        // A fault that fired and was not absorbed (a read retried, a sync re-done) reached the graph.
        if (result.injected === 0 && !result.graphRejected && fault.at <= result.operations)
          totals.violations.push(`${label}: the fault never fired`);
      }
    }
  }
  return totals;
}

/** Operations after which the disk may differ from after the previous one. */
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
async function recordCrashPoints(): Promise<{
  ledger: PutLedger;
  points: { point: CrashPoint; snapshot: LedgerSnapshot }[];
}> {
  const ledger = new PutLedger();
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
  const outcome = await runGraphWorkload(store, ledger);
  expect(outcome.violations).toEqual([]);
  expect(outcome.rejected).toBeUndefined();
  await store.close();
  recording = false;
  return { ledger, points };
}

describe('a StateGraph on TidemarkSaver under storage faults', () => {
  it('JSONL, errno errors at file-system operations: an error, never an older or missing checkpoint', async () => {
    const totals = await errorSweep(jsonlRun);
    console.info(
      `langgraph faults, jsonl error sweep: ${totals.operations} fs operations per run, ${totals.runs} runs (${FULL ? 'full' : 'sampled'}), ${totals.graphErrors} graph errors, ${totals.violations.length} violations`,
    );
    expect(totals.violations).toEqual([]);
    expect(totals.graphErrors).toBeGreaterThan(totals.runs / 4);
  }, 300_000);

  it('SQLite, errors at every statement step: an error, never an older or missing checkpoint', async () => {
    const totals = await errorSweep(sqliteRun);
    console.info(
      `langgraph faults, sqlite error sweep: ${totals.operations} statement steps per run, ${totals.runs} runs (${FULL ? 'full' : 'sampled'}), ${totals.graphErrors} graph errors, ${totals.violations.length} violations`,
    );
    expect(totals.violations).toEqual([]);
    expect(totals.graphErrors).toBeGreaterThan(totals.runs / 4);
  }, 300_000);

  it('JSONL, every crash state: the latest checkpoint is the last acknowledged or a later one in doubt', async () => {
    const { ledger, points } = await recordCrashPoints();
    const violations: string[] = [];
    let states = 0;
    const kept = sample(points.length, SAMPLED_CRASH_POINTS);
    for (const index of kept) {
      const { point, snapshot } = points[index]!;
      for (const state of enumerateCrashStates(point)) {
        const where = `crash after op ${point.afterOp} (${point.op}), ${state.label}`;
        const store = await openJsonlStore({ root: ROOT, fs: materialize(state) });
        try {
          violations.push(...(await checkLatest(new TidemarkSaver(store), ledger, snapshot, where, false)));
          violations.push(...(await checkColdMatchesFold(store, where)));
          violations.push(...(await continueGraph(store, where)));
        } finally {
          await store.close();
        }
        states++;
      }
    }
    console.info(
      `langgraph faults, jsonl crash sweep: ${points.length} crash points, ${kept.length} swept (${FULL ? 'full' : 'sampled'}), ${states} crash states, ${violations.length} violations`,
    );
    expect(violations).toEqual([]);
    expect(states).toBeGreaterThan(kept.length);
  }, 300_000);
});
