import { makeErrnoError, runEngineOnce } from '@tidemark/faults';
import { describe, expect, it } from 'vitest';
// The quick harness over the real SQLite store, cell by cell, is the CLI's harness-quick test.
import { sqliteCodeForErrno, sqliteDriver, sqliteErrorFor } from '../../src/harness/index.js';

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
