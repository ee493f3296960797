import type { FileSystem } from '@tidemark/core';
import type { EngineHarnessDriver, FsHarnessDriver } from '../drivers/driver.js';
import {
  CrashFs,
  type CrashPoint,
  type CrashState,
  type CrashStateLimits,
  crashStatesAt,
  enumerateCrashStates,
  materialize,
} from '../fs/crash-fs.js';
import type { ErrnoName } from '../fs/errno.js';
import { type FaultPlan, FaultyFs, SYNC_OPS } from '../fs/faulty-fs.js';
import { memfsFileSystem } from '../fs/memfs-fs.js';
import type { ReportBuilder } from '../report/report.js';
import { WorkloadModel } from '../verdicts/model.js';
import { probeStore } from '../verdicts/probe.js';
import { checkQuarantine, filesUnder, quarantineCheckApplies } from '../verdicts/quarantine.js';
import { reopenAndVerify } from '../verdicts/reread.js';
import {
  Checker,
  CLOSE_STEP,
  type CloseRange,
  closeAfterWorkload,
  inClose,
  runWorkload,
} from '../workload/runner.js';
import { AGENT_WORKLOAD, type WorkloadStep } from '../workload/workload.js';
import { WritePathRun } from '../workload/write-path.js';
import { sampleUntilProven } from './cell-proof.js';
import { injectionTracker, reportCoverage } from './coverage.js';
import { inSample, modeClass, modeReplayId, openDurability, STRICT_MODE, type SweepMode } from './mode.js';
import { StepFaults } from './step-faults.js';

/** Where fs-kind stores are rooted inside the in-memory volumes. */
export const SWEEP_ROOT = '/store/sessions';

/** One fault of an error sweep. */
export interface ErrorFault {
  /** 1-based call number. */
  at: number;
  errno: ErrnoName;
  mode: 'once' | 'persistent';
  shortWrite?: boolean;
}

/** Report row of an error fault. */
export function errorFaultClass(fault: ErrorFault): string {
  return fault.shortWrite ? 'short write' : `${fault.errno} ${fault.mode}`;
}

/** What `--replay` takes to run one error fault again: `error:17:EIO:once`, `error:9:short`. */
export function errorReplayId(fault: ErrorFault): string {
  return fault.shortWrite ? `error:${fault.at}:short` : `error:${fault.at}:${fault.errno}:${fault.mode}`;
}

/** Progress callback: `done` of `total` runs of a phase. */
export type Progress = (phase: string, done: number, total: number) => void;

/**
 * Plans an error sweep from the operations the workload performs: every operation × every errno,
 * once and persistent, plus a short write at every write. Pure.
 */
export function planErrorSweep(
  ops: readonly string[],
  errnos: readonly ErrnoName[],
  persistentErrnos: readonly ErrnoName[],
  shortWrites = true,
): ErrorFault[] {
  const faults: ErrorFault[] = [];
  ops.forEach((op, i) => {
    for (const errno of errnos) faults.push({ at: i + 1, errno, mode: 'once' });
    for (const errno of persistentErrnos) faults.push({ at: i + 1, errno, mode: 'persistent' });
    if (shortWrites && op === 'write')
      faults.push({ at: i + 1, errno: 'ENOSPC', mode: 'once', shortWrite: true });
  });
  return faults;
}

/** Runs the workload once on an fs driver under `plans`; returns the checker and the trace. */
export async function runFsOnce(
  driver: FsHarnessDriver,
  plans: FaultPlan[],
  steps?: readonly WorkloadStep[],
  slowSyncMs?: number,
  mode: SweepMode = STRICT_MODE,
) {
  const base = memfsFileSystem();
  await base.mkdir(SWEEP_ROOT, { recursive: true });
  const faulty = new FaultyFs(base, { plans, ...(slowSyncMs !== undefined && { slowSyncMs }) });
  const model = new WorkloadModel(mode.durability === 'relaxed');
  const check = new Checker();
  const once = plans.every((plan) => (plan.mode ?? 'once') === 'once');
  const durability = openDurability(mode);
  const opened = await check.attempt('open', () =>
    driver.open({ fs: faulty.fs, root: SWEEP_ROOT, durability }),
  );
  const tracker = injectionTracker(() => faulty.injected);
  let close: CloseRange | undefined;
  if (opened.ok) {
    const workload = steps ?? mode.workload?.steps;
    await runWorkload(opened.value, model, check, {
      checkFailedAppend: once && plans.length > 0,
      ...(workload && { steps: workload }),
      extension: new WritePathRun(model, driver.writer),
      onStep: (step) => tracker.onStep(step),
    });
    const from = faulty.trace.length;
    await closeAfterWorkload(check, opened.value);
    close = { from, to: faulty.trace.length };
  }
  if (!opened.ok) check.openAnswer(opened.error);
  faulty.lift();
  await reopenAndVerify(() => driver.open({ fs: base, root: SWEEP_ROOT, durability }), model, check, false);
  return { check, trace: faulty.trace, injected: faulty.injected, injectedOps: tracker.ops, close };
}

