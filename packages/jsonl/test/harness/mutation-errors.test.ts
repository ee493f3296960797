import {
  concurrentCrashSweepFs,
  concurrentErrorSweep,
  damageSweepFs,
  QUICK_CRASH_LIMITS,
  ReportBuilder,
  STRICT_MODE,
} from '@tidemark/faults';
import { describe, expect, it } from 'vitest';
import { jsonlWithoutSessionLock } from './fixtures/broken-concurrent.js';
import {
  jsonlDeleteSummaryFirst,
  jsonlEnotdirAsNotFound,
  jsonlLoadStoppingAtDamage,
  jsonlWithoutTruncateAfterFailure,
} from './fixtures/broken-jsonl.js';
import { errorSweep, failing, STOP } from './fixtures/one-sweep.js';

// Each broken variant must be caught in the cell its bug belongs to (the engine and write-path
// variants are in packages/memory/test/harness/, (r) in packages/sqlite/test/harness/); see
// fixtures/one-sweep.ts for why each case runs one sweep only. The timeouts only guard against a hang.

// CI runs the cheaper variants of this file; the ones whose sweep runs longest before it finds its
// bug run under TIDEMARK_FULL=1 (each took 20 s to 110 s of a CI run that is over its 12-minute
// budget on two cores). The mechanisms they prove are in CI all the same: the quick harness runs
// the same sweeps clean, and crash-fs.test.ts checks that the quick run cuts inside multi-byte
// characters, which only (v) needs.
const FULL = process.env.TIDEMARK_FULL === '1';

describe('mutation check: the harness catches broken JSONL variants under injected errors, races and damaged files', () => {
  it('(b) ENOTDIR turned into "not found": false absence under ENOTDIR', async () => {
    const report = await errorSweep(jsonlEnotdirAsNotFound(), ['ENOTDIR']);
    const cell = failing(report, 'ENOTDIR once');
    expect(cell?.absences ?? 0).toBeGreaterThan(0);
  }, 600_000);
  it.runIf(FULL)(
    '(c) no truncation after a failed write: a rejected batch stays visible',
    async () => {
      const report = await errorSweep(jsonlWithoutTruncateAfterFailure(), ['EIO']);
      const cells = report.cells.filter((cell) => cell.status === 'fail').map((cell) => cell.faultClass);
      expect(cells.length).toBeGreaterThan(0);
      expect(report.failures.map((f) => f.kind)).toContain('unacknowledged-visible');
    },
    600_000,
  );
  it.runIf(FULL)(
    '(f) delete that removes the sidecar before the log: a rejected delete loses the title',
    async () => {
      const report = await errorSweep(jsonlDeleteSummaryFirst(), ['EIO']);
      expect(failing(report, 'EIO once')).toBeDefined();
      expect(report.failures.map((f) => f.kind)).toContain('lost-update');
    },
    600_000,
  );
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
