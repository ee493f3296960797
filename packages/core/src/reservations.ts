// The lazy-create rule: `create` writes nothing, it reserves the id in this instance; the first
// batch materializes the session with the reserved meta and any patch `update` kept meanwhile.

import { applyPatch, emptySummary } from './session.js';
import type { SessionMeta, SessionSummary, SummaryPatch } from './store.js';

/** A session created in this instance and not yet materialized by a first batch. */
export interface Reservation {
  meta: Omit<SessionMeta, 'formatVersion'>;
  /** Summary fields given to `create` or `update` before the first batch. */
  patch: SummaryPatch;
}

/**
 * The pending sessions of one store instance. Reservations are per instance by design (contract §4):
 * another instance does not see them, and closing the store discards them.
 */
export class Reservations {
  private readonly pending = new Map<string, Reservation>();

  /** Reserves `meta.id`. The caller has checked that it is neither reserved nor stored. */
  reserve(meta: Omit<SessionMeta, 'formatVersion'>, patch: SummaryPatch): void {
    this.pending.set(meta.id, { meta, patch });
  }

  /** The reservation of `id`, if any. */
  get(id: string): Reservation | undefined {
    return this.pending.get(id);
  }

  /** True when `id` is reserved here. */
  has(id: string): boolean {
    return this.pending.has(id);
  }

  /**
   * Merges `patch` into the reservation of `id` (later fields win) and returns the summary the
   * session would have now; undefined when `id` is not reserved.
   */
  merge(id: string, patch: SummaryPatch): SessionSummary | undefined {
    const reservation = this.pending.get(id);
    if (reservation === undefined) return undefined;
    reservation.patch = { ...reservation.patch, ...patch };
    return applyPatch(emptySummary(reservation.meta), reservation.patch, reservation.meta.createdAt);
  }

  /** Ends the reservation of `id`; true when there was one. */
  end(id: string): boolean {
    return this.pending.delete(id);
  }

  /** Discards every reservation (on close). */
  clear(): void {
    this.pending.clear();
  }
}
