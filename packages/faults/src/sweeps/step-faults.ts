import type { StepInjector } from '../drivers/driver.js';
import { type ErrnoName, makeErrnoError } from '../fs/errno.js';

/** The fault of an engine run (sweeps.ts's ErrorFault, which has these fields). */
export interface StepFault {
  /** 1-based step number. */
  at: number;
  errno: ErrnoName;
  mode: 'once' | 'persistent';
}

/**
 * The step injector of one engine run: records every step the backend announces and fails the
 * ones `fault` names (its step, or every step from it on when persistent) until {@link lift}.
 * Shared by the single-writer sweep and the concurrent-writer race, whose instances share it.
 */
export class StepFaults {
  /** The steps announced before the lift, in order. */
  readonly steps: string[] = [];
  /** How many steps were failed. */
  injected = 0;
  private lifted = false;

  constructor(private readonly fault: StepFault | undefined) {}

  /** Pass to `storage.open(inject)`. */
  readonly inject: StepInjector = (step, detail) => {
    if (this.lifted) return;
    this.steps.push(step);
    if (this.fault === undefined) return;
    const n = this.steps.length;
    if (this.fault.mode === 'persistent' ? n >= this.fault.at : n === this.fault.at) {
      this.injected++;
      throw makeErrnoError(this.fault.errno, step, detail);
    }
  };

  /** Stops recording and failing: the fault is lifted. */
  lift(): void {
    this.lifted = true;
  }
}
