// Reservations: the lazy-create rule of one store instance.
import { describe, expect, it } from 'vitest';
import { Reservations } from '../src/index.js';

const meta = { id: 's', createdAt: '2026-01-01T00:00:00.000Z', cwd: '/p' };

describe('Reservations', () => {
  it('keeps the meta and patch of a reserved id until it ends', () => {
    const reservations = new Reservations();
    expect(reservations.has('s')).toBe(false);
    reservations.reserve(meta, { title: 't' });
    expect(reservations.has('s')).toBe(true);
    expect(reservations.get('s')).toEqual({ meta, patch: { title: 't' } });
    expect(reservations.end('s')).toBe(true);
    expect(reservations.end('s')).toBe(false);
    expect(reservations.get('s')).toBeUndefined();
  });

  it('merges patches, later fields winning, and returns the pending summary', () => {
    const reservations = new Reservations();
    reservations.reserve(meta, { title: 'first', tags: ['a'] });
    const summary = reservations.merge('s', { title: 'second', attrs: { k: 1 } });
    expect(summary).toEqual({
      id: 's',
      createdAt: meta.createdAt,
      // A pending session has not changed since create: updatedAt is its creation time.
      updatedAt: meta.createdAt,
      cwd: '/p',
      eventCount: 0,
      committedSeq: -1,
      interrupted: false,
      title: 'second',
      tags: ['a'],
      attrs: { k: 1 },
    });
    expect(reservations.get('s')?.patch).toEqual({ title: 'second', tags: ['a'], attrs: { k: 1 } });
  });

  it('merges nothing into an id that is not reserved', () => {
    expect(new Reservations().merge('x', { title: 't' })).toBeUndefined();
  });

  it('clear discards every reservation', () => {
    const reservations = new Reservations();
    reservations.reserve(meta, {});
    reservations.reserve({ ...meta, id: 't' }, {});
    reservations.clear();
    expect(reservations.has('s') || reservations.has('t')).toBe(false);
  });
});
