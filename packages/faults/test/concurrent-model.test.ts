import { describe, expect, it } from 'vitest';
import { RaceSession, raceEvents, spread } from '../src/index.js';
import { canonicalEvent } from '../src/workload/workload.js';

const texts = (writer: string, from: number, count: number) =>
  raceEvents(writer, 'x', from, count).map(canonicalEvent);

/** A session where w0 won seqs 0-1 and w1 then won seq 2, w1's try at 0 refused. */
function raced(): RaceSession {
  const session = new RaceSession('x', undefined);
  session.acked(session.tried('w0', 0, texts('w0', 0, 2)));
  session.refused(session.tried('w1', 0, texts('w1', 0, 1)));
  session.acked(session.tried('w1', 2, texts('w1', 2, 1)));
  return session;
}

describe('the two-writer model', () => {
  it('accepts a log of the acknowledged batches, each at its seq', () => {
    const log = [...raceEvents('w0', 'x', 0, 2), ...raceEvents('w1', 'x', 2, 1)];
    expect(raced().compare(log)).toEqual({ lost: 0 });
  });

  it('counts an acknowledged batch that is missing as lost', () => {
    expect(raced().compare(raceEvents('w0', 'x', 0, 2)).lost).toBe(1);
  });

  it('refuses a batch whose append was refused with CONFLICT', () => {
    const log = [...raceEvents('w1', 'x', 0, 1)];
    const result = raced().compare(log);
    expect(result.unacknowledged).toMatch(/refused with CONFLICT/);
    expect(result.lost).toBe(3);
  });

  it('takes an in-doubt batch whole, never in part', () => {
    const session = raced();
    session.tried('w0', 3, texts('w0', 3, 2)); // in flight
    const base = [...raceEvents('w0', 'x', 0, 2), ...raceEvents('w1', 'x', 2, 1)];
    expect(session.compare([...base, ...raceEvents('w0', 'x', 3, 2)])).toEqual({ lost: 0 });
    expect(session.compare([...base, ...raceEvents('w0', 'x', 3, 1)]).unacknowledged).toBeDefined();
  });

  it('sees an event out of its place (a duplicate seq, a gap)', () => {
    const duplicate = [...raceEvents('w0', 'x', 0, 2), ...raceEvents('w1', 'x', 1, 1)];
    expect(raced().compare(duplicate).misplaced).toMatch(/position 2 has seq 1/);
  });

  it('reports two acknowledged batches over one seq, but not an idempotent retry', () => {
    const session = new RaceSession('x', undefined);
    expect(session.acked(session.tried('w0', 0, texts('w0', 0, 2)))).toBeUndefined();
    expect(session.acked(session.tried('w0', 0, texts('w0', 0, 2)))).toBeUndefined();
    expect(session.acked(session.tried('w1', 1, texts('w1', 1, 1)))).toMatch(/both acknowledged/);
  });

  it('settles on what was shown: the batches in it acknowledged, the others absent', () => {
    const session = raced();
    session.tried('w0', 3, texts('w0', 3, 1)); // in doubt, then shown
    session.tried('w1', 3, texts('w1', 3, 2)); // in doubt, not shown
    const shown = [...texts('w0', 0, 2), ...texts('w1', 2, 1), ...texts('w0', 3, 1)];
    session.settle(shown);
    expect(session.settledLog()).toEqual(shown);
    expect(session.inDoubtAt(3)).toEqual([]);
  });

  it('gives each writer its own events at a seq', () => {
    expect(texts('w0', 4, 1)).not.toEqual(texts('w1', 4, 1));
    expect(raceEvents('w0', 'x', 4, 2).map((e) => e.type)).toEqual(['assistant/message', 'turn/end']);
  });

  it('spreads a sample evenly, first and last included', () => {
    expect(spread([1, 2, 3, 4, 5, 6, 7, 8, 9], 3)).toEqual([1, 5, 9]);
    expect(spread([1, 2], 5)).toEqual([1, 2]);
    expect(spread([1, 2, 3, 4, 5], 1)).toEqual([3]);
  });
});
