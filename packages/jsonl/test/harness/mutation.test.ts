import { crashSweepFs, DEFAULT_MODE_SAMPLE, QUICK_MODE_SAMPLE, ReportBuilder } from '@tidemark/faults';
import { describe, expect, it } from 'vitest';
import {
  jsonlDefaultRelaxed,
  jsonlDroppingTornLog,
  jsonlNonAtomicFirstPublish,
  jsonlRelaxedWithoutBoundarySync,
  jsonlRepairLeavesFragment,
  jsonlUpdateWithoutDirSync,
  jsonlWithoutDirSync,
} from './fixtures/broken-jsonl.js';
import { crashSweep, failing, SUBSET_OF_QUICK } from './fixtures/one-sweep.js';

// Each broken variant must be caught in the cell its bug belongs to (the engine and write-path
// variants are in packages/memory/test/harness/, (r) in packages/sqlite/test/harness/); see
// fixtures/one-sweep.ts for why each case runs one sweep only. The timeouts only guard against a hang.

describe('mutation check: the harness catches broken JSONL variants that lose acknowledged work in a crash', () => {
  it('(a) no directory fsync after the first publish: acknowledged events lost in a crash', async () => {
    const report = await crashSweep(jsonlWithoutDirSync());
    const cell = failing(report, 'crash (power loss)');
    expect(cell?.lostEvents ?? 0).toBeGreaterThan(0);
    expect(report.passed).toBe(false);
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
      const options = { syncOnly: true, limits: SUBSET_OF_QUICK, recoverySamples: 0 };
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
});
