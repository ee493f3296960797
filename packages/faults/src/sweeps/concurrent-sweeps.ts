// The concurrent-writer probe (concurrent.ts) inside the error and crash sweeps: the same faults
// as the single-writer sweeps (an errno at every storage operation or engine step, once and
// persistent; a power loss after every change of a CrashFs), now met while two store instances
// race for one session. The quick run samples the faults and crash points evenly.
import type { SessionStore } from '@tidemark/core';
import type { EngineHarnessDriver, FsHarnessDriver } from '../drivers/driver.js';
import {
  CrashFs,
  type CrashPoint,
  type CrashStateLimits,
  enumerateCrashStates,
  materialize,
} from '../fs/crash-fs.js';
import type { ErrnoName } from '../fs/errno.js';
import { type FaultPlan, FaultyFs, SYNC_OPS } from '../fs/faulty-fs.js';
import { memfsFileSystem } from '../fs/memfs-fs.js';
import type { ReportBuilder } from '../report/report.js';
import { RaceModel } from '../verdicts/concurrent-model.js';
import { checkQuarantine, filesUnder, quarantineCheckApplies } from '../verdicts/quarantine.js';
import { CONCURRENT_CELL, checkRacersAfter, runRace } from '../workload/concurrent.js';
import { Checker } from '../workload/runner.js';
import { inSample, modeClass, type SweepMode } from './mode.js';
import { StepFaults } from './step-faults.js';
import { type ErrorFault, errorFaultClass, type Progress, planErrorSweep, SWEEP_ROOT } from './sweeps.js';

/** Faults of the concurrent error sweep in a quick run, spread evenly over all of them. */
export const QUICK_CONCURRENT_FAULTS = 24;

/** Crash points of the concurrent crash sweep in a quick run, spread evenly over the workload. */
export const QUICK_CONCURRENT_CRASH_POINTS = 4;

/** Crash states per crash point in a quick run, spread evenly over those enumerated. */
export const QUICK_CONCURRENT_STATES_PER_POINT = 30;

/** The report row of the race under the error sweep's faults. */
export const CONCURRENT_ERRORS_CELL = `${CONCURRENT_CELL} (injected errors)`;
/** The report row of the race without a fault (the error sweep's baseline). */
export const CONCURRENT_BASELINE_CELL = `${CONCURRENT_CELL} (no fault)`;
/** The report row of the race's crash states (fs drivers). */
export const CONCURRENT_CRASH_CELL = `${CONCURRENT_CELL} (power loss)`;

/** What the concurrent sweeps need of the harness settings. */
export interface ConcurrentSweepOptions {
  errnos: readonly ErrnoName[];
  persistentErrnos: readonly ErrnoName[];
  quick: boolean;
  mode: SweepMode;
  progress?: Progress;
}

/** `count` of `items`, evenly spread, first and last included (all when there are fewer). Pure. */
export function spread<T>(items: readonly T[], count: number): T[] {
  if (items.length <= count) return [...items];
  // One of many: the middle, not the first (a crash before anything was written proves little).
  if (count <= 1) return count === 1 ? [items[Math.floor(items.length / 2)]!] : [];
  return Array.from({ length: count }, (_, i) => items[Math.round((i * (items.length - 1)) / (count - 1))]!);
}

/** The faults to run: all of the plan (full run, sampled by mode), or an even sample (quick). */
function chooseFaults(all: ErrorFault[], options: ConcurrentSweepOptions): ErrorFault[] {
  const { quick, mode } = options;
  if (!quick) return all.filter((_, i) => inSample(mode, i));
  return spread(all, Math.ceil(QUICK_CONCURRENT_FAULTS / mode.sample));
}

/**
 * Opens two instances (`open` twice) and runs the race, then lifts the fault and checks both
 * instances and a fresh reopen (`openFresh`). An instance that cannot be opened under the fault
 * is replaced, after the lift, by a new one.
 */
async function raceThenCheck(
  open: () => Promise<SessionStore>,
  openFresh: () => Promise<SessionStore>,
  lift: () => void,
): Promise<Checker> {
  const check = new Checker();
  const model = new RaceModel();
  const stores: SessionStore[] = [];
  for (let i = 0; i < 2; i++) {
    const opened = await check.attempt(`open instance ${i}`, open);
    if (opened.ok) stores.push(opened.value);
    else check.openAnswer(opened.error);
  }
  if (stores.length === 2) await runRace(stores, model, check);
  lift();
  while (stores.length < 2) {
    const opened = await check.attempt('open an instance after lift', openFresh);
    if (!opened.ok) {
      check.violation('not-writable', `the store cannot be opened after the fault was lifted`);
      for (const store of stores) await check.attempt('close', () => store.close());
      return check;
    }
    stores.push(opened.value);
  }
  await checkRacersAfter(stores, model, check, openFresh, false);
  return check;
}

