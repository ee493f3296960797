import {
  type CrashStateLimits,
  concurrentCrashSweepFs,
  concurrentErrorSweep,
  crashSweepFs,
  DEFAULT_MODE_SAMPLE,
  damageSweepFs,
  type EngineHarnessDriver,
  type ErrnoName,
  errorSweepEngine,
  errorSweepFs,
  type FsHarnessDriver,
  type HarnessReport,
  QUICK_CRASH_LIMITS,
  QUICK_MODE_SAMPLE,
  ReportBuilder,
  removalSweepFs,
  SAMPLED_CRASH_LIMITS,
  STRICT_MODE,
  type SweepMode,
} from '@tidemark/faults';
import { describe, expect, it } from 'vitest';
import { jsonlWithoutSessionLock } from './fixtures/broken-concurrent.js';
import {
  jsonlDefaultRelaxed,
  jsonlDeleteSummaryFirst,
  jsonlDroppingTornLog,
  jsonlEnotdirAsNotFound,
  jsonlLoadStoppingAtDamage,
  jsonlNonAtomicFirstPublish,
  jsonlQuarantineDropsAByte,
  jsonlQuarantineDropsAPartialCharacter,
  jsonlRelaxedWithoutBoundarySync,
  jsonlRepairDeletesQuarantine,
  jsonlRepairLeavesFragment,
  jsonlTailCutKeepsOneLine,
  jsonlUpdateWithoutDirSync,
  jsonlWithoutDirSync,
  jsonlWithoutTruncateAfterFailure,
} from './fixtures/broken-jsonl.js';

// Each broken variant must be caught in the cell its bug belongs to (the engine and write-path
// variants are in packages/memory/test/harness/, (r) in packages/sqlite/test/harness/), so each case runs only the
// sweep that cell comes from, as the quick run makes it (the same errnos, crash points, byte cuts
// and samples), and stops at the first violations. Running the whole harness per variant cost
// more than half of this package's test time (mutation.test.ts took 762 s of a CI run), every
// other sweep finding nothing or the same bug again. The real stores' clean runs are the quick
// harness that `pnpm test` runs through the CLI.
// The timeouts only guard against a hang.

/** Stop each sweep after this many violations: a broken variant is shown caught, not counted. */
const STOP = 3;

/** The quick run's crash sweep of the agent workload (and, with `removal`, its tail cut and repair sweep). */
async function crashSweep(
  driver: FsHarnessDriver,
  options: { limits?: CrashStateLimits; removal?: boolean; mode?: SweepMode } = {},
): Promise<HarnessReport> {
  const builder = new ReportBuilder(STOP);
  const mode = options.mode ?? STRICT_MODE;
  const limits = options.limits ?? QUICK_CRASH_LIMITS;
  // The quick run's six recovery samples only where the tail cut and repair sweep needs them.
  const recoverySamples = options.removal === true ? 6 : 0;
  const swept = await crashSweepFs(
    driver,
    builder,
    { syncOnly: true, limits, recoverySamples },
    undefined,
    mode,
  );
  if (options.removal === true) await removalSweepFs(driver, builder, swept.removalStates, mode);
  return builder.build(true, new Date(), []);
}

/** The quick run's error sweep of one driver, with only `errnos` injected once. */
async function errorSweep(
  driver: FsHarnessDriver | EngineHarnessDriver,
  errnos: readonly ErrnoName[],
  mode: SweepMode = STRICT_MODE,
  stop: number | undefined = STOP,
): Promise<HarnessReport> {
  const builder = new ReportBuilder(stop);
  if (driver.kind === 'fs') await errorSweepFs(driver, builder, errnos, [], undefined, mode);
  else await errorSweepEngine(driver, builder, errnos, [], undefined, mode);
  return builder.build(true, new Date(), []);
}

function failing(report: HarnessReport, faultClass: string) {
  return report.cells.find((cell) => cell.faultClass === faultClass && cell.status === 'fail');
}

