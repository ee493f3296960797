import type { Durability } from '@tidemark/core';
import type { EngineHarnessDriver, HarnessDriver } from './drivers/driver.js';
import type { CrashStateLimits } from './fs/crash-fs.js';
import { ENGINE_ERRNOS, type ErrnoName, SWEEP_ERRNOS } from './fs/errno.js';
import { concurrentProcesses } from './real/concurrent-real.js';
import { type RealFaultOptions, runRealFaults } from './real/real.js';
import { type BackendTotals, type HarnessReport, ReportBuilder } from './report/report.js';
import { concurrentPairs } from './sweeps/concurrent-pairs.js';
import { concurrentCrashSweepFs, concurrentErrorSweep } from './sweeps/concurrent-sweeps.js';
import { damageSweepFs } from './sweeps/damage.js';
import type { SweepMode } from './sweeps/mode.js';
import { removalSweepFs } from './sweeps/removal-sweep.js';
import { crashSweepFs, errorSweepEngine, errorSweepFs, type Progress } from './sweeps/sweeps.js';
import { layoutGap, QUARANTINE_CHECK_ROW } from './verdicts/quarantine.js';
import { emptyOutcome } from './workload/runner.js';
import { WRITE_PATH } from './workload/write-path.js';

/** Options of {@link runFaultHarness}. */
export interface HarnessOptions {
  /**
   * CI-sized run: errnos EIO, ENOTDIR, EACCES and ENOSPC once and EIO persistent, crash points
   * after sync-family and directory operations only, fewer kills. Full by default.
   */
  quick?: boolean;
  /**
   * Errnos injected once at every operation (default: all of contract §7.1, or the quick set; engine
   * drivers get EBUSY besides).
   */
  errnos?: readonly ErrnoName[];
  /** Errnos injected persistently from every operation on (default: all, or EIO when quick). */
  persistentErrnos?: readonly ErrnoName[];
  /** Skip phases: `errors`, `crash`, `real`, `server` (a driver's server-only fault classes). */
  skip?: readonly ('errors' | 'crash' | 'real' | 'server')[];
  /** SIGKILLs per backend (default 200, quick 20). */
  kills?: number;
  /** Runs of two processes racing for one session per backend, every other one with a SIGKILL (default 16, quick 4). */
  racerRuns?: number;
  /** Scratch directory for real-disk faults (default: a fresh one under the OS temp dir). */
  scratchDir?: string;
  /** Bounds of crash-state enumeration. */
  crashLimits?: CrashStateLimits;
  /**
   * Stop each sweep once this many violations were found (default: never). Useful to show quickly
   * that a broken variant is caught.
   */
  stopAfterFailures?: number;
  /** Called as runs complete, for a progress indicator. */
  progress?: Progress;
  /**
   * How the command line selects each driver, by driver name (`--driver /abs/driver.js`), kept in
   * the report so that its replay commands run as printed (default: `--backends NAME` for a
   * first-party name).
   */
  selectors?: Readonly<Record<string, string>>;
}

/**
 * Cuts a long write at 0, 1, the last byte (a line missing only its newline), both sides of every
 * line boundary and 3 even samples, a short one at every byte.
 */
export const SAMPLED_CRASH_LIMITS: CrashStateLimits = { exhaustiveWriteBytes: 8, sampleCuts: 3 };

/**
 * Quick crash sweeps cut every write densely once, at the first crash point where it is pending
 * (`crashStatesAt` adds those cuts: its first 8 and last 32 bytes, each byte of its multi-byte
 * characters, see `denseOffsets`), and at the {@link SAMPLED_CRASH_LIMITS} offsets at the later
 * points where it is still pending. Cutting every byte of every new write instead was 9 in 10 of
 * the quick run's crash states (JSONL: 12,878 of them, 422 s of its 484 s on two cores) for cuts
 * inside runs of ASCII that tear a record as their neighbours do; the full run cuts at every byte.
 */
export const QUICK_CRASH_LIMITS: CrashStateLimits = SAMPLED_CRASH_LIMITS;

