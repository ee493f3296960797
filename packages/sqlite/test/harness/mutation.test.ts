import {
  type EngineHarnessDriver,
  type ErrnoName,
  errorSweepEngine,
  type HarnessReport,
  ReportBuilder,
} from '@tidemark/faults';
import { describe, expect, it } from 'vitest';
import { sqliteOpenFaultAsNotFound } from './fixtures/broken-sqlite.js';

// The SQLite variant of the mutation check, run through the sweep its cell comes from (the others
// are in the JSONL and memory packages' test/harness/). The timeout only guards against a hang.

/** The quick run's error sweep of one engine driver, with only `errnos` injected once, stopping at 3 violations. */
async function errorSweep(driver: EngineHarnessDriver, errnos: readonly ErrnoName[]): Promise<HarnessReport> {
  const builder = new ReportBuilder(3);
  await errorSweepEngine(driver, builder, errnos, []);
  return builder.build(true, new Date(), []);
}

function failing(report: HarnessReport, faultClass: string) {
  return report.cells.find((cell) => cell.faultClass === faultClass && cell.status === 'fail');
}

describe('mutation check: the harness catches a deliberately broken SQLite variant', () => {
  it('(r) an open that answers a storage fault with NOT_FOUND: false absence', async () => {
    const report = await errorSweep(sqliteOpenFaultAsNotFound(), ['EIO']);
    expect(failing(report, 'EIO once')).toBeDefined();
    expect(report.failures.map((f) => f.detail)).toContainEqual(
      expect.stringMatching(/^open said NOT_FOUND for a store that exists/),
    );
  }, 600_000);
});
