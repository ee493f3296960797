// The fault sweeps of an adapter's own workload (langgraph, mastra, adk, workflow-world tests):
// errno errors at every file-system operation of a JSONL store (FaultyFs over memfs) or at every
// statement step of an engine store (its step hook), once or from there on, and every crash state
// of a JSONL store after each mutating operation (CrashFs). The adapter brings the workload and its
// checks; this module brings the stores, the faults, the sampling and the totals. It sees backends
// only through the openers and drivers it is given, as the layering of the test kits asks.
import { type FileSystem, isTidemarkError, type SessionStore } from '@tidemark/core';
import type { EngineStorage, StepInjector } from '../drivers/driver.js';
import { CrashFs } from '../fs/crash-fs.js';
import { type CrashPoint, enumerateCrashStates, materialize } from '../fs/crash-states.js';
import { type ErrnoName, makeErrnoError } from '../fs/errno.js';
import { FaultyFs } from '../fs/faulty-fs.js';
import { memfsFileSystem } from '../fs/memfs-fs.js';

/** Where the adapter sweeps keep the JSONL root on their in-memory disks. */
export const ADAPTER_SWEEP_ROOT = '/store/sessions';

/** Opens a JSONL store at `root` over `fs` (e.g. `(root, fs) => openJsonlStore({ root, fs })`). */
export type OpenJsonlOn = (root: string, fs: FileSystem) => Promise<SessionStore>;

/** One injected fault: storage call `at` (1-based) fails with `errno`, `once` or from there on. */
export interface AdapterFault {
  at: number;
  errno: ErrnoName;
  mode: 'once' | 'persistent';
}

/** What an adapter's workload-then-verify function found. */
export interface AdapterVerdict {
  /** The workload (or opening the store) failed under the fault, as it may with a typed error. */
  rejected: boolean;
  /** Broken invariants, one sentence each (empty: none). */
  violations: string[];
}

/**
 * The adapter's part of one run: open a store under the fault with `open`, run the workload,
 * call `lift()` (from then on no fault fires), check the live store, then check a store opened
 * with `reopen` over the same data, and close what it opened.
 */
export type WorkloadThenVerify = (
  open: () => Promise<SessionStore>,
  lift: () => void,
  reopen: () => Promise<SessionStore>,
) => Promise<AdapterVerdict>;

/** What an adapter's workload returns: `rejected` is set (to its error) when it was rejected. */
export interface AdapterOutcome {
  rejected?: unknown;
  violations: string[];
}

/** The adapter's workload and checks, made fresh for each run (its own ledger of what was acknowledged). */
export interface AdapterWorkloadSteps<O extends AdapterOutcome> {
  /** Runs the workload on the store opened under the fault. */
  run(store: SessionStore): Promise<O>;
  /** Once the fault is lifted: checks on the live store, with what `run` returned. */
  checkLive(store: SessionStore, outcome: O): Promise<string[]>;
  /** Checks on the store reopened over the same data (a write that must go on included). */
  checkReopened(store: SessionStore): Promise<string[]>;
}

/** Options of {@link adapterWorkloadThenVerify}. */
export interface AdapterVerifyOptions {
  /** Whether a store that fails to open under the fault counts as a rejected run (default true). */
  openFailureRejects?: boolean;
  /**
   * Whether an error opening the store is as it must be (default: a TidemarkError); any other is a
   * violation. `false` takes every error (for an adapter whose open errors the store's own tests judge).
   */
  typedOpenError?: ((error: unknown) => boolean) | false;
}

/**
 * The usual {@link WorkloadThenVerify}: open (an error there must be typed), run, lift, check the
 * live store and close it, then reopen, check and close.
 */
export function adapterWorkloadThenVerify<O extends AdapterOutcome>(
  makeSteps: () => AdapterWorkloadSteps<O>,
  options: AdapterVerifyOptions = {},
): WorkloadThenVerify {
  const typed = options.typedOpenError ?? isTidemarkError;
  return async (open, lift, reopen) => {
    const steps = makeSteps();
    const violations: string[] = [];
    let rejected = false;
    let store: SessionStore | undefined;
    try {
      store = await open();
    } catch (error) {
      if (typed !== false && !typed(error)) violations.push(`open rejected untyped: ${String(error)}`);
      rejected = options.openFailureRejects !== false;
    }
    if (store !== undefined) {
      const outcome = await steps.run(store);
      rejected = outcome.rejected !== undefined;
      violations.push(...outcome.violations);
      lift();
      violations.push(...(await steps.checkLive(store, outcome)));
      await store.close().catch(() => undefined);
    } else lift();
    const reopened = await reopen();
    try {
      violations.push(...(await steps.checkReopened(reopened)));
    } finally {
      await reopened.close();
    }
    return { rejected, violations };
  };
}

