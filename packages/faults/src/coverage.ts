// The fault-coverage cell of an error sweep: a fault path no injected fault reaches passes every
// other cell untested, so the sweep ends by showing that each operation met one.
import { modeClass, STRICT_MODE, type SweepMode } from './mode.js';
import type { ReportBuilder } from './report.js';
import { emptyOutcome } from './runner.js';
import { AGENT_WORKLOAD, type WorkloadStep } from './workload.js';

/**
 * Fault coverage of a whole error sweep: every operation of the workload must have met an injected
 * fault (a typed error) in some run. One the port or hook never reaches, say a `has` that reads
 * around the fault hook, would pass every cell untested.
 */
export function reportCoverage(
  report: ReportBuilder,
  backend: string,
  failed: ReadonlySet<WorkloadStep['kind']>,
  complete: boolean,
  workload: readonly WorkloadStep[] = AGENT_WORKLOAD,
  mode: SweepMode = STRICT_MODE,
  closeCalls?: number,
): void {
  if (!complete) return; // stopped early (stopAfterFailures): coverage is not known
  const outcome = emptyOutcome();
  const kinds = [...new Set(workload.map((step) => step.kind))];
  for (const kind of kinds.filter((k) => !failed.has(k)))
    outcome.violations.push({
      kind: 'uncovered-operation',
      detail: `no injected fault ever made ${kind}() fail: the fault hook or port does not reach it`,
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
