// A sampled error sweep (the quick run's modes after the first, its write-path workload) runs one
// planned fault in N. A cell exists to show that its fault class surfaces as a typed error, and a
// store may rightly absorb a fault: a writer that retried the batch and succeeded, a sidecar (a
// cache) given up. When every sampled fault of a class was absorbed, the sample proved nothing
// about that class, and the report would fail the cell (`outcome-missing`) for the sample's
// sake. So the sweep samples on, through the class's unsampled faults in plan order, until one
// surfaces or the class is exhausted; an exhausted class still fails, as in the full sweep.
/** What the runs of one fault class have shown so far. */
interface ClassProof {
  injected: boolean;
  surfaced: boolean;
}

/** Lazily extends a sweep's sample; `Fault` is a planned fault, `classOf` names its report row. */
export class CellProof<Fault> {
  private readonly classes = new Map<string, ClassProof>();

  /**
   * @param planned every fault of the sweep, in plan order
   * @param sampled the ones in the sample (a subset of `planned`, the same objects)
   * @param classOf the fault class (report row) of a fault
   */
  constructor(
    private readonly planned: readonly Fault[],
    private readonly sampled: readonly Fault[],
    private readonly classOf: (fault: Fault) => string,
  ) {}

  /** Records one run: whether its fault was injected and whether an error surfaced. */
  note(fault: Fault, injected: boolean, surfaced: boolean): void {
    const proof = this.proofOf(this.classOf(fault));
    proof.injected ||= injected;
    proof.surfaced ||= surfaced;
  }

  /**
   * The faults to run: the sample, then (lazily, as {@link CellProof.note} reports) the unsampled
   * faults of each class whose faults were injected and never surfaced, until one does.
   */
  *runs(): Generator<Fault> {
    yield* this.sampled;
    if (this.sampled.length === this.planned.length) return;
    const ran = new Set(this.sampled);
    for (const fault of this.planned) {
      if (ran.has(fault)) continue;
      const proof = this.classes.get(this.classOf(fault));
      if (proof?.injected === true && !proof.surfaced) yield fault;
    }
  }

  private proofOf(faultClass: string): ClassProof {
    let proof = this.classes.get(faultClass);
    if (proof === undefined) {
      proof = { injected: false, surfaced: false };
      this.classes.set(faultClass, proof);
    }
    return proof;
  }
}
