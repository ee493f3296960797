// What the fault coverage cell needs to know of a run besides its typed errors.
import type { WorkloadStep } from '../workload/workload.js';

/**
 * Which workload operations a run's injected faults landed in: the coverage cell tells an
 * operation no fault reached (a hook or port it bypasses) from one that swallowed its fault.
 */
export function injectionTracker(injected: () => number) {
  const ops = new Set<WorkloadStep['kind']>();
  let current: WorkloadStep['kind'] | undefined;
  let before = 0;
  return {
    ops,
    onStep(step: WorkloadStep | undefined): void {
      if (current !== undefined && injected() > before) ops.add(current);
      current = step?.kind;
      before = injected();
    },
  };
}
