import { isTidemarkError, TidemarkError } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { isCorruptionCode, isUniqueViolation, mapSqliteError } from '../src/errors.js';

function driverError(code: string, message = 'boom'): Error {
  return Object.assign(new Error(message), { code });
}

const context = {
  file: '/db/store.db',
  what: 'appending to session s',
  sessionId: 's',
  table: 'events',
  row: 'session_id=s',
};

describe('mapSqliteError', () => {
  it.each([
    ['SQLITE_BUSY', true],
    ['SQLITE_BUSY_SNAPSHOT', true],
    ['SQLITE_LOCKED', true],
    ['SQLITE_LOCKED_SHAREDCACHE', true],
    ['SQLITE_FULL', true],
    ['SQLITE_CANTOPEN', false],
    ['SQLITE_READONLY', false],
    ['SQLITE_READONLY_DBMOVED', false],
    ['SQLITE_IOERR', false],
    ['SQLITE_IOERR_FSYNC', false],
    ['SQLITE_IOERR_SHORT_READ', false],
    ['SQLITE_PERM', false],
    ['SQLITE_AUTH', false],
    ['SQLITE_NOMEM', false],
    ['SQLITE_CONSTRAINT_PRIMARYKEY', false],
    ['ENOTDIR', false],
    ['EMFILE', true],
  ])('%s becomes IO with the driver code, retryable=%s', (code, retryable) => {
    const cause = driverError(code);
    const mapped = mapSqliteError(cause, context);
    expect(mapped.code).toBe('IO');
    expect(mapped.errno).toBe(code);
    expect(mapped.retryable).toBe(retryable);
    expect(mapped.cause).toBe(cause);
    expect(mapped.sessionId).toBe('s');
    expect(mapped.message).toContain('appending to session s');
  });

  it.each(['SQLITE_CORRUPT', 'SQLITE_CORRUPT_INDEX', 'SQLITE_CORRUPT_VTAB', 'SQLITE_NOTADB'])(
    '%s becomes CORRUPT with the location',
    (code) => {
      const mapped = mapSqliteError(driverError(code), context);
      expect(mapped.code).toBe('CORRUPT');
      expect(mapped.retryable).toBe(false);
      expect(mapped.location).toMatchObject({ file: '/db/store.db', table: 'events', row: 'session_id=s' });
      expect(mapped.location?.offset).toBe(code === 'SQLITE_NOTADB' ? 0 : undefined);
    },
  );

  it('passes a TidemarkError through unchanged', () => {
    const original = new TidemarkError('NOT_FOUND', 'gone', { sessionId: 's' });
    expect(mapSqliteError(original, context)).toBe(original);
  });

  it('turns anything else, even a non-error, into IO without an errno', () => {
    for (const thrown of [new TypeError('The database connection is not open'), 'a string', undefined, 42]) {
      const mapped = mapSqliteError(thrown, { file: 'f', what: 'x' });
      expect(isTidemarkError(mapped, 'IO')).toBe(true);
      expect(mapped.errno).toBeUndefined();
      expect(mapped.retryable).toBe(false);
    }
  });

  it('never produces NOT_FOUND, whatever the code', () => {
    for (const code of [
      'SQLITE_NOTFOUND',
      'SQLITE_CANTOPEN_NOTEMPDIR',
      'ENOENT',
      'SQLITE_EMPTY',
      'SQLITE_ERROR',
    ]) {
      expect(mapSqliteError(driverError(code), context).code).not.toBe('NOT_FOUND');
    }
  });
});

describe('code predicates', () => {
  it('recognises corruption codes only', () => {
    expect(isCorruptionCode('SQLITE_CORRUPT')).toBe(true);
    expect(isCorruptionCode('SQLITE_CORRUPT_SEQUENCE')).toBe(true);
    expect(isCorruptionCode('SQLITE_NOTADB')).toBe(true);
    expect(isCorruptionCode('SQLITE_CORRUPTED')).toBe(false);
    expect(isCorruptionCode('SQLITE_IOERR')).toBe(false);
    expect(isCorruptionCode(undefined)).toBe(false);
  });
  it('recognises key collisions only', () => {
    expect(isUniqueViolation('SQLITE_CONSTRAINT_PRIMARYKEY')).toBe(true);
    expect(isUniqueViolation('SQLITE_CONSTRAINT_UNIQUE')).toBe(true);
    expect(isUniqueViolation('SQLITE_CONSTRAINT_FOREIGNKEY')).toBe(false);
    expect(isUniqueViolation('SQLITE_CONSTRAINT_CHECK')).toBe(false);
    expect(isUniqueViolation(undefined)).toBe(false);
  });
});