/** One race on an fs driver under `plans` (FaultyFs over memfs); returns the check and the trace. */
async function raceFsOnce(driver: FsHarnessDriver, plans: FaultPlan[], mode: SweepMode) {
  const base = memfsFileSystem();
  await base.mkdir(SWEEP_ROOT, { recursive: true });
  const faulty = new FaultyFs(base, { plans });
  const { durability } = mode;
  let liftedAt = 0;
  const check = await raceThenCheck(
    () => driver.open({ fs: faulty.fs, root: SWEEP_ROOT, durability }),
    () => driver.open({ fs: base, root: SWEEP_ROOT, durability }),
    () => {
      faulty.lift();
      liftedAt = faulty.trace.length;
    },
  );
  // The instances keep using the FaultyFs after the lift; only operations before it can fail.
  return { check, trace: faulty.trace.slice(0, liftedAt), injected: faulty.injected };
}

/** One race on an engine driver, its step injector failing steps as `fault` says (shared by both instances). */
async function raceEngineOnce(driver: EngineHarnessDriver, fault: ErrorFault | undefined, mode: SweepMode) {
  const storage = await driver.create({ durability: mode.durability });
  const faults = new StepFaults(fault);
  try {
    const check = await raceThenCheck(
      () => storage.open(faults.inject),
      () => storage.open(),
      () => faults.lift(),
    );
    return { check, steps: faults.steps, injected: faults.injected };
  } finally {
    await storage.destroy();
  }
}

/**
 * The concurrent probe in the error sweep of a driver: a baseline race, then the race under every
 * fault of the sweep's plan (every operation × errno, once and persistent; sampled when quick).
 * Engines that inject no steps get the baseline only. Returns the runs made.
 */
export async function concurrentErrorSweep(
  driver: FsHarnessDriver | EngineHarnessDriver,
  report: ReportBuilder,
  options: ConcurrentSweepOptions,
): Promise<number> {
  const { mode } = options;
  const row = (cell: string) => modeClass(cell, mode);
  const once = (fault: ErrorFault | undefined) =>
    driver.kind === 'fs'
      ? raceFsOnce(
          driver,
          fault === undefined
            ? []
            : [
                {
                  at: fault.at,
                  errno: fault.errno,
                  mode: fault.mode,
                  ...(fault.shortWrite && { kind: 'short-write' as const }),
                },
              ],
          mode,
        ).then((r) => ({ check: r.check, ops: r.trace.map((e) => e.op), injected: r.injected }))
      : raceEngineOnce(driver, fault, mode).then((r) => ({
          check: r.check,
          ops: r.steps,
          injected: r.injected,
        }));
  const baseline = await once(undefined);
  report.add(
    driver.name,
    row(CONCURRENT_BASELINE_CELL),
    'two instances, no fault',
    baseline.check.outcome,
    false,
  );
  if (driver.kind === 'engine' && driver.injectsSteps !== true) return 1;
  // Persistent faults with the first errno only (EIO): the single-writer sweep has every errno
  // class persistent at every operation; what the race adds is where a fault lands between two
  // writers, and eight persistent classes would make this the longest sweep of a full run.
  const persistent = options.persistentErrnos.slice(0, 1);
  const plan = planErrorSweep(baseline.ops, options.errnos, persistent, driver.kind === 'fs');
  const faults = chooseFaults(plan, options);
  let done = 0;
  for (const fault of faults) {
    if (report.enough) break;
    const run = await once(fault);
    report.expectErrors(driver.name, row(CONCURRENT_ERRORS_CELL));
    report.add(
      driver.name,
      row(CONCURRENT_ERRORS_CELL),
      `${errorFaultClass(fault)} at op ${fault.at} (${baseline.ops[fault.at - 1] ?? '?'}) of two racing instances`,
      run.check.outcome,
      run.injected > 0,
      // No replay id: `--replay` reruns the single-writer workload, not this race.
      { operation: fault.at },
    );
    options.progress?.(`${driver.name} concurrent writers`, ++done, faults.length);
  }
  return faults.length + 1;
}

