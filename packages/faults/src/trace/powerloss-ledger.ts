// What the traced child had acknowledged at each point of its trace, and what a store of each
// durability mode must therefore show after a power loss there.

import type { Durability as DurabilityMode } from '@tidemark/core';
import { killEventType } from '../real/child-protocol.js';
import { ModelSession, WorkloadModel } from '../verdicts/model.js';
import { canonicalEvent, workloadEvent } from '../workload/workload.js';

/** Whether the batch `[from, from + count)` of the power-loss workload closes a turn (a boundary). */
function holdsBoundary(from: number, count: number): boolean {
  for (let seq = from; seq < from + count; seq++) if (killEventType(seq) === 'turn/end') return true;
  return false;
}

/**
 * The child's `try`/`ack` lines folded in trace order. A strict store must keep every acknowledged
 * batch. A relaxed one (contract §4; the SQLite README) promises the batches acknowledged up to
 * the last one holding a boundary event: that commit's fsync makes it and all before it durable;
 * later ones may be lost, but only whole batches from the end of a session.
 */
export class AckLedger {
  private readonly acked = new Map<string, number>();
  private readonly inFlight = new Map<string, { from: number; count: number }>();
  /** Ends of the acknowledged batches of each session, in order. */
  private readonly ends = new Map<string, number[]>();
  /** The acknowledged ends when the last boundary batch was acknowledged. */
  private promisedRelaxed = new Map<string, number>();

  /** Folds one stdout line of the child in (`try KEY FROM COUNT`, `ack KEY FROM COUNT`). */
  read(line: string): void {
    const [word, key, from, count] = line.trim().split(' ');
    if (key === undefined || (word !== 'try' && word !== 'ack')) return;
    const batch = { from: Number(from), count: Number(count) };
    if (word === 'try') {
      this.inFlight.set(key, batch);
      return;
    }
    this.acked.set(key, batch.from + batch.count);
    this.inFlight.delete(key);
    this.ends.set(key, [...(this.ends.get(key) ?? []), batch.from + batch.count]);
    if (holdsBoundary(batch.from, batch.count)) this.promisedRelaxed = new Map(this.acked);
  }

  /** What the checks expect, as a key: the same disk with the same expectations is checked once. */
  signature(mode: DurabilityMode): string {
    return JSON.stringify([mode, [...this.acked], [...this.inFlight], [...this.promisedRelaxed]]);
  }

  /**
   * The reference model of `mode`: `acked` holds the events that must be there; `inDoubt` every
   * run of whole batches that may follow them (acknowledged but not yet promised, or in flight).
   */
  model(keys: readonly string[], mode: DurabilityMode): WorkloadModel {
    const model = new WorkloadModel();
    const events = (key: string, from: number, to: number) =>
      Array.from({ length: to - from }, (_, j) =>
        canonicalEvent(workloadEvent(key, from + j, killEventType(from + j))),
      );
    for (const key of keys) {
      const acked = this.acked.get(key) ?? 0;
      const promised = mode === 'strict' ? acked : (this.promisedRelaxed.get(key) ?? 0);
      const flight = this.inFlight.get(key);
      const mayFollow = [
        ...(this.ends.get(key) ?? []).filter((end) => end > promised),
        ...(flight === undefined ? [] : [flight.from + flight.count]),
      ];
      const session = new ModelSession(key, undefined);
      session.acked = events(key, 0, promised);
      session.inDoubt = mayFollow.map((end) => events(key, promised, end));
      model.sessions.set(key, session);
    }
    return model;
  }
}
