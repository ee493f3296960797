// The harness workload shares updatedAt between sessions over this backend: the tie is what makes
// a list cursor's tie-break matter. sess-a and sess-b meet the paged list of step 9 at one
// updatedAt, 2 ms past TIED_CLOCK (a: first append at it, an update, an append; b: its first
// append 2 ms later), however fast or loaded the machine (faults' holdClock).
import { AGENT_WORKLOAD, Checker, runWorkload, TIED_CLOCK, WorkloadModel } from '@tidemark/faults';
import { describe, expect, it } from 'vitest';
import { memoryDriver } from '../../src/harness.js';

describe('the harness workload over the memory backend', () => {
  it('ties two sessions at one updatedAt before its paged list, and gives the real clock back', async () => {
    const storage = await memoryDriver().create();
    const store = await storage.open();
    const done = () => storage.destroy();
    try {
      const check = new Checker();
      expect(AGENT_WORKLOAD[8]).toEqual({ kind: 'list', limit: 1 });
      const steps = AGENT_WORKLOAD.slice(0, 8);
      await runWorkload(store, new WorkloadModel(), check, { checkFailedAppend: false, steps });
      expect(check.outcome.violations).toEqual([]);
      const { sessions } = await store.list();
      expect(sessions.map((s) => [s.id, s.updatedAt])).toEqual([
        ['sess-a', '2099-01-01T00:00:00.002Z'],
        ['sess-b', '2099-01-01T00:00:00.002Z'],
      ]);
      expect(Date.now()).toBeLessThan(Date.parse(TIED_CLOCK));
    } finally {
      await store.close();
      await done();
    }
  });
});