/** Error sweep of an fs-kind driver (FaultyFs over memfs). Returns the number of operations swept and runs. */
export async function errorSweepFs(
  driver: FsHarnessDriver,
  report: ReportBuilder,
  errnos: readonly ErrnoName[],
  persistentErrnos: readonly ErrnoName[],
  progress?: Progress,
  mode: SweepMode = STRICT_MODE,
): Promise<{ operations: number; runs: number }> {
  const baseline = await runFsOnce(driver, [], undefined, undefined, mode);
  const row = (faultClass: string) => modeClass(faultClass, mode);
  report.add(driver.name, row('no fault (baseline)'), 'baseline', baseline.check.outcome, false);
  // Slow syncs are no error: everything must still work, only later.
  const slow = await runFsOnce(driver, [], undefined, 3, mode);
  const syncs = slow.trace.filter((entry) => SYNC_OPS.has(entry.op)).length;
  report.add(
    driver.name,
    row('slow syncs (3 ms each)'),
    `${syncs} slow syncs`,
    slow.check.outcome,
    syncs > 0,
  );
  const ops = baseline.trace.map((entry) => entry.op);
  const planned = planErrorSweep(ops, errnos, persistentErrnos);
  const faults = planned.filter((_, i) => inSample(mode, i));
  const unproven = (fault: ErrorFault) => report.provesNothing(driver.name, row(errorFaultClass(fault)));
  let done = 0;
  const failed = new Set<WorkloadStep['kind']>();
  const reached = new Set<WorkloadStep['kind']>();
  for (const fault of sampleUntilProven(planned, faults, unproven)) {
    if (report.enough) break;
    const plan: FaultPlan = {
      at: fault.at,
      errno: fault.errno,
      mode: fault.mode,
      ...(fault.shortWrite && { kind: 'short-write' as const }),
    };
    const run = await runFsOnce(driver, [plan], undefined, undefined, mode);
    for (const kind of run.check.failedOps) failed.add(kind);
    for (const kind of run.injectedOps) reached.add(kind);
    const entry = baseline.trace[fault.at - 1];
    const label = `${fault.shortWrite ? 'short write' : `${fault.errno} ${fault.mode}`} at op ${fault.at} (${entry?.op ?? '?'} ${entry?.path ?? ''})${inClose(fault.at, baseline.close)}`;
    report.expectErrors(driver.name, row(errorFaultClass(fault)));
    report.add(driver.name, row(errorFaultClass(fault)), label, run.check.outcome, run.injected > 0, {
      replayId: modeReplayId(errorReplayId(fault), mode),
      operation: fault.at,
    });
    done += 1; // not inside the optional call: without a progress callback its arguments are not evaluated
    progress?.(`${driver.name} error sweep`, done, Math.max(done, faults.length));
  }
  const workload = mode.workload?.steps ?? AGENT_WORKLOAD;
  const closeCalls = baseline.close === undefined ? 0 : baseline.close.to - baseline.close.from;
  reportCoverage(report, driver.name, failed, !report.enough && mode.sample === 1, workload, mode, {
    reached,
    closeCalls,
  });
  return { operations: ops.length, runs: done + 1 };
}