/** One run under one fault (or none). */
export interface AdapterRunResult extends AdapterVerdict {
  /** Storage calls (file-system operations or statement steps) made until the fault was lifted. */
  operations: number;
  /** How many of them met the injected fault. */
  injected: number;
}

/** A run of the adapter's workload under `fault` (none: the baseline). */
export type AdapterRun = (fault: AdapterFault | undefined) => Promise<AdapterRunResult>;

/**
 * Every k-th index of `count`, evenly, at most `max` of them; all of them when `full`.
 * @example sampleEvenly(10, 4, false) // [0, 2, 5, 7]
 */
export function sampleEvenly(count: number, max: number, full: boolean): number[] {
  const all = Array.from({ length: count }, (_, i) => i);
  if (full || count <= max) return all;
  return Array.from({ length: max }, (_, i) => Math.floor((i * count) / max));
}

/** A run on a JSONL store over FaultyFs over a fresh memfs disk; reopened over the bare disk. */
export function jsonlAdapterRun(openJsonl: OpenJsonlOn, verify: WorkloadThenVerify): AdapterRun {
  return async (fault) => {
    const base = memfsFileSystem();
    await base.mkdir(ADAPTER_SWEEP_ROOT, { recursive: true });
    const faulty = new FaultyFs(base, { plans: fault === undefined ? [] : [fault] });
    let operations = 0;
    const verdict = await verify(
      () => openJsonl(ADAPTER_SWEEP_ROOT, faulty.fs),
      () => {
        operations = faulty.trace.length;
        faulty.lift();
      },
      () => openJsonl(ADAPTER_SWEEP_ROOT, base),
    );
    return { ...verdict, operations, injected: faulty.injected };
  };
}

/**
 * A run on fresh engine storage (e.g. `() => sqliteDriver().create()`), faults thrown from its
 * step hook; reopened without the hook, and destroyed at the end.
 */
export function engineAdapterRun(
  createStorage: () => Promise<EngineStorage>,
  verify: WorkloadThenVerify,
): AdapterRun {
  return async (fault) => {
    const storage = await createStorage();
    let steps = 0;
    let injected = 0;
    let lifted = false;
    const inject: StepInjector = (step, detail) => {
      if (lifted) return;
      steps++;
      if (fault === undefined) return;
      if (fault.mode === 'persistent' ? steps >= fault.at : steps === fault.at) {
        injected++;
        throw makeErrnoError(fault.errno, step, detail);
      }
    };
    try {
      const verdict = await verify(
        () => storage.open(inject),
        () => {
          lifted = true;
        },
        () => storage.open(),
      );
      return { ...verdict, operations: steps, injected };
    } finally {
      await storage.destroy();
    }
  };
}

/** Options of {@link adapterErrorSweep}. */
export interface AdapterErrorSweepOptions {
  errnos: readonly ErrnoName[];
  /** Default `['once', 'persistent']`. */
  modes?: readonly AdapterFault['mode'][];
  /** Operations faulted per errno and mode, evenly spread (see {@link sampleEvenly}). */
  sampledRuns: number;
  /** Fault every operation instead. */
  full: boolean;
  /**
   * Count as a violation a run whose fault was within reach (`at <= operations`) yet never fired
   * and nothing was rejected (default true): such a run tested nothing.
   */
  unfiredIsViolation?: boolean;
}

/** Totals of {@link adapterErrorSweep}. */
export interface AdapterErrorSweepTotals {
  /** The run without a fault; when it was rejected or broke an invariant, nothing was swept. */
  baseline: AdapterRunResult;
  /** Storage calls of the baseline run: the operations the faults are placed at. */
  operations: number;
  /** Runs made, the baseline included. */
  runs: number;
  /** Faulted runs the adapter rejected. */
  rejections: number;
  /** Every faulted run's violations, each prefixed with its errno, mode and operation. */
  violations: string[];
}

/**
 * The error sweep: a baseline run, then one run per errno × mode × sampled operation of the
 * baseline. The caller asserts on the totals (no violations, the baseline clean, enough rejections).
 */