/** Full crash sweeps cut every pending write at every byte offset, whatever its length. */
export const FULL_CRASH_LIMITS: CrashStateLimits = { exhaustiveWriteBytes: Number.POSITIVE_INFINITY };

/** The errnos the quick run injects once at every operation. */
export const QUICK_ERRNOS: readonly ErrnoName[] = ['EIO', 'ENOTDIR', 'EACCES', 'ENOSPC'];

function noInjectorNote(driver: EngineHarnessDriver): string {
  return `no step injector; see ${driver.serverFaults === undefined ? 'real faults' : 'the server fault rows'}`;
}

/** A driver's server-only fault classes (PostgreSQL: statements, proxy, restarts, grants), if it has any. */
async function runServerFaults(
  driver: HarnessDriver,
  report: ReportBuilder,
  quick: boolean,
  total: BackendTotals,
  progress: Progress | undefined,
): Promise<void> {
  if (driver.kind !== 'engine' || driver.serverFaults === undefined) return;
  const server = await driver.serverFaults.run({ report, quick, ...(progress && { progress }) });
  total.operationsSwept += server.operations;
  total.runs += server.runs;
}

/** An engine driver's own checks below its API (settings, power loss from a syscall trace), or `n/a`. */
async function runEngineChecks(
  driver: EngineHarnessDriver,
  report: ReportBuilder,
  quick: boolean,
  total: BackendTotals,
  progress: Progress | undefined,
): Promise<void> {
  if (driver.engineChecks === undefined) {
    // Point to the rows that do crash it: a SIGKILL needs real-disk support, a restart a server.
    const note =
      driver.real !== undefined
        ? 'not a FileSystem-port backend; see SIGKILL'
        : driver.serverFaults !== undefined
          ? 'not a FileSystem-port backend; see the server fault rows'
          : 'not a FileSystem-port backend, and no process of its own to kill (no driver.real): nothing outlives a crash to check';
    report.notApplicable(driver.name, 'crash (power loss)', note);
    return;
  }
  for (const suite of driver.engineChecks) {
    const done = await suite.run({ report, quick, ...(progress && { progress }) });
    total.runs += done.runs;
    total.crashPoints += done.crashPoints ?? 0;
    total.crashStates += done.crashStates ?? 0;
  }
}

/** In the quick run, modes after the first check one fault or crash state in this many. */
export const QUICK_MODE_SAMPLE = 5;

/**
 * In the quick run, the write-path workload checks one fault or crash point in this many (prime
 * to the 5 or 6 faults planned per operation, so that every errno class is sampled).
 */
export const QUICK_WRITE_PATH_SAMPLE = 11;

/**
 * The durability modes a driver declares, the first swept whole, the others sampled when quick;
 * then the write-path workload (write-path.ts) in the first mode: what it checks (flush, abandon,
 * resume, fork over the store's answers) does not depend on the mode, whose own promise the plain
 * workload already crashes.
 */
function sweepModes(driver: HarnessDriver, quick: boolean): SweepMode[] {
  const durabilities = driver.durabilities ?? ['strict'];
  const modes: SweepMode[] = durabilities.map((durability, i) => ({
    durability,
    sample: quick && i > 0 ? QUICK_MODE_SAMPLE : 1,
  }));
  modes.push({
    durability: durabilities[0] ?? 'strict',
    sample: quick ? QUICK_WRITE_PATH_SAMPLE : 1,
    workload: WRITE_PATH,
  });
  // As a user opens a store: no durability option, held to what the docs promise of the default.
  if (driver.kind === 'fs')
    modes.push({ durability: promisedDefault(driver), opensDefault: true, sample: DEFAULT_MODE_SAMPLE });
  return modes;
}

/** The durability a driver's docs promise for a store opened with no options (contract §4: strict). */
function promisedDefault(driver: HarnessDriver): Durability {
  return driver.defaultDurability ?? 'strict';
}

/**
 * The crash sweep of a store opened with no options checks every state of one crash point in
 * this many, in the full run too: it is the strict sweep's code path when the default is strict,
 * and a default of another mode (no sync before an acknowledgement) fails at most points.
 */
export const DEFAULT_MODE_SAMPLE = 10;