describe('mutation check: the harness catches deliberately broken JSONL variants', () => {
  it('(a) no directory fsync after the first publish: acknowledged events lost in a crash', async () => {
    const report = await crashSweep(jsonlWithoutDirSync());
    const cell = failing(report, 'crash (power loss)');
    expect(cell?.lostEvents ?? 0).toBeGreaterThan(0);
    expect(report.passed).toBe(false);
  }, 600_000);

  it('(b) ENOTDIR turned into "not found": false absence under ENOTDIR', async () => {
    const report = await errorSweep(jsonlEnotdirAsNotFound(), ['ENOTDIR']);
    const cell = failing(report, 'ENOTDIR once');
    expect(cell?.absences ?? 0).toBeGreaterThan(0);
  }, 600_000);

  it('(c) no truncation after a failed write: a rejected batch stays visible', async () => {
    const report = await errorSweep(jsonlWithoutTruncateAfterFailure(), ['EIO']);
    const cells = report.cells.filter((cell) => cell.status === 'fail').map((cell) => cell.faultClass);
    expect(cells.length).toBeGreaterThan(0);
    expect(report.failures.map((f) => f.kind)).toContain('unacknowledged-visible');
  }, 600_000);

  it('(d) recovery that drops a log with a torn tail: acknowledged events lost', async () => {
    const report = await crashSweep(jsonlDroppingTornLog());
    const cell = failing(report, 'crash (power loss)');
    expect((cell?.lostEvents ?? 0) + (cell?.absences ?? 0)).toBeGreaterThan(0);
  }, 600_000);

  it('(e) update without a directory fsync: an acknowledged title and tags lost in a crash', async () => {
    const report = await crashSweep(jsonlUpdateWithoutDirSync());
    expect(failing(report, 'crash (power loss)')).toBeDefined();
    expect(report.failures.map((f) => f.kind)).toContain('lost-update');
  }, 600_000);

  it('(f) delete that removes the sidecar before the log: a rejected delete loses the title', async () => {
    const report = await errorSweep(jsonlDeleteSummaryFirst(), ['EIO']);
    expect(failing(report, 'EIO once')).toBeDefined();
    expect(report.failures.map((f) => f.kind)).toContain('lost-update');
  }, 600_000);

  it('(g) a first batch written in place, not published: a crash leaves an unusable id', async () => {
    const report = await crashSweep(jsonlNonAtomicFirstPublish());
    expect(failing(report, 'crash (power loss)')).toBeDefined();
    expect(report.failures.map((f) => f.kind)).toContain('not-writable');
  }, 600_000);
  it('(m) a repair that leaves the next append to corrupt the log: caught on the second reopen', async () => {
    const report = await crashSweep(jsonlRepairLeavesFragment());
    expect(failing(report, 'crash (power loss)')).toBeDefined();
    // Every check of the first reading passes; the damage shows only once the append after it is
    // read back: by the second reopen, or by the CONFLICT probe right after that append (CORRUPT).
    const steps = report.failures.map((f) => f.step);
    expect(steps).toContain('second reopen after recovery');
    const before = report.failures.filter(
      (f) => f.step !== 'second reopen after recovery' && f.kind !== 'conflict-accepted',
    );
    expect(before).toEqual([]);
  }, 600_000);

  it('(n) relaxed durability that never syncs a boundary batch: caught by the relaxed crash sweep only', async () => {
    // The crash sweep alone, sampled as the quick run samples the relaxed mode.
    const sweep = async (durability: 'strict' | 'relaxed') => {
      const builder = new ReportBuilder(3);
      const options = { syncOnly: true, limits: QUICK_CRASH_LIMITS, recoverySamples: 0 };
      await crashSweepFs(jsonlRelaxedWithoutBoundarySync(), builder, options, undefined, {
        durability,
        sample: QUICK_MODE_SAMPLE,
      });
      return builder.build(true, new Date(), []);
    };
    expect((await sweep('strict')).passed).toBe(true);
    const cell = failing(await sweep('relaxed'), 'crash (power loss) [relaxed]');
    expect(cell?.lostEvents ?? 0).toBeGreaterThan(0);
  }, 600_000);

  it('(aa) a default weaker than strict: caught by the crash sweep of a store opened with no options', async () => {
    // The crash sweep alone, sampled as the harness samples the default; held to strict's promise.
    // Asked for strict, the variant is the real store, whose strict sweep passes (the quick harness).
    const report = await crashSweep(jsonlDefaultRelaxed(), {
      mode: { durability: 'strict', sample: DEFAULT_MODE_SAMPLE, opensDefault: true },
    });
    const cell = failing(report, 'crash (power loss) [default]');
    expect(cell?.lostEvents ?? 0).toBeGreaterThan(0);
    expect(report.failures[0]?.reproduction?.replayId).toMatch(/^default\/crash:\d+:\d+$/);
  }, 600_000);

  it('(p) a quarantine copy that drops a byte: removed bytes are not all in quarantine', async () => {
    const report = await crashSweep(jsonlQuarantineDropsAByte());
    expect(failing(report, 'crash (power loss)')).toBeDefined();
    // Nothing else is wrong: every acknowledged event is there, only a removed byte is gone.
    expect(new Set(report.failures.map((f) => f.kind))).toEqual(new Set(['unquarantined-bytes']));
  }, 600_000);

  it('(v) a quarantine that loses a character cut in half: caught only by cutting every write at every byte', async () => {
    const sweep = async (limits: CrashStateLimits) => {
      const builder = new ReportBuilder(1);
      const options = { syncOnly: true, limits, recoverySamples: 0 };
      await crashSweepFs(jsonlQuarantineDropsAPartialCharacter(), builder, options);
      return builder.build(true, new Date(), []);
    };
    // The cuts a sampled sweep makes (0, 1, the last byte, both sides of each newline, a few even
    // samples) never stop inside a multi-byte character here; the quick run's cuts do.
    expect((await sweep({ ...SAMPLED_CRASH_LIMITS, cutEveryByteOf: new Set() })).passed).toBe(true);
    const quick = await sweep(QUICK_CRASH_LIMITS);
    expect(new Set(quick.failures.map((f) => f.kind))).toEqual(new Set(['unquarantined-bytes']));
    expect(quick.failures[0]?.fault).toMatch(/torn at/);
  }, 900_000);

  it('(w) a tail cut that quarantines only the first record it removes: caught by the tail cut sweep', async () => {
    const report = await crashSweep(jsonlTailCutKeepsOneLine(), {
      limits: { ...SAMPLED_CRASH_LIMITS, cutEveryByteOf: new Set() },
      removal: true,
    });
    // The reopen's own torn-tail repair is right: the plain crash cell passes.
    expect(report.cells.find((c) => c.faultClass === 'crash (power loss)')?.status).toBe('pass');
    expect(failing(report, 'crash + tail cut')).toBeDefined();
    expect(new Set(report.failures.map((f) => f.kind))).toEqual(new Set(['unquarantined-bytes']));
  }, 900_000);

  it('(x) a repair that deletes its quarantine files: caught by the repair of damaged logs', async () => {
    const damaged = new ReportBuilder(3);
    await damageSweepFs(jsonlRepairDeletesQuarantine(), damaged);
    const report = damaged.build(true, new Date(), []);
    expect(report.cells.find((c) => c.faultClass === 'damaged file (one byte flipped)')?.status).toBe('pass');
    expect(failing(report, 'damaged file + repair')?.examples.join('\n')).toMatch(/unquarantined-bytes/);
  }, 600_000);

  it('(u) a session lock that is a no-op: two racing instances both win a seq', async () => {
    // The single-writer sweep finds nothing: one writer never meets the missing lock.
    expect((await errorSweep(jsonlWithoutSessionLock(), ['EIO'])).passed).toBe(true);
    const builder = new ReportBuilder(STOP);
    await concurrentErrorSweep(jsonlWithoutSessionLock(), builder, {
      errnos: ['EIO'],
      persistentErrnos: [],
      quick: true,
      mode: STRICT_MODE,
    });
    const report = builder.build(true, new Date(), []);
    // Caught by the race without any fault.
    const cell = failing(report, 'concurrent writers (no fault)');
    expect(cell).toBeDefined();
    expect(report.failures.map((f) => f.kind)).toContain('concurrent-writers');
    expect(report.failures.map((f) => f.detail)).toContainEqual(
      expect.stringMatching(/^sess-[xy]: w\d's batch at seq \d+ and w\d's at seq \d+ were both acknowledged/),
    );
    const failingCells = report.cells.filter((c) => c.status === 'fail').map((c) => c.faultClass);
    expect(failingCells.every((c) => c.startsWith('concurrent writers'))).toBe(true);
    // The crash sweep's race catches it on its own too, as the quick run samples it.
    const crashed = new ReportBuilder(STOP);
    await concurrentCrashSweepFs(jsonlWithoutSessionLock(), crashed, {
      quick: true,
      mode: STRICT_MODE,
      limits: QUICK_CRASH_LIMITS,
    });
    expect(failing(crashed.build(true, new Date(), []), 'concurrent writers (power loss)')).toBeDefined();
  }, 600_000);

  it('(j) a load that stops silently at a damaged line: a shortened history', async () => {
    // The damaged-file sweep alone: through runFaultHarness it comes after the whole crash sweep,
    // which finds nothing here and took ~20 s of the suite on its own.
    const builder = new ReportBuilder();
    expect(await damageSweepFs(jsonlLoadStoppingAtDamage(), builder)).toBeGreaterThan(0);
    const report = builder.build(true, new Date(), []);
    const cell = failing(report, 'damaged file (one byte flipped)');
    expect(cell?.lostEvents ?? 0).toBeGreaterThan(0);
  }, 600_000);
});