/** Runs the workload once on an engine driver, failing steps as `fault` says. */
export async function runEngineOnce(
  driver: EngineHarnessDriver,
  fault: ErrorFault | undefined,
  mode: SweepMode = STRICT_MODE,
) {
  const storage = await driver.create({ durability: openDurability(mode) });
  const faults = new StepFaults(fault);
  const model = new WorkloadModel(mode.durability === 'relaxed');
  const check = new Checker();
  const tracker = injectionTracker(() => faults.injected);
  let close: CloseRange | undefined;
  try {
    const opened = await check.attempt('open', () => storage.open(faults.inject));
    if (opened.ok) {
      const workload = mode.workload?.steps ?? driver.workload;
      await runWorkload(opened.value, model, check, {
        checkFailedAppend: fault !== undefined && fault.mode === 'once',
        ...(workload !== undefined && { steps: workload }),
        extension: new WritePathRun(model, driver.writer),
        onStep: (step) => tracker.onStep(step),
      });
      const from = faults.steps.length;
      await closeAfterWorkload(check, opened.value);
      close = { from, to: faults.steps.length };
    } else check.openAnswer(opened.error);
    faults.lift();
    await reopenAndVerify(() => storage.open(), model, check, false);
  } finally {
    await storage.destroy();
  }
  return { check, steps: faults.steps, injected: faults.injected, injectedOps: tracker.ops, close };
}

/** Error sweep of an engine driver through its step injector. */
export async function errorSweepEngine(
  driver: EngineHarnessDriver,
  report: ReportBuilder,
  errnos: readonly ErrnoName[],
  persistentErrnos: readonly ErrnoName[],
  progress?: Progress,
  mode: SweepMode = STRICT_MODE,
): Promise<{ operations: number; runs: number }> {
  const baseline = await runEngineOnce(driver, undefined, mode);
  const row = (faultClass: string) => modeClass(faultClass, mode);
  report.add(driver.name, row('no fault (baseline)'), 'baseline', baseline.check.outcome, false);
  const planned = planErrorSweep(baseline.steps, errnos, persistentErrnos, false);
  const faults = planned.filter((_, i) => inSample(mode, i));
  const unproven = (fault: ErrorFault) => report.provesNothing(driver.name, row(errorFaultClass(fault)));
  let done = 0;
  const failed = new Set<WorkloadStep['kind']>();
  const reached = new Set<WorkloadStep['kind']>();
  for (const fault of sampleUntilProven(planned, faults, unproven)) {
    if (report.enough) break;
    const run = await runEngineOnce(driver, fault, mode);
    for (const kind of run.check.failedOps) failed.add(kind);
    for (const kind of run.injectedOps) reached.add(kind);
    const label = `${fault.errno} ${fault.mode} at step ${fault.at} (${baseline.steps[fault.at - 1] ?? '?'})${inClose(fault.at, baseline.close)}`;
    report.expectErrors(driver.name, row(errorFaultClass(fault)));
    report.add(driver.name, row(errorFaultClass(fault)), label, run.check.outcome, run.injected > 0, {
      replayId: modeReplayId(errorReplayId(fault), mode),
      operation: fault.at,
    });
    done += 1; // not inside the optional call: without a progress callback its arguments are not evaluated
    progress?.(`${driver.name} error sweep`, done, Math.max(done, faults.length));
  }
  const workload = mode.workload?.steps ?? driver.workload;
  const closeCalls = baseline.close === undefined ? 0 : baseline.close.to - baseline.close.from;
  reportCoverage(report, driver.name, failed, !report.enough && mode.sample === 1, workload, mode, {
    reached,
    closeCalls,
  });
  return { operations: baseline.steps.length, runs: done + 1 };
}

