import type { HarnessDriver } from './driver.js';
import type { ReportBuilder } from './report.js';
import type { Progress } from './sweeps.js';

/** Options of {@link runRealFaults}. */
export interface RealFaultOptions {
  kills: number;
  scratchDir?: string;
  progress?: Progress;
}

/** Real faults on the real disk and engine (SPEC §7.3). */
export async function runRealFaults(driver: HarnessDriver, report: ReportBuilder, _options: RealFaultOptions): Promise<{ kills: number; acks: number }> {
  if (driver.real === undefined) {
    report.notApplicable(driver.name, 'real faults', 'driver has no real-disk support');
    return { kills: 0, acks: 0 };
  }
  return { kills: 0, acks: 0 };
}