/** Operations after which the disk can differ from before: a crash after a read is the crash before it. */
const CHANGING_OPS: ReadonlySet<string> = new Set([
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

/** A frozen disk with the model of the race then. */
interface RaceCrash {
  point: CrashPoint;
  model: RaceModel;
  step?: string;
}

/**
 * Runs the race on a CrashFs and freezes the disk after every change (with `syncOnly`, after
 * every sync-family operation and write), each point with a copy of the model: batches whose
 * append had not resolved are in doubt, those refused with CONFLICT absent.
 */
async function recordRaceCrashes(driver: FsHarnessDriver, syncOnly: boolean, mode: SweepMode) {
  const model = new RaceModel();
  const check = new Checker();
  const recorded: RaceCrash[] = [];
  let recording = false;
  const crashFs: CrashFs = new CrashFs((_index, op) => {
    if (!recording || !CHANGING_OPS.has(op) || (syncOnly && !SYNC_OPS.has(op) && op !== 'write')) return;
    recorded.push({
      point: crashFs.crashPoint(op),
      model: model.clone(),
      ...(check.step !== undefined && { step: check.step }),
    });
  });
  await crashFs.mkdir(SWEEP_ROOT, { recursive: true });
  crashFs.checkpoint();
  recording = true;
  const { durability } = mode;
  const stores: SessionStore[] = [];
  for (let i = 0; i < 2; i++) {
    const opened = await check.attempt(`open instance ${i}`, () =>
      driver.open({ fs: crashFs, root: SWEEP_ROOT, durability }),
    );
    if (opened.ok) stores.push(opened.value);
  }
  if (stores.length === 2) await runRace(stores, model, check);
  check.step = 'close';
  // Closed so that their locks leave this process's registry: a crash state's lock file must look
  // like the one a dead process left, not like the lock of a live instance.
  for (const store of stores) await check.attempt('close', () => store.close());
  recording = false;
  return { recorded, check };
}

/**
 * The concurrent probe in the crash sweep of an fs driver: the race on a CrashFs, a power loss
 * after every change (quick: a few points, a sample of their states), and on every crash state two fresh instances recover
 * at once, read the same history holding every acknowledged batch, race for the next seq, and a
 * fresh reopen reads it all again. Returns the crash points and states checked.
 */
export async function concurrentCrashSweepFs(
  driver: FsHarnessDriver,
  report: ReportBuilder,
  options: { quick: boolean; mode: SweepMode; limits?: CrashStateLimits; progress?: Progress },
): Promise<{ points: number; states: number }> {
  const { mode, quick } = options;
  const row = modeClass(CONCURRENT_CRASH_CELL, mode);
  const { recorded, check } = await recordRaceCrashes(driver, quick, mode);
  report.add(driver.name, row, 'two instances racing on CrashFs', check.outcome, false);
  const points = quick
    ? spread(recorded, Math.ceil(QUICK_CONCURRENT_CRASH_POINTS / mode.sample))
    : recorded.filter((_, i) => inSample(mode, i) || i === recorded.length - 1);
  const { durability } = mode;
  let states = 0;
  let done = 0;
  for (const { point, model, step } of points) {
    if (report.enough) break;
    const all = [...enumerateCrashStates(point, options.limits)];
    const chosen = quick ? spread(all, QUICK_CONCURRENT_STATES_PER_POINT) : all;
    for (const state of chosen) {
      const index = all.indexOf(state);
      const fs = materialize(state);
      const open = () => driver.open({ fs, root: SWEEP_ROOT, durability });
      const stateCheck = new Checker();
      const stores: SessionStore[] = [];
      for (let i = 0; i < 2; i++) {
        const opened = await stateCheck.attempt(`open instance ${i} after the crash`, open);
        if (opened.ok) stores.push(opened.value);
        else stateCheck.violation('not-writable', `instance ${i} cannot be opened after the crash`);
      }
      if (stores.length === 2) await checkRacersAfter(stores, model.clone(), stateCheck, open, true);
      else for (const store of stores) await stateCheck.attempt('close', () => store.close());
      if (quarantineCheckApplies(driver.layout))
        checkQuarantine(driver.layout, state.files, filesUnder(fs.volume, '/'), stateCheck);
      report.add(
        driver.name,
        row,
        `crash after op ${point.afterOp} (${point.op}), ${state.label}`,
        stateCheck.outcome,
        true,
        {
          operation: point.afterOp,
          crashState: `after op ${point.afterOp} (${point.op}), state ${index}: ${state.label}`,
          ...(step !== undefined && { step }),
        },
      );
      states++;
    }
    options.progress?.(`${driver.name} concurrent crash`, ++done, points.length);
  }
  return { points: points.length, states };
}
