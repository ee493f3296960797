import { TidemarkError } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { commitOutcomeOf, isConnectionFault, mapPgError, redact } from '../src/index.js';

const serverError = (code: string, message = 'server said no') => Object.assign(new Error(message), { code });

describe('SQLSTATE mapping', () => {
  it.each([
    ['08006', true],
    ['08001', true],
    ['57P01', true],
    ['57P03', true],
    ['53100', true],
    ['53300', true],
    ['40001', true],
    ['40P01', true],
    ['57014', true],
    ['55P03', true],
    ['42501', false],
    ['42P01', false],
    ['25006', false],
    ['22021', false],
  ])('%s is IO with retryable %s, never NOT_FOUND', (code, retryable) => {
    const mapped = mapPgError(serverError(code), { what: 'testing' });
    expect(mapped).toBeInstanceOf(TidemarkError);
    expect(mapped.code).toBe('IO');
    expect(mapped.errno).toBe(code);
    expect(mapped.retryable).toBe(retryable);
  });

  it('XX001 and XX002 (damaged data or index) are CORRUPT', () => {
    expect(mapPgError(serverError('XX001'), { what: 'reading', sessionId: 's' }).code).toBe('CORRUPT');
    expect(mapPgError(serverError('XX002'), { what: 'reading' }).code).toBe('CORRUPT');
  });

  it('network errors and the driver’s "Connection terminated" are retryable connection faults', () => {
    for (const error of [
      Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
      new Error('Connection terminated unexpectedly'),
    ]) {
      expect(isConnectionFault(error)).toBe(true);
      const mapped = mapPgError(error, { what: 'appending' });
      expect(mapped.code).toBe('IO');
      expect(mapped.retryable).toBe(true);
    }
  });

  it('a connection lost while a commit was in flight is marked outcome unknown; a refused statement is not', () => {
    const lost = mapPgError(new Error('Connection terminated unexpectedly'), {
      what: 'committing',
      inFlightCommit: true,
    });
    expect(commitOutcomeOf(lost)).toBe('unknown');
    expect(lost.message).toContain('outcome unknown');
    expect(lost.retryable).toBe(true);
    expect(
      commitOutcomeOf(mapPgError(serverError('42501'), { what: 'x', inFlightCommit: true })),
    ).toBeUndefined();
    expect(commitOutcomeOf(mapPgError(new Error('Connection terminated'), { what: 'x' }))).toBeUndefined();
  });

  it('a TidemarkError passes through unchanged', () => {
    const original = new TidemarkError('CONFLICT', 'x', { sessionId: 's' });
    expect(mapPgError(original, { what: 'y' })).toBe(original);
  });

  it('passwords are removed from messages: URL form and given secrets', () => {
    const text = 'failed for postgres://me:hunter2@db:5432/x with hunter2';
    expect(redact(text)).not.toContain('hunter2@');
    expect(redact(text, ['hunter2'])).not.toContain('hunter2');
    const mapped = mapPgError(new Error(text), { what: 'opening', secrets: ['hunter2'] });
    expect(mapped.message).not.toContain('hunter2');
  });
});
