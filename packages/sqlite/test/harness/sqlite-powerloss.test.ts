import { runFaultHarness, straceWorks, type TraceOp } from '@tidemark/faults';
import { describe, expect, it } from 'vitest';
import { isCrashPoint, POWER_LOSS_CELL, sqliteDriver } from '../../src/harness/index.js';
import { sqliteStrictAtNormal } from './fixtures/broken-sqlite.js';

// Both runs are the crash phase alone (engine settings and power loss); the error sweep and real
// faults of SQLite are in sqlite-harness.test.ts and real-faults.test.ts.
const crashOnly = { quick: true, skip: ['errors', 'real', 'server'] } as const;
// Without strace (or ptrace) the cells are n/a; with CI=true the tests run all the same, and fail.
const traced = (await straceWorks()) || process.env.CI === 'true';

describe('power loss of the SQLite backend, from a system-call trace', () => {
  it.runIf(traced)(
    'reopens every crash state of the real store with every acknowledged batch',
    async () => {
      const report = await runFaultHarness(sqliteDriver(), crashOnly);
      expect(report.failures).toEqual([]);
      const cell = report.cells.find((c) => c.faultClass === POWER_LOSS_CELL);
      expect(cell?.status).toBe('pass');
      expect(cell?.note).toMatch(/^strict: .* crash points, \d+ distinct states .*; relaxed: /);
      // Dozens of states from one small workload: each acknowledgement, each sync, the close.
      expect(report.totals[0]?.crashStates).toBeGreaterThan(40);
      expect(report.totals[0]?.crashPoints).toBeGreaterThan(10);
      expect(report.cells.find((c) => c.faultClass === 'engine settings (pragmas)')?.status).toBe('pass');
    },
    120_000,
  );

  it.runIf(traced)(
    '(s) catches a strict store at synchronous=NORMAL: weak pragmas, and batches lost',
    async () => {
      const report = await runFaultHarness(sqliteStrictAtNormal(), crashOnly);
      expect(report.passed).toBe(false);
      const settings = report.cells.find((c) => c.faultClass === 'engine settings (pragmas)');
      expect(settings?.status).toBe('fail');
      expect(report.failures.map((f) => f.kind)).toContain('weak-setting');
      const power = report.cells.find((c) => c.faultClass === POWER_LOSS_CELL);
      expect(power?.status).toBe('fail');
      expect(power?.lostEvents ?? 0).toBeGreaterThan(0);
      // The loss is of an acknowledged batch whose WAL frames were never synced.
      const lost = report.failures.find((f) => f.faultClass === POWER_LOSS_CELL);
      expect(lost?.fault).toMatch(/^strict, after call \d+ \(ack p\d \d+ \d\): every unsynced write/);
      // Its relaxed mode is what relaxed promises (durable at each batch closing a turn): no loss there.
      const powerFailures = report.failures.filter((f) => f.faultClass === POWER_LOSS_CELL);
      expect(powerFailures.every((f) => f.fault.startsWith('strict,'))).toBe(true);
    },
    120_000,
  );
});

describe('the crash points of the power-loss sweep', () => {
  const W = (path: string, offset: number, text: string): TraceOp => ({
    kind: 'write',
    path,
    offset,
    data: Buffer.from(text),
  });

  it('checks the quick run at acknowledgements, right before syncs and at the end', () => {
    const ops: TraceOp[] = [
      W('/r/a', 0, 'x'),
      W('/r/a', 1, 'y'),
      { kind: 'sync', path: '/r/a' },
      { kind: 'say', line: 'ack p0 0 1' },
      { kind: 'say', line: 'try p0 1 1' },
      W('/r/a', 2, 'z'),
    ];
    expect(ops.map((_, i) => isCrashPoint(ops, i, true))).toEqual([false, true, false, true, false, true]);
    expect(ops.map((_, i) => isCrashPoint(ops, i, false))).toEqual([true, true, true, true, false, true]);
  });
});
