// The log of one OpenAI Agents session, and the fold that turns it back into the history.
//
// Every session operation is one batch ending with a boundary event, so a crash leaves either the
// whole operation in the log or none of it; a transaction's operation record is in the same
// batch as its change, so a retry sees it and applies nothing twice.
import { type JsonValue, type SessionEvent, TidemarkError } from '@tidemark/core';

/** Event types this adapter writes. */
export const EVENT = {
  /** One history item, in the injective JSON encoding of `encoding.ts`. */
  item: 'openai/item',
  /** Removes the last `count` items. */
  truncate: 'openai/truncate',
  /** Records a history transaction: `{ operationId, digest }`. */
  operation: 'openai/operation',
  /** Closes every operation's batch: `{ op }`. */
  end: 'turn/end',
} as const;

/** What an operation writes, before seq and time are filled in. */
export interface PlannedEvent {
  type: string;
  data: JsonValue;
}

/** The history folded from the log. */
export interface FoldedHistory {
  /** Items in order, still encoded. */
  items: JsonValue[];
  /** Operation id → digest of the transaction recorded with it. */
  operations: Map<string, string>;
  /** The seq the next batch must start with. */
  nextSeq: number;
}

/** The history of a session that has no log yet (never written, or cleared). */
export function emptyHistory(): FoldedHistory {
  return { items: [], operations: new Map(), nextSeq: 0 };
}

function corrupt(sessionId: string, seq: number, what: string): TidemarkError {
  return new TidemarkError('CORRUPT', `session ${sessionId}, event ${seq}: ${what}`, {
    sessionId,
    location: { seq },
  });
}

function applyEvent(history: FoldedHistory, event: SessionEvent, sessionId: string): void {
  const data = event.data;
  switch (event.type) {
    case EVENT.item:
      history.items.push(data);
      return;
    case EVENT.truncate: {
      const count = (data as { count?: unknown } | null)?.count;
      if (
        typeof count !== 'number' ||
        !Number.isInteger(count) ||
        count < 0 ||
        count > history.items.length
      ) {
        throw corrupt(sessionId, event.seq, 'truncate count out of range');
      }
      history.items.length -= count;
      return;
    }
    case EVENT.operation: {
      const record = data as { operationId?: unknown; digest?: unknown } | null;
      if (typeof record?.operationId !== 'string' || typeof record.digest !== 'string') {
        throw corrupt(sessionId, event.seq, 'operation record without operationId and digest');
      }
      history.operations.set(record.operationId, record.digest);
      return;
    }
    case EVENT.end:
      return;
    default:
      throw corrupt(
        sessionId,
        event.seq,
        `event type ${JSON.stringify(event.type)} is not an OpenAI Agents history event`,
      );
  }
}

/**
 * Folds a session's events into its history.
 * @throws TidemarkError CORRUPT when an event is not one this adapter writes.
 */
export function foldHistory(events: readonly SessionEvent[], sessionId: string): FoldedHistory {
  const history = emptyHistory();
  for (const event of events) applyEvent(history, event, sessionId);
  history.nextSeq = events.length === 0 ? 0 : events[events.length - 1]!.seq + 1;
  return history;
}

/** Closes a planned batch with its boundary event. */
export function closeBatch(op: string, events: PlannedEvent[]): PlannedEvent[] {
  return [...events, { type: EVENT.end, data: { op } }];
}
