// A sampled error sweep (the quick run's modes after the first, its write-path workload) runs one
// planned fault in N. A cell exists to show that its fault class surfaces as a typed error, and a
// store may rightly absorb a fault: a writer that retried the batch and succeeded, a sidecar (a
// cache) given up. When every sampled fault of a class was absorbed, the sample proved nothing
// about that class, and the report would fail the cell (`outcome-missing`) for the sample's
// sake. So the sweep samples on, through the class's unsampled faults in plan order, until one
// surfaces or the class is exhausted; an exhausted class still fails, as in the full sweep.

/**
 * The faults to run: the sample, then the unsampled faults (in plan order) whose cell, when
 * their turn comes, still `provesNothing` (see ReportBuilder.provesNothing; the report's counts
 * are the record, so this is asked lazily, after each run has been added to it).
 * @param planned every fault of the sweep, in plan order
 * @param sampled the ones in the sample (a subset of `planned`, the same objects)
 */
export function* sampleUntilProven<Fault>(
  planned: readonly Fault[],
  sampled: readonly Fault[],
  provesNothing: (fault: Fault) => boolean,
): Generator<Fault> {
  yield* sampled;
  if (sampled.length === planned.length) return;
  const ran = new Set(sampled);
  for (const fault of planned) if (!ran.has(fault) && provesNothing(fault)) yield fault;
}
