import { ReportBuilder } from '@tidemark/faults';
import { describe, expect, it } from 'vitest';
import { SQLITE_OPEN_SPEC, sqliteSettingsCheck } from '../../src/harness/index.js';
import { sqliteDefaultRelaxed } from './fixtures/broken-sqlite.js';

async function runCheck(spec = SQLITE_OPEN_SPEC) {
  const report = new ReportBuilder();
  const done = await sqliteSettingsCheck('sqlite', spec).run({ report, quick: true });
  return { done, report: report.build(true, new Date(), []) };
}

describe('engine settings (pragmas) of the SQLite backend', () => {
  it('reads the promised pragmas back from the store connection, in every durability mode', async () => {
    const { done, report } = await runCheck();
    expect(done.runs).toBe(4);
    expect(report.failures).toEqual([]);
    const cell = report.cells.find((c) => c.faultClass === 'engine settings (pragmas)');
    expect(cell?.status).toBe('pass');
    expect(cell?.samples?.map((s) => s.fault)).toEqual([
      'strict',
      'relaxed',
      'default (no options)',
      'strict, busyTimeoutMs 1234, maxPageCount 100000',
    ]);
  });

  it('fails a store whose strict mode opens at synchronous=NORMAL, after open and at each commit', async () => {
    const { report } = await runCheck({
      ...SQLITE_OPEN_SPEC,
      options: (path) => ({ path, durability: 'relaxed' }),
    });
    expect(report.passed).toBe(false);
    const details = report.failures.filter((f) => f.kind === 'weak-setting').map((f) => f.detail);
    expect(details).toContain(
      'strict, after open: synchronous is NORMAL (1); the mode promises FULL (2) or more',
    );
    expect(details).toContain(
      'strict: the COMMIT of the append without a boundary ran at synchronous=NORMAL (1); the mode promises FULL (2) or more',
    );
    // The relaxed mode of that store is what relaxed promises: only the strict cases fail (the
    // default among them: it is held to strict).
    expect(report.failures.every((f) => /^(strict|default)/.test(f.fault))).toBe(true);
  });

  it('fails a store that opens without the busy timeout it promises', async () => {
    const { report } = await runCheck({
      ...SQLITE_OPEN_SPEC,
      options: (path, durability) => ({ ...SQLITE_OPEN_SPEC.options(path, durability), busyTimeoutMs: 0 }),
    });
    const details = report.failures.map((f) => f.detail);
    expect(details).toContain('strict, after open: busy_timeout is 0 ms, not 5000');
  });

  it('(aa) fails a store whose default (no options) is relaxed, though strict and relaxed pass', async () => {
    const { report } = await runCheck(sqliteDefaultRelaxed());
    expect(report.passed).toBe(false);
    expect(new Set(report.failures.map((f) => f.fault))).toEqual(new Set(['default (no options)']));
    expect(report.failures.map((f) => f.detail)).toContain(
      'default (no options), after open: synchronous is NORMAL (1); the mode promises FULL (2) or more',
    );
  });
});
