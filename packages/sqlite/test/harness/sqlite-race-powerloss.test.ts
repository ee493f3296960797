import { Checker, RaceModel, ReportBuilder, raceEvents, straceWorks } from '@tidemark/faults';
import { describe, expect, it } from 'vitest';
import { foldRaceLine, RACE_POWER_LOSS_CELL, sqliteRacePowerLoss } from '../../src/harness/index.js';

// Without strace (or ptrace) the cell is n/a; with CI=true the test runs all the same, and fails.
const traced = (await straceWorks()) || process.env.CI === 'true';

describe('two SQLite instances racing for one session, at a power loss', () => {
  it('folds the traced lines: in doubt once tried, then acknowledged or refused', () => {
    const model = new RaceModel();
    const check = new Checker();
    for (const line of [
      'try x w0 0 1',
      'try x w1 0 2',
      'ack x w0 0 1',
      'refused x w1 0 2',
      'try y w0 0 1',
      'closed',
    ])
      foldRaceLine(model, line, check);
    const x = model.session('x');
    expect([...x.batches.values()].map((b) => [b.writer, b.state])).toEqual([
      ['w0', 'acked'],
      ['w1', 'refused'],
    ]);
    expect(model.session('y').batches.get('w0@0')?.state).toBe('doubt');
    expect(x.compare(raceEvents('w0', 'x', 0, 1))).toEqual({ lost: 0 });
    foldRaceLine(model, 'ack x w1 0 2', check);
    expect(check.outcome.violations.map((v) => v.kind)).toEqual(['concurrent-writers']);
  });

  it.runIf(traced)(
    'reopens the crash states of the race with two instances, every acknowledged batch there',
    async () => {
      const report = new ReportBuilder();
      const done = await sqliteRacePowerLoss('sqlite').run({ report, quick: true });
      const built = report.build(true, new Date(), []);
      expect(built.failures).toEqual([]);
      expect(done.crashPoints).toBe(4);
      expect(done.crashStates ?? 0).toBeGreaterThan(4);
      expect(built.cells.find((c) => c.faultClass === RACE_POWER_LOSS_CELL)?.status).toBe('pass');
    },
    120_000,
  );
});
