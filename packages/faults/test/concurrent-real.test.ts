import { describe, expect, it } from 'vitest';
import { Checker, foldRacerLines, RaceSession, raceEvents } from '../src/index.js';

describe('folding the lines of two racing processes', () => {
  it('acknowledges, refuses and leaves in doubt what each line says', () => {
    const session = new RaceSession('race', undefined);
    const check = new Checker();
    foldRacerLines(session, 'proc0', ['ready', 'try 0 1', 'ack 0 1', 'try 1 2'], true, check);
    foldRacerLines(session, 'proc1', ['ready', 'try 0 2', 'refused 0 2 CONFLICT', 'try 1 3'], false, check);
    expect(check.outcome.violations).toEqual([]);
    const states = Object.fromEntries([...session.batches].map(([key, b]) => [key, b.state]));
    expect(states).toEqual({
      'proc0@0': 'acked',
      'proc0@1': 'doubt',
      'proc1@0': 'refused',
      'proc1@1': 'doubt',
    });
    // The killed racer's batch in flight may be there whole; the other's is refused with it.
    const log = [...raceEvents('proc0', 'race', 0, 1), ...raceEvents('proc0', 'race', 1, 2)];
    expect(session.compare(log)).toEqual({ lost: 0 });
  });

  it('reports two acknowledgements of one seq, and a racer that failed without being killed', () => {
    const session = new RaceSession('race', undefined);
    const check = new Checker();
    foldRacerLines(session, 'proc0', ['try 0 1', 'ack 0 1'], false, check);
    foldRacerLines(session, 'proc1', ['try 0 2', 'ack 0 2', 'error {"typed":false}'], false, check);
    expect(check.outcome.violations.map((v) => v.kind)).toEqual(['concurrent-writers', 'not-writable']);
  });

  it('does not blame a killed racer for the error line its death left', () => {
    const check = new Checker();
    foldRacerLines(new RaceSession('race', undefined), 'proc1', ['stderr killed'], true, check);
    expect(check.outcome.violations).toEqual([]);
  });
});
