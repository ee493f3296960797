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
  if (events.length === 0) return { committedSeq: previous.committedSeq, interrupted: previous.interrupted };
  // Only the last boundary matters: search from the end, so that a load asks the predicate about
  // the events after it, not about every event of the log.
  let committedSeq = previous.committedSeq;
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!;
    if (isBoundary(event)) {
      committedSeq = event.seq;
      break;
    }
  }
  return { committedSeq, interrupted: events[events.length - 1]!.seq > committedSeq };
}

/** The state of a whole log. */
export function commitStateOf(
  events: readonly Pick<SessionEvent, 'seq' | 'type'>[],
  isBoundary: BoundaryPredicate,
): CommitState {
  return advanceCommitState({ committedSeq: -1, interrupted: false }, events, isBoundary);
}