/** Operations after which the crash states can differ from those after the previous operation. */
const MUTATING_OPS: ReadonlySet<string> = new Set([
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

/** A crash point with the model of what may be on disk then. */
export interface RecordedCrash {
  point: CrashPoint;
  model: WorkloadModel;
  /** The workload step running when the disk froze ({@link describeStep}). */
  step?: string;
}

/**
 * Runs the workload once on a CrashFs and freezes the disk after every operation (or, with
 * `syncOnly`, after every sync-family operation and every directory change), each point with the
 * model of what may be on disk then. Deterministic: a replay records the same points.
 */
export async function recordCrashPoints(
  driver: FsHarnessDriver,
  syncOnly: boolean,
  mode: SweepMode = STRICT_MODE,
): Promise<{ recorded: RecordedCrash[]; check: Checker }> {
  const options = { syncOnly };
  const model = new WorkloadModel(mode.durability === 'relaxed');
  const recorded: RecordedCrash[] = [];
  let recording = false;
  let inflight: { key: string; batch: string[] } | undefined;
  let currentStep: WorkloadStep | undefined;
  const check = new Checker();
  const crashFs: CrashFs = new CrashFs((_index, op) => {
    // Reads leave the disk as it was: a crash after one is the crash after the previous change.
    if (!recording || !MUTATING_OPS.has(op) || (options.syncOnly && !SYNC_OPS.has(op) && op !== 'write'))
      return;
    const snapshot = model.clone();
    if (inflight !== undefined) snapshot.session(inflight.key).inDoubt.push(inflight.batch);
    if (currentStep?.kind === 'delete') {
      const session = snapshot.session(currentStep.key);
      if (session.exists !== 'no') session.deleted = 'maybe';
    }
    if (currentStep?.kind === 'update') {
      const { title, tags } = currentStep.patch;
      snapshot
        .session(currentStep.key)
        .doubtFields({ ...(title !== undefined && { title }), ...(tags !== undefined && { tags }) });
    }
    recorded.push({
      point: crashFs.crashPoint(op),
      model: snapshot,
      ...(check.step !== undefined && { step: check.step }),
    });
  });
  await crashFs.mkdir(SWEEP_ROOT, { recursive: true });
  crashFs.checkpoint();
  recording = true;
  const durability = openDurability(mode);
  const opened = await check.attempt('open', () =>
    driver.open({ fs: crashFs, root: SWEEP_ROOT, durability }),
  );
  if (opened.ok) {
    await runWorkload(opened.value, model, check, {
      checkFailedAppend: false,
      ...(mode.workload !== undefined && { steps: mode.workload.steps }),
      extension: new WritePathRun(model, driver.writer),
      onInflight: (entry) => {
        inflight = entry === undefined ? undefined : { key: entry.session.key, batch: entry.batch };
      },
      onStep: (step) => {
        currentStep = step;
      },
    });
    check.step = CLOSE_STEP; // crash points inside close() name it
    const closed = await check.attempt('close', () => opened.value.close());
    check.step = undefined;
    // Relaxed durability owes every batch once close() resolved: crash right after it too.
    if (closed.ok && model.relaxed) {
      for (const session of model.sessions.values()) session.synced();
      recorded.push({ point: crashFs.crashPoint('after close'), model: model.clone(), step: 'after close' });
    }
  }
  recording = false;
  return { recorded, check };
}

/** What `--replay` takes to reopen one crash state again: `crash:<op>:<state index>`. */
export function crashReplayId(point: CrashPoint, stateIndex: number): string {
  return `crash:${point.afterOp}:${stateIndex}`;
}

/** Reopens the store on one crash state and checks the invariants (contract §7.4). */
export async function checkCrashState(
  driver: FsHarnessDriver,
  state: CrashState,
  model: WorkloadModel,
  mode: SweepMode = STRICT_MODE,
): Promise<Checker> {
  const fs = materialize(state);
  const check = new Checker();
  const durability = openDurability(mode);
  const open = () => driver.open({ fs, root: SWEEP_ROOT, durability });
  await reopenAndVerify(open, model.afterCrash(), check, true);
  if (quarantineCheckApplies(driver.layout))
    checkQuarantine(driver.layout, state.files, filesUnder(fs.volume, '/'), check);
  return check;
}

/**
 * Crash sweep of an fs-kind driver: records the crash points ({@link recordCrashPoints}), then
 * reopens the store on every crash state of every point and checks the invariants.
 */
export async function crashSweepFs(
  driver: FsHarnessDriver,
  report: ReportBuilder,
  options: { syncOnly: boolean; limits?: CrashStateLimits; recoverySamples: number },
  progress?: Progress,
  mode: SweepMode = STRICT_MODE,
): Promise<{ points: number; states: number; recoveryRuns: number; removalStates: RemovalState[] }> {
  const row = modeClass('crash (power loss)', mode);
  const { recorded, check } = await recordCrashPoints(driver, options.syncOnly, mode);
  report.add(driver.name, row, 'workload on CrashFs', check.outcome, false);
  let states = 0;
  let done = 0;
  const damaged: { state: CrashState; model: WorkloadModel; label: string }[] = [];
  for (const [pointIndex, { point, model: pointModel, step }] of recorded.entries()) {
    if (report.enough) break;
    // A sampled mode checks every state of one crash point in `sample` (enumerating the states
    // is what costs, so points, not states, are sampled); the point after close() always.
    if (!inSample(mode, pointIndex) && pointIndex !== recorded.length - 1) continue;
    for (const [index, state] of [...crashStatesAt(recorded, pointIndex, options.limits)].entries()) {
      const stateCheck = await checkCrashState(driver, state, pointModel, mode);
      const label = `crash after op ${point.afterOp} (${point.op}), ${state.label}`;
      report.add(driver.name, row, label, stateCheck.outcome, true, {
        replayId: modeReplayId(crashReplayId(point, index), mode),
        operation: point.afterOp,
        crashState: `after op ${point.afterOp} (${point.op}), state ${index}: ${state.label}`,
        ...(step !== undefined && { step }),
      });
      states++;
      if (/torn|zeros|garbage/.test(state.label)) damaged.push({ state, model: pointModel, label });
      // A point can have hundreds of states (every byte of a fresh write cut): once enough
      // violations are found, the rest of this point would only repeat them.
      if (report.enough) break;
    }
    progress?.(`${driver.name} crash sweep`, ++done, recorded.length);
  }
  // An even sample of the states whose repair has work to do: torn, zero-filled or garbage tails.
  const wanted = Math.ceil(options.recoverySamples / mode.sample);
  const step = Math.max(1, Math.floor(damaged.length / wanted));
  const samples = damaged.filter((_, i) => i % step === 0).slice(0, wanted);
  const recoveryRuns = await recoverySweep(driver, report, samples, progress, mode);
  // The tail cut and repair sweep takes the same sample, and the disk the whole workload left
  // (its last turn of session b is interrupted: a cut has work to do).
  const last = recorded.at(-1);
  const whole =
    last && enumerateCrashStates(last.point, options.limits).find((s) => /data all written/.test(s.label));
  const removalStates = [...samples];
  if (last !== undefined && whole !== undefined)
    removalStates.push({
      state: whole,
      model: last.model,
      label: `after op ${last.point.afterOp}, ${whole.label}`,
    });
  return { points: recorded.length, states, recoveryRuns, removalStates };
}

/** A crash state the tail cut and repair sweep reopens, with the model it is checked against. */
export interface RemovalState {
  state: CrashState;
  model: WorkloadModel;
  label: string;
}

/** The probe run on a reopened crash state: loads (which repair torn tails), lists and an append. */
function recoveryProbe(
  driver: FsHarnessDriver,
  fs: FileSystem,
  model: WorkloadModel,
  check: Checker,
  durability: SweepMode['durability'] | undefined,
): Promise<void> {
  return probeStore(() => driver.open({ fs, root: SWEEP_ROOT, durability }), model, check, false, true);
}

/**
 * A compound fault: the store reopens on a damaged crash state and every operation of its repair
 * (loads that cut torn tails, the next append) fails once with EIO in turn. Errors must be typed,
 * nothing may read as absent, and once the fault is lifted every acknowledged event is there.
 */
async function recoverySweep(
  driver: FsHarnessDriver,
  report: ReportBuilder,
  samples: readonly { state: CrashState; model: WorkloadModel; label: string }[],
  progress?: Progress,
  mode: SweepMode = STRICT_MODE,
): Promise<number> {
  const durability = openDurability(mode);
  let runs = 0;
  let done = 0;
  for (const sample of samples) {
    if (report.enough) break;
    const counting = new FaultyFs(materialize(sample.state));
    await recoveryProbe(driver, counting.fs, sample.model.afterCrash(), new Checker(), durability);
    for (let at = 1; at <= counting.trace.length; at++) {
      const disk = materialize(sample.state);
      const faulty = new FaultyFs(disk, { plans: [{ at, errno: 'EIO' }] });
      const model = sample.model.afterCrash();
      const check = new Checker();
      await recoveryProbe(driver, faulty.fs, model, check, durability);
      faulty.lift();
      await reopenAndVerify(
        () => driver.open({ fs: disk, root: SWEEP_ROOT, durability }),
        model,
        check,
        true,
      );
      const entry = counting.trace[at - 1];
      report.expectErrors(driver.name, modeClass('crash + EIO during recovery', mode));
      report.add(
        driver.name,
        modeClass('crash + EIO during recovery', mode),
        `${sample.label}; EIO at recovery op ${at} (${entry?.op ?? '?'})`,
        check.outcome,
        faulty.injected > 0,
      );
      runs++;
    }
    progress?.(`${driver.name} recovery under fault`, ++done, samples.length);
  }
  return runs;
}