/**
 * The row `defaults (no options)`: the default the driver declares ({@link HarnessDriver}'s
 * `defaultDurability`) must be strict, as contract §4 makes it; the sweeps of the default then
 * check that the store keeps it.
 */
export function reportDeclaredDefault(driver: HarnessDriver, report: ReportBuilder): void {
  const declared = promisedDefault(driver);
  const outcome = emptyOutcome();
  if (declared !== 'strict')
    outcome.violations.push({
      kind: 'weak-default',
      detail: `a store opened with no options promises durability '${declared}'; contract §4 makes 'strict' the default`,
    });
  report.add(driver.name, 'defaults (no options)', `declared default: ${declared}`, outcome, false);
}

/** What {@link sweepOneMode} needs of the harness options. */
interface SweepSettings {
  errnos: readonly ErrnoName[];
  engineErrnos: readonly ErrnoName[];
  persistentErrnos: readonly ErrnoName[];
  quick: boolean;
  skip: ReadonlySet<string>;
  options: HarnessOptions;
}

/** The error and crash sweeps of one driver in one durability mode; adds to `total`. */
async function sweepOneMode(
  driver: HarnessDriver,
  report: ReportBuilder,
  mode: SweepMode,
  settings: SweepSettings,
  total: BackendTotals,
): Promise<void> {
  const { quick, skip, options, persistentErrnos } = settings;
  if (!skip.has('errors')) {
    if (driver.kind === 'fs' || driver.injectsSteps) {
      const swept =
        driver.kind === 'fs'
          ? await errorSweepFs(driver, report, settings.errnos, persistentErrnos, options.progress, mode)
          : await errorSweepEngine(
              driver,
              report,
              settings.engineErrnos,
              persistentErrnos,
              options.progress,
              mode,
            );
      total.operationsSwept += swept.operations;
      total.runs += swept.runs;
      // Two instances racing for one session under the same faults: the sweeps above run one
      // writer. Once per mode of the agent workload (the race is its own workload).
      if (mode.workload === undefined)
        total.runs += await concurrentErrorSweep(driver, report, {
          errnos: driver.kind === 'fs' ? settings.errnos : settings.engineErrnos,
          persistentErrnos,
          quick,
          mode,
          ...(options.progress && { progress: options.progress }),
        });
    } else if (mode.sample === 1 && mode.workload === undefined) {
      report.notApplicable(driver.name, 'injected errors', noInjectorNote(driver));
    }
  }
  if (skip.has('crash')) return;
  if (driver.kind !== 'fs') {
    // An engine's own checks (settings, power loss from a syscall trace) sweep every mode themselves.
    if (mode.durability === 'strict' && mode.workload === undefined)
      await runEngineChecks(driver, report, quick, total, options.progress);
    return;
  }
  const limits = options.crashLimits ?? (quick ? QUICK_CRASH_LIMITS : FULL_CRASH_LIMITS);
  const recoverySamples = quick ? 6 : 40;
  const swept = await crashSweepFs(
    driver,
    report,
    { syncOnly: quick, limits, recoverySamples },
    options.progress,
    mode,
  );
  total.crashPoints += swept.points;
  total.crashStates += swept.states;
  total.runs += swept.recoveryRuns;
  total.runs += await removalSweepFs(driver, report, swept.removalStates, mode);
  if (mode.workload === undefined) {
    const raced = await concurrentCrashSweepFs(driver, report, {
      quick,
      mode,
      // The quick cuts even in a full run: every byte of every write is the single-writer sweep's
      // job, the race's is how two writers' batches and locks interleave (~12,700 states a mode).
      limits: options.crashLimits ?? QUICK_CRASH_LIMITS,
      ...(options.progress && { progress: options.progress }),
    });
    total.crashPoints += raced.points;
    total.crashStates += raced.states;
  }
  // Damage to a file is the same whatever the mode that wrote it: swept once.
  if (mode.durability === 'strict' && mode.workload === undefined) {
    total.runs += await damageSweepFs(driver, report);
    // The check every crash state gets, when the layout allows it; else a row says why not.
    const noQuarantineCheck = layoutGap(driver.layout, 'quarantine');
    if (noQuarantineCheck !== undefined)
      report.notApplicable(driver.name, QUARANTINE_CHECK_ROW, noQuarantineCheck);
  }
}

