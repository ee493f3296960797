// The fault-coverage cell of an error sweep: a fault path no injected fault reaches passes every
// other cell untested, so the sweep ends by showing that each operation met one.
import type { ReportBuilder } from '../report/report.js';
import { emptyOutcome } from '../workload/runner.js';
import { AGENT_WORKLOAD, type WorkloadStep } from '../workload/workload.js';
import { modeClass, STRICT_MODE, type SweepMode } from './mode.js';

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

/** What {@link reportCoverage} knows of a sweep besides the operations that failed. */
export interface CoverageDetail {
  /** The operations some injected fault landed in ({@link injectionTracker}), failed or not. */
  reached?: ReadonlySet<WorkloadStep['kind']>;
  /** The storage calls (fs) or steps (engine) of the `close()` after the workload, in the baseline run. */
  closeCalls?: number;
}

/**
 * Fault coverage of a whole error sweep: every operation of the workload must have met an injected
 * fault (a typed error) in some run. One the port or hook never reaches, say a `has` that reads
 * around the fault hook, would pass every cell untested; one that faults reached and that
 * succeeded all the same swallows its errors (told apart by `detail.reached`).
 */
export function reportCoverage(
  report: ReportBuilder,
  backend: string,
  failed: ReadonlySet<WorkloadStep['kind']>,
  complete: boolean,
  workload: readonly WorkloadStep[] = AGENT_WORKLOAD,
  mode: SweepMode = STRICT_MODE,
  detail: CoverageDetail = {},
): void {
  if (!complete) return; // stopped early (stopAfterFailures): coverage is not known
  const { reached, closeCalls } = detail;
  const outcome = emptyOutcome();
  const kinds = [...new Set(workload.map((step) => step.kind))];
  for (const kind of kinds.filter((k) => !failed.has(k)))
    outcome.violations.push({
      kind: 'uncovered-operation',
      detail: reached?.has(kind)
        ? `no injected fault ever made ${kind}() fail: faults were injected during it and it succeeded all the same (the backend swallows the error)`
        : `no injected fault ever made ${kind}() fail: the fault hook or port does not reach it`,
    });
  // close() need not fail (a failed cache refresh may be swallowed when nothing is lost): the
  // note says whether its storage calls were swept at all, the reopen after each judged them.
  const closeNote =
    closeCalls === undefined
      ? ''
      : closeCalls > 0
        ? `; close() swept too (${closeCalls} storage calls)`
        : '; close() made no storage call the fault port or hook sees';
  report.add(
    backend,
    modeClass('fault coverage (every operation)', mode),
    `${kinds.length - outcome.violations.length}/${kinds.length} operations met a fault${closeNote}`,
    outcome,
    true,
  );
}
