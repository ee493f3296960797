// canonicalInRange decides, on the digits alone, that a `toISOString`-shaped time is a real date.
// Its callers fall back to Date.parse when it says false, so through them a check that says false
// too often is only slower, and one that says true too often accepts a date Date.parse would move
// (Feb 30 as Mar 2). So it is held here to its own definition: true exactly when Date.parse takes
// the string and toISOString spells the result back the same.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalInRange } from '../src/iso-time.js';

const pad = (value: number, width: number) => String(value).padStart(width, '0');

/** What canonicalInRange must say: the date parses and is spelled back unchanged. */
function isRealDate(time: string): boolean {
  const parsed = Date.parse(time);
  return Number.isFinite(parsed) && new Date(parsed).toISOString() === time;
}

const spelled = (y: number, mo: number, d: number, h: number, mi: number, s: number, ms: number) =>
  `${pad(y, 4)}-${pad(mo, 2)}-${pad(d, 2)}T${pad(h, 2)}:${pad(mi, 2)}:${pad(s, 2)}.${pad(ms, 3)}Z`;

describe('canonicalInRange', () => {
  it('accepts exactly the times whose fields are in their calendar range', () => {
    // Every field drawn a little past its range on both sides, so that each bound is crossed.
    const time = fc
      .tuple(
        fc.integer({ min: 0, max: 9999 }),
        fc.integer({ min: 0, max: 13 }),
        fc.integer({ min: 0, max: 32 }),
        fc.integer({ min: 0, max: 25 }),
        fc.integer({ min: 0, max: 61 }),
        fc.integer({ min: 0, max: 61 }),
        fc.integer({ min: 0, max: 999 }),
      )
      .map((fields) => spelled(...fields));
    fc.assert(
      fc.property(time, (t) => {
        expect(canonicalInRange(t)).toBe(isRealDate(t));
      }),
      { numRuns: 5000 },
    );
  });

  it('knows the length of every month and the leap years of the Gregorian calendar', () => {
    for (const year of [1900, 2000, 2023, 2024, 2100, 2400, 4]) {
      for (let month = 1; month <= 12; month++) {
        for (const day of [1, 28, 29, 30, 31]) {
          const t = spelled(year, month, day, 12, 30, 30, 500);
          expect(canonicalInRange(t), t).toBe(isRealDate(t));
        }
      }
    }
  });

  it('takes the last instant of a day, a year and the range, and refuses one past each', () => {
    expect(canonicalInRange('2026-12-31T23:59:59.999Z')).toBe(true);
    expect(canonicalInRange('9999-12-31T23:59:59.999Z')).toBe(true);
    expect(canonicalInRange('0000-01-01T00:00:00.000Z')).toBe(true);
    expect(canonicalInRange('2026-12-31T24:00:00.000Z')).toBe(false);
    expect(canonicalInRange('2026-12-31T23:60:00.000Z')).toBe(false);
    expect(canonicalInRange('2026-12-31T23:59:60.000Z')).toBe(false);
    expect(canonicalInRange('2026-12-32T00:00:00.000Z')).toBe(false);
    expect(canonicalInRange('2026-00-10T00:00:00.000Z')).toBe(false);
  });

  it('leaves any other separator before the millis or zone to Date.parse', () => {
    expect(canonicalInRange('2026-01-01T00:00:00,000Z')).toBe(false);
    expect(canonicalInRange('2026-01-01T00:00:00.000+')).toBe(false);
  });
});
