// The run logs: one tidemark session per run, the session id being the run id. A folded view of
// each run is kept as a hint and confirmed on every call by reading the log from the view's end,
// so another process's appends are seen by the next call; every write is planned from a confirmed
// view and appended at the view's next seq, which the store refuses (CONFLICT) when another
// writer got there first; the plan is then made again from the log as it now is.
import {
  isTidemarkError,
  KeyedQueue,
  type SessionEvent,
  type SessionStore,
  TidemarkError,
} from '@tidemark/core';
import type { Event } from '@workflow/world';
import { EventSchema } from '@workflow/world';
import { decodeValue, encodeValue } from './codec.js';
import type { Plan } from './plan.js';
import { applyEvent, emptyView, nextSeqOf, type RunView } from './view.js';

/** Event types in the log are the World's, under this prefix. */
export const EVENT_TYPE_PREFIX = 'workflow/';
/** How often a write is planned again after losing its seq to another writer before CONFLICT. */
export const MAX_REPLANS = 50;
/** Events a confirming read takes from the log's end before it reads the range in full. */
const TAIL = 16;

async function collect(events: AsyncIterable<SessionEvent>): Promise<SessionEvent[]> {
  const out: SessionEvent[] = [];
  for await (const event of events) out.push(event);
  return out;
}

/**
 * The wait before planning again after a lost seq: none the first time (another writer appended:
 * the next plan sees it), then growing to 100 ms, for a JSONL session whose writer lock another
 * process holds until it goes idle (about 0.3 s after its last append); 50 replans wait about 3.5 s.
 */
export function backoff(attempt: number): Promise<void> {
  if (attempt === 0) return Promise.resolve();
  return new Promise((resolve) => setTimeout(resolve, Math.min(5 * attempt, 100)));
}

export function toSessionEvent(event: Event, seq: number): SessionEvent {
  return {
    seq,
    type: `${EVENT_TYPE_PREFIX}${event.eventType}`,
    time: event.createdAt.toISOString(),
    data: encodeValue(event) ?? null,
  };
}

export function fromSessionEvent(runId: string, stored: SessionEvent): Event {
  const event = decodeValue(stored.data) as Event;
  if (!EventSchema.safeParse(event).success || event.runId !== runId)
    throw new TidemarkError(
      'CORRUPT',
      `run ${runId}: the event at seq ${stored.seq} is not a World event of this run`,
      {
        sessionId: runId,
        location: { row: `seq=${stored.seq}` },
      },
    );
  return event;
}

/** Reserves a session for its first append; one reserved or stored already is fine. */
export async function reserve(store: SessionStore, id: string, cwd: string, title?: string): Promise<void> {
  try {
    await store.create({ id, cwd, ...(title !== undefined ? { title } : {}) });
  } catch (error) {
    if (!isTidemarkError(error, 'ALREADY_EXISTS')) throw error;
  }
}

export class RunLogs {
  private readonly views = new Map<string, RunView>();
  private readonly queue = new KeyedQueue();

  constructor(
    private readonly store: SessionStore,
    /** The `cwd` every run session of this World is listed under. */
    readonly cwd: string,
  ) {}

  /** The run's view, confirmed against the store in this call. An absent run has an empty view. */
  view(runId: string): Promise<RunView> {
    return this.queue.run(runId, () => this.refresh(runId));
  }

  /**
   * Plans against the confirmed view and appends the plan's events at its next seq; plans again
   * when another writer took that seq. Resolves with the view after the append.
   */
  commit(
    runId: string,
    planner: (view: RunView) => Plan,
    title?: string,
  ): Promise<{ view: RunView; plan: Plan }> {
    return this.queue.run(runId, async () => {
      for (let attempt = 0; attempt < MAX_REPLANS; attempt++) {
        await backoff(attempt);
        const view = await this.refresh(runId);
        const plan = planner(view);
        if (plan.kind === 'none') return { view, plan };
        const seq = nextSeqOf(view);
        if (seq === 0) await reserve(this.store, runId, this.cwd, title);
        const batch = plan.events.map((event, i) => toSessionEvent(event, seq + i));
        try {
          await this.store.append(runId, batch);
        } catch (error) {
          if (isTidemarkError(error, 'CONFLICT')) continue;
          const outcome = await this.settle(runId, batch, plan.events);
          if (outcome === 'lost-seq') continue;
          if (outcome !== 'landed') throw error;
          return { view: await this.refresh(runId), plan };
        }
        for (const event of plan.events) applyEvent(view, event);
        return { view, plan };
      }
      throw new TidemarkError(
        'CONFLICT',
        `run ${runId}: lost the next seq to other writers ${MAX_REPLANS} times`,
        {
          sessionId: runId,
        },
      );
    });
  }

  /**
   * After a failed append: whether the batch is in the log after all (an append in doubt), or the
   * seq went to another writer, or neither could be told. It appends the same batch at the same
   * seq again, which the store takes as a retry when it landed the first time, so an append that
   * failed in doubt and a store that answers again do not turn into an error, nor into the event
   * twice when the caller retries.
   */
  private async settle(
    runId: string,
    batch: SessionEvent[],
    events: Event[],
  ): Promise<'landed' | 'lost-seq' | 'unknown'> {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const view = await this.refresh(runId);
        const seq = batch[0]?.seq ?? 0;
        if (nextSeqOf(view) > seq)
          return view.events[seq]?.eventId === events[0]?.eventId ? 'landed' : 'lost-seq';
        await this.store.append(runId, batch);
        return 'landed';
      } catch (error) {
        if (isTidemarkError(error, 'CONFLICT')) return 'lost-seq';
      }
    }
    return 'unknown';
  }

  /**
   * Brings the cached fold up to the log's end. A fold that has events reads only what follows
   * them, from the log's end (`last`: an index lookup on SQLite and PostgreSQL, a backwards read
   * on JSONL, instead of a scan from the start), and reads the rest of the range only when more
   * than {@link TAIL} events were appended since.
   */
  private async refresh(runId: string): Promise<RunView> {
    const view = this.views.get(runId) ?? emptyView(runId);
    const from = nextSeqOf(view);
    try {
      let stored =
        from === 0 ? undefined : await collect(this.store.read(runId, { fromSeq: from, last: TAIL }));
      if (stored === undefined || (stored.length === TAIL && stored[0]?.seq !== from))
        stored = await collect(this.store.read(runId, { fromSeq: from }));
      for (const event of stored) {
        if (event.seq !== nextSeqOf(view))
          throw new TidemarkError(
            'CORRUPT',
            `run ${runId}: expected seq ${nextSeqOf(view)}, read ${event.seq}`,
            {
              sessionId: runId,
              location: { row: `seq=${event.seq}` },
            },
          );
        applyEvent(view, fromSessionEvent(runId, event));
      }
    } catch (error) {
      // True absence only: a run never written (or deleted with tidemark's tools) has no events.
      if (isTidemarkError(error, 'NOT_FOUND')) {
        this.views.delete(runId);
        return emptyView(runId);
      }
      throw error;
    }
    this.views.set(runId, view);
    return view;
  }
}
