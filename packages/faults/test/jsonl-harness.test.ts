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
    // The write path is swept too, sampled in the quick run: faults reach its writers, and its
    // crash states (a writer's batches, resume's closing batch, a fork's copy) are reopened.
    const writeEio = report.cells.find((cell) => cell.faultClass === 'write path: EIO once');
    expect(writeEio?.errorsSurfaced).toBeGreaterThan(5);
    const writeCrash = report.cells.find((cell) => cell.faultClass === 'write path: crash (power loss)');
    expect(writeCrash?.runs).toBeGreaterThan(100);
    // Opened as a user opens it (no durability option), the store is crashed too and held to strict.
    const byDefault = report.cells.find((cell) => cell.faultClass === 'crash (power loss) [default]');
    expect(byDefault?.runs).toBeGreaterThan(100);
    expect(report.cells.find((cell) => cell.faultClass === 'defaults (no options)')?.status).toBe('pass');
    // close()'s storage calls (sidecars, catalog record, lock release) are in the error sweep's plan.
    const coverage = report.cells.find((cell) => cell.faultClass === 'fault coverage (every operation)');
    expect(coverage?.samples?.[0]?.fault).toMatch(/close\(\) swept too \(\d+ storage calls\)/);
  }, 900_000);
});
