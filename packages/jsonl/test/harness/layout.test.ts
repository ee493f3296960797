// What the layout of a driver lets the harness check, over the real JSONL store: every check the
// layout rules out is a row with `n/a` and its reason, never a missing row (issue 23: without a
// layout, `crash + tail cut`, `crash + repair` and `damaged file + repair` used to vanish).
import { damageSweepFs, ReportBuilder, removalSweepFs } from '@tidemark/faults';
import { describe, expect, it } from 'vitest';
import { JSONL_LAYOUT, jsonlDriver } from '../../src/harness.js';

describe('the layout of a driver', () => {
  it('without one, the repair of damaged files is an n/a row with the reason, and the damage rows still run', async () => {
    const { layout: _, ...withoutLayout } = jsonlDriver();
    const builder = new ReportBuilder();
    expect(await damageSweepFs(withoutLayout, builder)).toBeGreaterThan(0);
    await removalSweepFs(withoutLayout, builder, []);
    const cells = new Map(builder.build(true, new Date(), []).cells.map((c) => [c.faultClass, c]));
    expect(cells.get('damaged file (one byte flipped)')?.status).toBe('pass');
    for (const row of ['damaged file + repair', 'crash + tail cut', 'crash + repair']) {
      expect(cells.get(row)?.status).toBe('n/a');
      expect(cells.get(row)?.note).toMatch(/declares no layout/);
    }
  }, 600_000);

  // The byte-for-byte check's own n/a row for 'rewrite' is checked in faults (quarantine.test.ts).
  it("with logs: 'rewrite', the repair of damaged files still runs", async () => {
    const rewrite = { ...jsonlDriver(), layout: { ...JSONL_LAYOUT, logs: 'rewrite' as const } };
    const builder = new ReportBuilder();
    await damageSweepFs(rewrite, builder);
    const cells = new Map(builder.build(true, new Date(), []).cells.map((c) => [c.faultClass, c]));
    expect(cells.get('damaged file + repair')?.status).toBe('pass');
    expect(cells.get('damaged file + repair')?.runs).toBeGreaterThan(0);
  }, 600_000);
});
