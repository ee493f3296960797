// The sample of an error sweep extends itself for a fault class whose sampled faults were all
// absorbed (cell-proof.ts): the sweep runs on through that class's other faults until one surfaces.
import { describe, expect, it } from 'vitest';
import { sampleUntilProven } from '../src/sweeps/cell-proof.js';

interface Fault {
  at: number;
  kind: 'short' | 'eio';
}

const plan: Fault[] = Array.from({ length: 12 }, (_, i) => ({
  at: i + 1,
  kind: i % 2 === 0 ? 'short' : 'eio',
}));
const sampleOf = (every: number) => plan.filter((_, i) => i % every === 0);

/** Drives the generator as a sweep does, `outcome(fault)` saying what each run showed. */
function sweep(
  sampled: Fault[],
  outcome: (fault: Fault) => { injected: boolean; surfaced: boolean },
): number[] {
  // What the report counts per cell (ReportBuilder.provesNothing asks the same of its cells).
  const cells = new Map<string, { injected: boolean; surfaced: boolean }>();
  const provesNothing = (fault: Fault) => {
    const cell = cells.get(fault.kind);
    return cell?.injected === true && !cell.surfaced;
  };
  const ran: number[] = [];
  for (const fault of sampleUntilProven(plan, sampled, provesNothing)) {
    ran.push(fault.at);
    const { injected, surfaced } = outcome(fault);
    const cell = cells.get(fault.kind) ?? { injected: false, surfaced: false };
    cells.set(fault.kind, { injected: cell.injected || injected, surfaced: cell.surfaced || surfaced });
  }
  return ran;
}

describe('a sampled error sweep', () => {
  it('runs only the sample when every sampled class surfaced an error', () => {
    expect(sweep(sampleOf(3), () => ({ injected: true, surfaced: true }))).toEqual([1, 4, 7, 10]);
  });

  it('samples on through a class whose sampled faults were all absorbed, until one surfaces', () => {
    // Faults 1 and 7 (short) are absorbed; 3 is not sampled and surfaces; eio faults surface.
    const absorbed = new Set([1, 7]);
    const ran = sweep(sampleOf(6), (fault) => ({ injected: true, surfaced: !absorbed.has(fault.at) }));
    expect(ran).toEqual([1, 7, 3]);
  });

  it('runs every fault of an absorbing class when none surfaces, and no other class beyond its sample', () => {
    const ran = sweep(sampleOf(3), (fault) => ({ injected: true, surfaced: fault.kind === 'eio' }));
    expect(ran).toEqual([1, 4, 7, 10, 3, 5, 9, 11]);
  });

  it('does not extend a class whose sampled faults were never injected (the cell is n/a, not unproven)', () => {
    expect(sweep(sampleOf(6), (fault) => ({ injected: fault.kind === 'eio', surfaced: false }))).toEqual([
      1, 7,
    ]);
  });

  it('adds nothing to a sweep that samples every fault', () => {
    const ran = sweep(plan, () => ({ injected: true, surfaced: false }));
    expect(ran).toEqual(plan.map((f) => f.at));
  });
});
