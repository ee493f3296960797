import { formatReportTable, makeErrnoError, runEngineOnce, runFaultHarness } from '@tidemark/faults';
import { describe, expect, it } from 'vitest';
import { sqliteCodeForErrno, sqliteDriver, sqliteErrorFor } from '../../src/harness/index.js';

describe('harness over the SQLite backend', () => {
  it('sweeps injected errors through its step hook and finds no violation', async () => {
    const report = await runFaultHarness(sqliteDriver(), { quick: true, skip: ['real'] });
    if (report.failures.length > 0) console.log(formatReportTable(report));
    expect(report.failures).toEqual([]);
    expect(report.cells.some((cell) => cell.faultClass === 'injected errors' && cell.status === 'n/a')).toBe(
      false,
    );
    // Opening, migrating, and each statement of the workload: well over the workload's 19 calls.
    expect(report.totals[0]?.operationsSwept).toBeGreaterThan(50);
    for (const faultClass of ['EIO once', 'ENOSPC once', 'EACCES once', 'EIO persistent']) {
      const cell = report.cells.find((c) => c.faultClass === faultClass);
      expect(cell?.status, faultClass).toBe('pass');
      expect(cell?.faultsInjected, faultClass).toBe(cell?.runs);
      expect(cell?.faultsInjected, faultClass).toBeGreaterThan(50);
      expect(cell?.errorsSurfaced, faultClass).toBeGreaterThanOrEqual(cell?.faultsInjected ?? 1);
    }
  }, 900_000);
});

describe('the SQLite workload', () => {
  it('issues appends to different sessions together, so the sweep steps through shared commits', async () => {
    // Guards the group-commit coverage: without concurrent appends no SAVEPOINT step is swept.
    const run = await runEngineOnce(sqliteDriver(), undefined);
    expect(run.check.outcome.violations).toEqual([]);
    // Two groups of three and two batches, each batch under its own savepoint.
    expect(run.steps.filter((step) => step === 'SAVEPOINT')).toHaveLength(5);
    const group = run.steps.indexOf('SAVEPOINT');
    expect(run.steps.lastIndexOf('BEGIN IMMEDIATE', group)).toBeGreaterThan(-1);
    expect(run.steps.slice(group, run.steps.indexOf('COMMIT', group))).toContain('INSERT sessions');
  });
});

describe('errno classes as SQLite codes', () => {
  it.each([
    ['EIO', 'INSERT events', 'SQLITE_IOERR'],
    ['ENOSPC', 'COMMIT', 'SQLITE_FULL'],
    ['EROFS', 'INSERT events', 'SQLITE_READONLY'],
    ['EACCES', 'UPDATE sessions', 'SQLITE_READONLY'],
    ['EACCES', 'open', 'SQLITE_CANTOPEN'],
    ['EPERM', 'DELETE events', 'SQLITE_PERM'],
    ['EPERM', 'open', 'SQLITE_CANTOPEN'],
    ['EMFILE', 'BEGIN IMMEDIATE', 'SQLITE_CANTOPEN'],
    ['ENOTDIR', 'open', 'SQLITE_CANTOPEN'],
    ['EISDIR', 'SELECT sessions', 'SQLITE_CANTOPEN'],
    ['EBUSY', 'BEGIN IMMEDIATE', 'SQLITE_BUSY'],
    ['EXDEV', 'COMMIT', 'SQLITE_IOERR'],
  ])('%s at %s is %s', (errno, step, code) => {
    expect(sqliteCodeForErrno(errno, step)).toBe(code);
  });

  it('builds a SqliteError-shaped error that keeps the injected errno as its cause', () => {
    const cause = makeErrnoError('ENOSPC', 'COMMIT');
    const error = sqliteErrorFor(cause, 'COMMIT');
    expect(error.name).toBe('SqliteError');
    expect(error.code).toBe('SQLITE_FULL');
    expect(error.message).toBe('database or disk is full');
    expect(error.cause).toBe(cause);
  });
});
