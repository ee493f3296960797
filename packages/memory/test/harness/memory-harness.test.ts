import { formatReportTable, runFaultHarness } from '@tidemark/faults';
import { describe, expect, it } from 'vitest';
import { memoryDriver } from '../../src/harness.js';

describe('harness over the memory reference backend', () => {
  it('finds no violation in a quick run and really injects faults', async () => {
    const report = await runFaultHarness(memoryDriver(), { quick: true, skip: ['real'] });
    if (report.failures.length > 0) console.log(formatReportTable(report));
    expect(report.failures).toEqual([]);
    const eio = report.cells.find((cell) => cell.faultClass === 'EIO once');
    expect(eio?.faultsInjected).toBeGreaterThan(10);
    expect(eio?.errorsSurfaced).toBeGreaterThan(10);
    expect(report.totals[0]?.operationsSwept).toBeGreaterThan(10);
    // Its crash row points to no SIGKILL row: memory has none (issue 23).
    const crash = report.cells.find((cell) => cell.faultClass === 'crash (power loss)');
    expect(crash?.status).toBe('n/a');
    expect(crash?.note).not.toMatch(/SIGKILL/);
    expect(report.cells.some((cell) => cell.faultClass.startsWith('SIGKILL'))).toBe(false);
  });
});