export async function adapterErrorSweep(
  run: AdapterRun,
  options: AdapterErrorSweepOptions,
): Promise<AdapterErrorSweepTotals> {
  const baseline = await run(undefined);
  const totals: AdapterErrorSweepTotals = {
    baseline,
    operations: baseline.operations,
    runs: 1,
    rejections: 0,
    violations: [],
  };
  if (baseline.rejected || baseline.violations.length > 0) return totals;
  for (const errno of options.errnos) {
    for (const mode of options.modes ?? (['once', 'persistent'] as const)) {
      for (const i of sampleEvenly(baseline.operations, options.sampledRuns, options.full)) {
        const fault: AdapterFault = { at: i + 1, errno, mode };
        const result = await run(fault);
        totals.runs++;
        if (result.rejected) totals.rejections++;
        const label = `${errno} ${mode} at operation ${fault.at}`;
        totals.violations.push(...result.violations.map((v) => `${label}: ${v}`));
        // A fault that fired may be absorbed (a read retried, a sync re-done) and not reach the caller;
        // one within reach that never fired and was not rejected tested nothing.
        const unfired = result.injected === 0 && !result.rejected && fault.at <= result.operations;
        if (unfired && options.unfiredIsViolation !== false)
          totals.violations.push(`${label}: the fault never fired`);
      }
    }
  }
  return totals;
}

/** Operations after which the crash states can differ from those after the previous operation. */
const MUTATING_OPS: ReadonlySet<string> = new Set([
  ...['open', 'write', 'truncate', 'datasync', 'sync', 'syncDir'],
  ...['link', 'rename', 'unlink', 'mkdir', 'rmdir'],
]);

/** A frozen disk, and the adapter's record of what was acknowledged by then. */
export interface RecordedCrashPoint<S> {
  point: CrashPoint;
  snapshot: S;
}

/** What {@link recordAdapterCrashPoints} recorded. */
export interface AdapterCrashRecording<S, O> {
  points: RecordedCrashPoint<S>[];
  /** What the workload returned (the caller asserts it ran clean). */
  outcome: O;
}

/**
 * Runs `workload` on a JSONL store over CrashFs (the root made durable first), freezing the disk
 * and `snapshot()` after every mutating operation; closes the store at the end.
 */
export async function recordAdapterCrashPoints<S, O>(
  openJsonl: OpenJsonlOn,
  workload: (store: SessionStore) => Promise<O>,
  snapshot: () => S,
): Promise<AdapterCrashRecording<S, O>> {
  const points: RecordedCrashPoint<S>[] = [];
  let recording = false;
  const crashFs: CrashFs = new CrashFs((_index, op) => {
    if (recording && MUTATING_OPS.has(op))
      points.push({ point: crashFs.crashPoint(op), snapshot: snapshot() });
  });
  await crashFs.mkdir(ADAPTER_SWEEP_ROOT, { recursive: true });
  crashFs.checkpoint();
  recording = true;
  const store = await openJsonl(ADAPTER_SWEEP_ROOT, crashFs);
  const outcome = await workload(store);
  await store.close();
  recording = false;
  return { points, outcome };
}

/** Options of {@link adapterCrashSweep}. */
export interface AdapterCrashSweepOptions {
  /** Crash points kept, evenly spread (see {@link sampleEvenly}); every state of each is checked. */
  sampledPoints: number;
  /** Keep every crash point instead. */
  full: boolean;
}

/** Totals of {@link adapterCrashSweep}. */
export interface AdapterCrashSweepTotals {
  /** Crash points recorded. */
  points: number;
  /** Crash points swept. */
  swept: number;
  /** Crash states checked. */
  states: number;
  /** Every state's violations, each prefixed with where it crashed. */
  violations: string[];
}

/**
 * The crash sweep: for every crash state of each kept point, opens a JSONL store over the state's
 * disk, runs `check(store, snapshot, where)` (the adapter's checks, and a write that must go on),
 * and closes the store.
 */
export async function adapterCrashSweep<S>(
  recorded: readonly RecordedCrashPoint<S>[],
  openJsonl: OpenJsonlOn,
  check: (store: SessionStore, snapshot: S, where: string) => Promise<string[]>,
  options: AdapterCrashSweepOptions,
): Promise<AdapterCrashSweepTotals> {
  const kept = sampleEvenly(recorded.length, options.sampledPoints, options.full);
  const totals: AdapterCrashSweepTotals = {
    points: recorded.length,
    swept: kept.length,
    states: 0,
    violations: [],
  };
  for (const index of kept) {
    const { point, snapshot } = recorded[index] as RecordedCrashPoint<S>;
    for (const state of enumerateCrashStates(point)) {
      const where = `crash after op ${point.afterOp} (${point.op}), ${state.label}`;
      const store = await openJsonl(ADAPTER_SWEEP_ROOT, materialize(state));
      try {
        totals.violations.push(...(await check(store, snapshot, where)));
      } finally {
        await store.close();
      }
      totals.states++;
    }
  }
  return totals;
}
