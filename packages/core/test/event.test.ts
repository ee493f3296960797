import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dataJsonOf, isIsoTime, prepareBatch, prepareEvent, TidemarkError } from '../src/index.js';

const time = '2026-11-29T10:00:00.000Z';

function invalid(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(TidemarkError);
    expect((error as TidemarkError).code).toBe('INVALID');
    return (error as Error).message;
  }
  throw new Error('expected INVALID');
}

describe('prepareEvent', () => {
  it('copies the event and serializes it in field order', () => {
    const data = { nested: { list: [1, 2] } };
    const prepared = prepareEvent({ data, time, type: 'user/message', seq: 3 }, 'events[0]');
    expect(prepared.json).toBe(
      `{"seq":3,"type":"user/message","time":"${time}","data":{"nested":{"list":[1,2]}}}`,
    );
    expect(prepared.bytes).toBe(Buffer.byteLength(prepared.json));
    data.nested.list.push(3);
    expect(prepared.event.data).toEqual({ nested: { list: [1, 2] } });
  });

  it.each([
    [{ seq: -1, type: 't', time, data: null }, 'events[0].seq'],
    [{ seq: 1.5, type: 't', time, data: null }, 'events[0].seq'],
    [{ seq: '1', type: 't', time, data: null }, 'events[0].seq'],
    [{ seq: 0, type: '', time, data: null }, 'events[0].type'],
    [{ seq: 0, type: 't', time: 'yesterday', data: null }, 'events[0].time'],
    [{ seq: 0, type: 't', time: '2026-02-30T00:00:00', data: null }, 'events[0].time'],
    [{ seq: 0, type: 't', time }, 'events[0].data: missing'],
    [{ seq: 0, type: 't', time, data: 1n }, 'events[0].data: BigInt'],
    [{ seq: 0, type: 't', time, data: null, extra: 1 }, 'events[0].extra: unknown event field'],
    [null, 'events[0]: an event must be an object'],
  ])('rejects bad event #%# naming %s', (event, where) => {
    expect(invalid(() => prepareEvent(event, 'events[0]'))).toContain(where);
  });

  it('enforces the serialized size limit', () => {
    const event = { seq: 0, type: 't', time, data: 'x'.repeat(100) };
    expect(invalid(() => prepareEvent(event, 'events[0]', { maxEventBytes: 64 }))).toMatch(
      /over the limit of 64/,
    );
    expect(prepareEvent(event, 'events[0]', { maxEventBytes: 1000 }).bytes).toBeLessThan(1000);
  });

  it('accepts ISO timestamps with zones only', () => {
    expect(isIsoTime(new Date().toISOString())).toBe(true);
    expect(isIsoTime('2026-11-29T10:00:00+02:00')).toBe(true);
    expect(isIsoTime('2026-11-29T10:00:00')).toBe(false);
    expect(isIsoTime(12)).toBe(false);
  });
});

describe('prepareBatch', () => {
  const ev = (seq: number) => ({ seq, type: 't', time, data: seq });
  it('accepts a contiguous batch', () => {
    expect(prepareBatch([ev(4), ev(5), ev(6)]).map((p) => p.event.seq)).toEqual([4, 5, 6]);
  });
  it('rejects empty batches, gaps, non-arrays, and names the bad event', () => {
    expect(invalid(() => prepareBatch([]))).toContain('at least one event');
    expect(invalid(() => prepareBatch([ev(0), ev(2)]))).toContain('events[1].seq: expected 1');
    expect(invalid(() => prepareBatch({}))).toContain('must be an array');
    expect(invalid(() => prepareBatch([ev(0), ev(1), { ...ev(2), data: { deep: [Number.NaN] } }]))).toContain(
      'events[2].data.deep[0]: NaN',
    );
  });
  it('tags errors with the session id', () => {
    try {
      prepareBatch([], {}, 'abc');
    } catch (error) {
      expect((error as TidemarkError).sessionId).toBe('abc');
    }
    expect.assertions(1);
  });
});

describe('dataJsonOf', () => {
  it('equals JSON.stringify(data) for any event', () => {
    fc.assert(
      fc.property(
        fc.nat(),
        fc.string({ minLength: 1, maxLength: 20 }),
        fc.jsonValue().filter((v) => !Object.is(v, -0)),
        (seq, type, data) => {
          let prepared: ReturnType<typeof prepareEvent>;
          try {
            prepared = prepareEvent({ seq, type, time: '2026-01-01T00:00:00Z', data }, 'e');
          } catch {
            return; // not an event the store would accept (e.g. -0 nested)
          }
          expect(dataJsonOf(prepared)).toBe(JSON.stringify(prepared.event.data));
        },
      ),
    );
  });
  it('falls back when the serialization is laid out differently', () => {
    const event = { seq: 1, type: 'x', time: 't', data: { a: 1 } };
    expect(dataJsonOf({ event, json: 'unexpected', bytes: 10 })).toBe('{"a":1}');
  });
});

describe('isIsoTime on the canonical shape', () => {
  // The regex and Date.parse are the rule; the digit check for toISOString's shape must agree.
  const rule = (t: string) =>
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/.test(t) &&
    !Number.isNaN(Date.parse(t));
  const two = (max: number) => fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, '0'));
  it('agrees with Date.parse on every field range, leap days and seconds included', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 9999 }).map((n) => String(n).padStart(4, '0')),
        two(13),
        two(32),
        two(25),
        two(61),
        two(61),
        (year, month, day, hour, minute, second) => {
          const time = `${year}-${month}-${day}T${hour}:${minute}:${second}.000Z`;
          expect(isIsoTime(time)).toBe(rule(time));
        },
      ),
      { numRuns: 5000 },
    );
    for (const time of [
      '2024-02-29T00:00:00.000Z',
      '2023-02-29T00:00:00.000Z',
      '1900-02-29T00:00:00.000Z',
      '2000-02-29T23:59:59.999Z',
      '2026-01-01T24:00:00.000Z',
    ])
      expect(isIsoTime(time)).toBe(rule(time));
  });
});
