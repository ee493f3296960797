import { describe, expect, it } from 'vitest';
import { formatReportTable, jsonlDriver, runFaultHarness } from '../src/index.js';

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
  }, 300_000);
});
