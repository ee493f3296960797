import { type HarnessOptions, type HarnessReport, runFaultHarness } from '@tidemark/faults';
import { describe, expect, it } from 'vitest';
import { sqliteOpenFaultAsNotFound } from './fixtures/broken-sqlite.js';

// The SQLite variant of the mutation check; the others are in the JSONL and memory packages.
const base: HarnessOptions = { quick: true, skip: ['real'], stopAfterFailures: 3 };

function failing(report: HarnessReport, faultClass: string) {
  return report.cells.find((cell) => cell.faultClass === faultClass && cell.status === 'fail');
}

describe('mutation check: the harness catches a deliberately broken SQLite variant', () => {
  it('(r) an open that answers a storage fault with NOT_FOUND: false absence', async () => {
    const report = await runFaultHarness(sqliteOpenFaultAsNotFound(), {
      ...base,
      skip: ['real', 'server'],
      errnos: ['EIO'],
      persistentErrnos: [],
    });
    expect(failing(report, 'EIO once')).toBeDefined();
    expect(report.failures.map((f) => f.detail)).toContainEqual(
      expect.stringMatching(/^open said NOT_FOUND for a store that exists/),
    );
  }, 600_000);
});
