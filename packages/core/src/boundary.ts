import type { SessionEvent } from './event.js';

/** Event types that close a unit of work unless a store is configured otherwise. */
export const DEFAULT_BOUNDARY_TYPES: readonly string[] = ['turn/end', 'session/end'];

/** Decides whether an event closes a unit of work. */
export type BoundaryPredicate = (event: Pick<SessionEvent, 'type'>) => boolean;

/** Builds a predicate from a list of boundary types (default {@link DEFAULT_BOUNDARY_TYPES}). */
export function boundaryPredicate(types: readonly string[] = DEFAULT_BOUNDARY_TYPES): BoundaryPredicate {
  const set = new Set(types);
  return (event) => set.has(event.type);
}

/** What the boundary rule says of a log. */
export interface CommitState {
  /** Seq of the last boundary event, -1 when there is none. */
  committedSeq: number;
  /** True when complete events follow the last boundary. */
  interrupted: boolean;
}

/**
 * Folds events into a {@link CommitState}. Works incrementally: pass the previous state and the
 * events appended since.
 */
export function advanceCommitState(
  previous: CommitState,
  events: readonly Pick<SessionEvent, 'seq' | 'type'>[],
  isBoundary: BoundaryPredicate,
): CommitState {
  let { committedSeq } = previous;
  let last = previous.interrupted ? Number.POSITIVE_INFINITY : committedSeq;
  for (const event of events) {
    last = event.seq;
    if (isBoundary(event)) committedSeq = event.seq;
  }
  return { committedSeq, interrupted: events.length === 0 ? previous.interrupted : last > committedSeq };
}

/** The state of a whole log. */
export function commitStateOf(
  events: readonly Pick<SessionEvent, 'seq' | 'type'>[],
  isBoundary: BoundaryPredicate,
): CommitState {
  return advanceCommitState({ committedSeq: -1, interrupted: false }, events, isBoundary);
}
