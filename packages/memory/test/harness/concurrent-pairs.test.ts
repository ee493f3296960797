import {
  concurrentPairs,
  PAIR_READS,
  PAIR_WRITES,
  PAIRS_CELL,
  ReportBuilder,
  racedPairs,
} from '@tidemark/faults';
import { describe, expect, it } from 'vitest';
import { memoryDriver } from '../../src/harness.js';

describe('the pair probe', () => {
  it('races every two writes (each with itself too) and every write with has and load, once each', () => {
    const pairs = racedPairs().map(([x, y]) => `${x} × ${y}`);
    expect(new Set(pairs).size).toBe(pairs.length);
    for (const [i, x] of PAIR_WRITES.entries()) {
      for (const y of PAIR_WRITES.slice(i)) expect(pairs).toContain(`${x} × ${y}`);
      for (const y of PAIR_READS) expect(pairs).toContain(`${x} × ${y}`);
    }
    expect(pairs).toHaveLength(15 + 10);
  });

  it('finds nothing wrong with the memory store, one report run per pair', async () => {
    const builder = new ReportBuilder();
    const runs = await concurrentPairs(memoryDriver(), builder, {
      quick: true,
      mode: { durability: 'strict', sample: 1 },
    });
    const report = builder.build(true, new Date(), []);
    expect(report.failures).toEqual([]);
    const cell = report.cells.find((c) => c.faultClass === PAIRS_CELL);
    expect(cell?.status).toBe('pass');
    expect(runs).toBe(25);
    expect(cell?.runs).toBe(25);
  });
});
