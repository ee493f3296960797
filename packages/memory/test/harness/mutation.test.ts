import {
  concurrentPairs,
  type EngineHarnessDriver,
  type ErrnoName,
  errorSweepEngine,
  type HarnessReport,
  PAIRS_CELL,
  QUICK_WRITE_PATH_SAMPLE,
  ReportBuilder,
  STRICT_MODE,
  type SweepMode,
  WRITE_PATH,
} from '@tidemark/faults';
import { describe, expect, it } from 'vitest';
import {
  engineCloseSwallowsCatalogWrite,
  engineConflictAsRetry,
  engineCursorIgnoresId,
  engineHasSwallowingFaults,
  engineHasWithoutHook,
  engineSwallowingBusy,
  engineSwallowingEacces,
  engineUpdateLooksTwice,
} from './fixtures/broken-engines.js';
import { memoryFlushSwallowingErrors } from './fixtures/broken-writer.js';

// Each broken engine variant (over the memory reference store) and write-path layer must be
// caught in the cell its bug belongs to, so each case runs only the sweep that cell comes from, as
// the quick run makes it, and stops at the first violations (the JSONL variants are in
// packages/jsonl/test/harness/mutation.test.ts). The timeouts only guard against a hang.

/** Stop each sweep after this many violations: a broken variant is shown caught, not counted. */
const STOP = 3;

/** The quick run's error sweep of one engine driver, with only `errnos` injected once. */
async function errorSweep(
  driver: EngineHarnessDriver,
  errnos: readonly ErrnoName[],
  mode: SweepMode = STRICT_MODE,
  stop: number | undefined = STOP,
): Promise<HarnessReport> {
  const builder = new ReportBuilder(stop);
  await errorSweepEngine(driver, builder, errnos, [], undefined, mode);
  return builder.build(true, new Date(), []);
}

function failing(report: HarnessReport, faultClass: string) {
  return report.cells.find((cell) => cell.faultClass === faultClass && cell.status === 'fail');
}

describe('mutation check: the harness catches deliberately broken engine backends', () => {
  it('(h) BUSY taken for success: engines are swept with EBUSY too, and the batch is lost', async () => {
    const report = await errorSweep(engineSwallowingBusy(), ['EBUSY']);
    const cell = report.cells.find((c) => c.faultClass === 'EBUSY once');
    expect(cell?.status).toBe('fail');
    expect(cell?.lostEvents ?? 0).toBeGreaterThan(0);
  }, 60_000);

  it('(i) an operation that bypasses the fault hook: fault coverage fails', async () => {
    const report = await errorSweep(
      engineHasWithoutHook(),
      ['EIO', 'ENOSPC', 'EBUSY'],
      STRICT_MODE,
      undefined,
    );
    const cell = report.cells.find((c) => c.faultClass === 'fault coverage (every operation)');
    expect(cell?.status).toBe('fail');
    expect(report.failures.map((f) => f.detail)).toContain(
      'no injected fault ever made has() fail: the fault hook or port does not reach it',
    );
  }, 60_000);

  it('(z) an operation that swallows its faults: fault coverage fails and blames the swallowing', async () => {
    const report = await errorSweep(
      engineHasSwallowingFaults(),
      ['EIO', 'ENOSPC', 'EBUSY'],
      STRICT_MODE,
      undefined,
    );
    const cell = report.cells.find((c) => c.faultClass === 'fault coverage (every operation)');
    expect(cell?.status).toBe('fail');
    expect(report.failures.map((f) => f.detail)).toContain(
      'no injected fault ever made has() fail: faults were injected during it and it succeeded all the same (the backend swallows the error)',
    );
  }, 60_000);

  it('(o) a different batch at a stored seq taken for a retry: CONFLICT expected, nothing written', async () => {
    const report = await errorSweep(engineConflictAsRetry(), []);
    expect(failing(report, 'no fault (baseline)')).toBeDefined();
    expect(report.failures.map((f) => f.kind)).toContain('conflict-accepted');
  }, 60_000);

  it('(q) an errno class swallowed below the store: its cell fails for want of any typed error', async () => {
    const report = await errorSweep(engineSwallowingEacces(), ['EIO', 'EACCES']);
    const cell = report.cells.find((c) => c.faultClass === 'EACCES once');
    expect(cell?.faultsInjected ?? 0).toBeGreaterThan(0);
    expect(cell?.status).toBe('fail');
    // EIO, which the backend does not swallow, surfaces as it should: only EACCES's cell fails.
    expect(report.cells.find((c) => c.faultClass === 'EIO once')?.status).toBe('pass');
    expect(new Set(report.failures.map((f) => f.kind))).toEqual(new Set(['outcome-missing']));
  }, 60_000);

  it('(y) an update that decides "damaged" from two looks: CORRUPT when racing a first append', async () => {
    // The pair probe alone, as the quick run makes it: the rest of the harness has no such race.
    const builder = new ReportBuilder();
    await concurrentPairs(engineUpdateLooksTwice(), builder, {
      quick: true,
      mode: { durability: 'strict', sample: 1 },
    });
    const report = builder.build(true, new Date(), []);
    const failed = report.cells.filter((c) => c.status === 'fail').map((c) => c.faultClass);
    expect(failed).toEqual([PAIRS_CELL]);
    expect(new Set(report.failures.map((f) => f.kind))).toEqual(new Set(['race-error']));
    expect(report.failures.map((f) => f.detail)).toContainEqual(
      expect.stringMatching(
        /^firstAppend × update: update\(sess-pair-\d-firstAppend-update\) by w1 answered CORRUPT$/,
      ),
    );
  }, 60_000);
});

