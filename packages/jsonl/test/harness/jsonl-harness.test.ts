import { formatReportTable, runFaultHarness } from '@tidemark/faults';
import { describe, expect, it } from 'vitest';
import { jsonlDriver } from '../../src/harness.js';

describe('harness over the JSONL backend', () => {
  it('finds no violation in the quick error and crash sweeps', async () => {
    const report = await runFaultHarness(jsonlDriver(), { quick: true, skip: ['real'] });
    if (report.failures.length > 0) console.log(formatReportTable(report));
    expect(report.failures).toEqual([]);
    const crash = report.cells.find((cell) => cell.faultClass === 'crash (power loss)');
    expect(crash?.runs).toBeGreaterThan(100);
    const recovery = report.cells.find((cell) => cell.faultClass === 'crash + EIO during recovery');
    expect(recovery?.faultsInjected).toBeGreaterThan(10);
    const eio = report.cells.find((cell) => cell.faultClass === 'EIO once');
    expect(eio?.errorsSurfaced).toBeGreaterThan(10);
    // The write path is swept too, sampled in the quick run: faults reach its writers, and its
    // crash states (a writer's batches, resume's closing batch, a fork's copy) are reopened.
    const writeEio = report.cells.find((cell) => cell.faultClass === 'write path: EIO once');
    expect(writeEio?.errorsSurfaced).toBeGreaterThan(5);
    const writeCrash = report.cells.find((cell) => cell.faultClass === 'write path: crash (power loss)');
    expect(writeCrash?.runs).toBeGreaterThan(100);
  }, 900_000);
});
