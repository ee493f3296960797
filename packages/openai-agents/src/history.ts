// The log of one OpenAI Agents session, and the fold that turns it back into the history.
//
// Every session operation is one batch ending with a boundary event, so a crash leaves either the
// whole operation in the log or none of it; a transaction's operation record is in the same
// batch as its change, so a retry sees it and applies nothing twice.
import { randomBytes } from 'node:crypto';
import { type JsonValue, type SessionEvent, TidemarkError } from '@tidemark/core';

/** Event types this adapter writes. */
export const EVENT = {
  /** One history item, in the injective JSON encoding of `encoding.ts`. */
  item: 'openai/item',
  /** Removes the last `count` items. */
  truncate: 'openai/truncate',
  /** Records a history transaction: `{ operationId, digest }`. */
  operation: 'openai/operation',
  /** Closes every operation's batch: {@link Closing}. */
  end: 'turn/end',
} as const;

/**
 * What the closing event of every batch holds. `count` lets a reader find the last items from the
 * end of the log alone (`tail.ts`). `nonce` is random, so two writers' identical operations are
 * never mistaken for one retried batch, and a cached position can be recognised. `prev` is the
 * nonce of the closing event just before the batch (null for the first): a batch whose `prev` is
 * not that nonce was planned on a log another host deleted and rewrote to the same length while
 * it was planned; it landed on the wrong log, its writer saw that and did not acknowledge it, and
 * every reader skips it. Logs written before these fields hold `{ op }` only and fold as before.
 */
export interface Closing {
  op: string;
  count: number;
  nonce: string;
  prev: string | null;
}

/** What an operation writes, before seq and time are filled in. */
export interface PlannedEvent {
  type: string;
  data: JsonValue;
}

/** Where a log ends: what the next batch needs to be written after it. */
export interface LogHead {
  /** The seq the next batch must start with. */
  nextSeq: number;
  /** The nonce of the last closing event (null: no log, or one written before nonces). */
  lastNonce: string | null;
  /** How many items the history holds. */
  count: number;
  /**
   * The log's last event, whole, as read from the store: what the next batch is appended after
   * (`append(…, { after })`). Undefined when there is no log.
   */
  last?: SessionEvent;
}

/** The history folded from the whole log. */
export interface FoldedHistory extends LogHead {
  /** Items in order, still encoded. */
  items: JsonValue[];
  /** Operation id → digest of the transaction recorded with it. */
  operations: Map<string, string>;
}

/** The history of a session that has no log yet (never written, or cleared). */
export function emptyHistory(): FoldedHistory {
  return { items: [], operations: new Map(), nextSeq: 0, lastNonce: null, count: 0 };
}

function corrupt(sessionId: string, seq: number, what: string): TidemarkError {
  return new TidemarkError('CORRUPT', `session ${sessionId}, event ${seq}: ${what}`, {
    sessionId,
    location: { seq },
  });
}

/** The nonce of a closing event, null when it has none. */
export function nonceOf(event: SessionEvent): string | null {
  const nonce = (event.data as { nonce?: unknown } | null)?.nonce;
  return typeof nonce === 'string' ? nonce : null;
}

/**
 * True when the batch closed by `end` was planned on the log it landed on: its `prev` is the
 * nonce of the closing event before it (`before`). Batches written before links always are.
 */
export function linksTo(end: SessionEvent, before: string | null): boolean {
  const data = end.data as { prev?: unknown } | null;
  return data === null || typeof data !== 'object' || !Object.hasOwn(data, 'prev') || data.prev === before;
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
 * Folds a session's events into its history, batch by batch, skipping a batch that does not link
 * to the one before it (see {@link Closing}).
 * @throws TidemarkError CORRUPT when an event is not one this adapter writes.
 */
export function foldHistory(events: readonly SessionEvent[], sessionId: string): FoldedHistory {
  const history = emptyHistory();
  let start = 0;
  for (let i = 0; i < events.length; i++) {
    const event = events[i]!;
    const closes = event.type === EVENT.end;
    if (!closes && i < events.length - 1) continue;
    if (!closes || linksTo(event, history.lastNonce)) {
      for (let j = start; j <= i; j++) applyEvent(history, events[j]!, sessionId);
    }
    if (closes) history.lastNonce = nonceOf(event);
    start = i + 1;
  }
  const last = events[events.length - 1];
  history.nextSeq = last === undefined ? 0 : last.seq + 1;
  if (last !== undefined) history.last = last;
  history.count = history.items.length;
  return history;
}

/** Closes a planned batch with its boundary event, linked to the batch before it. */
export function closeBatch(
  op: string,
  events: readonly PlannedEvent[],
  count: number,
  prev: string | null,
): PlannedEvent[] {
  const closing: Closing = { op, count, nonce: randomBytes(12).toString('base64url'), prev };
  return [...events, { type: EVENT.end, data: closing as unknown as JsonValue }];
}