/**
 * The sweep of a store opened with no options (rows `[default]`): the default is checked where
 * durability shows, in the crash states of fs drivers, without recovery samples.
 */
async function sweepDefault(
  driver: HarnessDriver,
  report: ReportBuilder,
  mode: SweepMode,
  settings: SweepSettings,
  total: BackendTotals,
): Promise<void> {
  const { quick, skip, options } = settings;
  if (driver.kind !== 'fs' || skip.has('crash')) return;
  const limits = options.crashLimits ?? (quick ? QUICK_CRASH_LIMITS : FULL_CRASH_LIMITS);
  const swept = await crashSweepFs(
    driver,
    report,
    { syncOnly: quick, limits, recoverySamples: 0 },
    options.progress,
    mode,
  );
  total.crashPoints += swept.points;
  total.crashStates += swept.states;
}

/**
 * Puts one or more backends through the storage-fault harness (contract §7): error sweeps, crash sweeps
 * and real faults, checking the invariants after every fault against the memory model. Resolves a
 * report; `report.failures` is empty when every cell passed.
 *
 * @example
 * ```ts
 * const report = await runFaultHarness(myDriver, { quick: true });
 * expect(report.failures).toEqual([]);
 * ```
 */
export async function runFaultHarness(
  drivers: HarnessDriver | readonly HarnessDriver[],
  options: HarnessOptions = {},
): Promise<HarnessReport> {
  const started = new Date();
  const quick = options.quick ?? false;
  const errnos = options.errnos ?? (quick ? QUICK_ERRNOS : SWEEP_ERRNOS);
  const persistentErrnos = options.persistentErrnos ?? (quick ? ['EIO'] : SWEEP_ERRNOS);
  // Engines also meet lock contention (EBUSY → SQLITE_BUSY) at every step, once.
  const engineErrnos = options.errnos ?? [...errnos, ...ENGINE_ERRNOS];
  const skip = new Set(options.skip ?? []);
  const report = new ReportBuilder(options.stopAfterFailures);
  const totals: BackendTotals[] = [];
  for (const driver of Array.isArray(drivers) ? drivers : [drivers as HarnessDriver]) {
    const t0 = Date.now();
    const total: BackendTotals = {
      backend: driver.name,
      operationsSwept: 0,
      runs: 0,
      crashStates: 0,
      crashPoints: 0,
      kills: 0,
      killAcks: 0,
      durationMs: 0,
    };
    reportDeclaredDefault(driver, report);
    for (const mode of sweepModes(driver, quick)) {
      const swept = { errnos, engineErrnos, persistentErrnos, quick, skip, options };
      if (mode.opensDefault) await sweepDefault(driver, report, mode, swept, total);
      else await sweepOneMode(driver, report, mode, swept, total);
    }
    // Two instances racing every pair of calls, no fault: once per driver, in its first mode.
    if (!skip.has('errors'))
      total.runs += await concurrentPairs(driver, report, {
        quick,
        mode: { durability: driver.durabilities?.[0] ?? 'strict', sample: 1 },
        ...(options.progress && { progress: options.progress }),
      });
    if (!skip.has('real')) {
      const realOptions: RealFaultOptions = {
        kills: options.kills ?? (quick ? 20 : 200),
        ...(options.scratchDir && { scratchDir: options.scratchDir }),
        ...(options.progress && { progress: options.progress }),
      };
      const real = await runRealFaults(driver, report, realOptions);
      total.kills = real.kills;
      total.killAcks = real.acks;
      // Two processes on one session, one of them killed in every other run.
      total.runs += await concurrentProcesses(driver, report, {
        runs: options.racerRuns ?? (quick ? 4 : 16),
        ...(options.scratchDir && { scratchDir: options.scratchDir }),
        ...(options.progress && { progress: options.progress }),
      });
    }
    if (!skip.has('server')) await runServerFaults(driver, report, quick, total, options.progress);
    total.durationMs = Date.now() - t0;
    totals.push(total);
  }
  return report.build(quick, started, totals, options.selectors);
}