describe('mutation check: what a user does, the harness does too', () => {
  it('(ab) a list cursor that compares only updatedAt: caught by walking list() with small limits', async () => {
    // The whole EIO sweep (no early stop): no cell but the walks page by page may fail.
    const report = await errorSweep(engineCursorIgnoresId(), ['EIO'], STRICT_MODE, undefined);
    expect(report.passed).toBe(false);
    // One list() page shows every session: only the walks page by page leave the tied one out,
    // the workload's (step 9, under the fault: absence) and the one after the lift.
    expect(new Set(report.failures.map((f) => f.kind))).toEqual(new Set(['false-absence', 'list-paging']));
    const inWorkload = report.failures.find((f) => f.kind === 'false-absence');
    expect(inWorkload?.step).toBe('#9 list()');
    expect(inWorkload?.detail).toBe('list() left out existing session sess-b');
    const afterLift = report.failures.find((f) => f.kind === 'list-paging');
    expect(afterLift?.detail).toMatch(/^list\(\{ limit: 1 \}\) walked page by page leaves out sess-/);
  }, 60_000);

  it('(ac) a close() that swallows a failed catalog write: the acknowledged title is lost', async () => {
    const report = await errorSweep(engineCloseSwallowsCatalogWrite(), ['EIO'], STRICT_MODE, 1);
    const failure = report.failures[0];
    expect(failure?.kind).toBe('lost-update');
    // A once fault inside close(): every fault in the workload's own steps passes it.
    expect(failure?.fault).toMatch(/^EIO once at step \d+ \(\w+\) in close\(\)$/);
  }, 60_000);
});

describe('mutation check: the harness catches a deliberately broken write path', () => {
  it('(t) a flush that swallows the append error: it resolves with nothing acknowledged', async () => {
    const writePath = {
      durability: 'strict',
      sample: QUICK_WRITE_PATH_SAMPLE,
      workload: WRITE_PATH,
    } as const;
    const report = await errorSweep(memoryFlushSwallowingErrors(), ['EIO'], writePath);
    // Without a fault every flush is sound: only a fault on an append during a flush shows it.
    const baseline = report.cells.find((c) => c.faultClass === 'write path: no fault (baseline)');
    expect(baseline?.status).toBe('pass');
    expect(failing(report, 'write path: EIO once')).toBeDefined();
    expect(new Set(report.failures.map((f) => f.kind))).toEqual(new Set(['flush-before-ack']));
    // The backend is sound: the plain workload, which has no writer, passes every cell.
    expect((await errorSweep(memoryFlushSwallowingErrors(), ['EIO'])).passed).toBe(true);
  }, 60_000);
});
