// The log of one Mastra thread and the fold that turns it back into the thread and its messages.
//
// A batch is one Mastra call: `mastra/messages` upserts whole messages by id, `mastra/delete`
// removes ids, and the closing event carries the thread record after the call. A message keeps
// the position (seq) at which it was first saved, so messages saved in the same millisecond keep
// their order on every page, and saving a message again with the same content writes nothing.
import { type JsonValue, type SessionEvent, TidemarkError } from '@tidemark/core';
import type { JsonObject } from './codec.js';
import type { Known } from './known-logs.js';
import { CLOSE, type Head, linkOf, recordOf } from './session-log.js';

/** Event types of a thread's log. */
export const THREAD_EVENT = { messages: 'mastra/messages', remove: 'mastra/delete', close: CLOSE } as const;

/** A stored message: Mastra's `MastraDBMessage` as JSON (`createdAt` an ISO string). */
export type StoredMessage = JsonObject & { id: string; threadId: string; createdAt: string };

/** A message in the folded thread, with the seq of the batch that first saved it. */
export interface PlacedMessage {
  message: StoredMessage;
  order: number;
}

/**
 * What a thread's closing event says of its messages after the batch: how many are stored, and the
 * latest creation time among them (epoch ms, null when none), so that the newest messages can be
 * read from the log's end (message-tail.ts).
 */
export interface ThreadStats {
  count: number;
  maxCreatedAt: number | null;
}

/** The stats of a set of placed messages. */
export function statsOf(messages: Iterable<PlacedMessage>): ThreadStats {
  let count = 0;
  let maxCreatedAt: number | null = null;
  for (const { message } of messages) {
    count++;
    const at = new Date(message.createdAt).getTime();
    if (maxCreatedAt === null || at > maxCreatedAt) maxCreatedAt = at;
  }
  return { count, maxCreatedAt };
}

/** The stats a closing event carries; none (an empty thread) when it carries none. */
export function statsFromClose(close: JsonObject | undefined): ThreadStats {
  const stats = close?.stats as { count?: unknown; maxCreatedAt?: unknown } | undefined;
  return {
    count: typeof stats?.count === 'number' ? stats.count : 0,
    maxCreatedAt: typeof stats?.maxCreatedAt === 'number' ? stats.maxCreatedAt : null,
  };
}

/**
 * A thread folded from its whole log (`lastNonce` null when the thread is not stored), or as this
 * process knows it (known-logs.ts).
 */
export interface FoldedThread extends Head {
  /** The thread record (JSON), undefined when the thread is not stored. */
  thread: JsonObject | undefined;
  messages: ReadonlyMap<string, PlacedMessage>;
}

/** A fold being built: its messages are still changed in place. */
type Folding = FoldedThread & { messages: Map<string, PlacedMessage> };

function corrupt(id: string, seq: number, what: string): TidemarkError {
  return new TidemarkError('CORRUPT', `session ${id}, event ${seq}: ${what}`, {
    sessionId: id,
    location: { seq },
  });
}

function apply(folded: Folding, event: SessionEvent, id: string): void {
  const data = event.data as JsonObject | null;
  switch (event.type) {
    case THREAD_EVENT.messages: {
      const messages = data?.messages;
      if (!Array.isArray(messages)) throw corrupt(id, event.seq, 'a messages event without messages');
      const orders = (data?.orders ?? {}) as JsonObject;
      for (const value of messages) {
        const message = value as StoredMessage;
        const placed = folded.messages.get(message.id);
        const order =
          placed?.order ??
          (typeof orders[message.id] === 'number' ? (orders[message.id] as number) : event.seq);
        folded.messages.set(message.id, { message, order });
      }
      return;
    }
    case THREAD_EVENT.remove: {
      const ids = data?.ids;
      if (!Array.isArray(ids)) throw corrupt(id, event.seq, 'a delete event without ids');
      for (const messageId of ids) folded.messages.delete(String(messageId));
      return;
    }
    case THREAD_EVENT.close: {
      const thread = data?.thread;
      if (thread === null || typeof thread !== 'object' || Array.isArray(thread))
        throw corrupt(id, event.seq, 'a closing event without the thread record');
      folded.thread = thread;
      return;
    }
    default:
      throw corrupt(id, event.seq, `event type ${JSON.stringify(event.type)} is not a Mastra thread event`);
  }
}

/**
 * Folds a thread's events batch by batch, skipping a batch that does not link to the closing event
 * before it (planned on a log deleted and written again meanwhile, see `Link` in session-log.ts).
 * @throws TidemarkError CORRUPT for an event this adapter does not write.
 */
export function foldThread(id: string, events: readonly SessionEvent[]): FoldedThread {
  const folded: Folding = { nextSeq: 0, lastNonce: null, thread: undefined, messages: new Map() };
  let start = 0;
  let linked = false;
  for (let i = 0; i < events.length; i++) {
    const event = events[i]!;
    if (event.type !== CLOSE) continue;
    const link = linkOf(event);
    if (link === undefined) throw corrupt(id, event.seq, 'a closing event without its link');
    linked = link.prev === folded.lastNonce;
    if (linked) for (let j = start; j <= i; j++) apply(folded, events[j]!, id);
    folded.lastNonce = link.nonce;
    start = i + 1;
  }
  if (start < events.length) throw corrupt(id, events[start]!.seq, 'events after the last closing event');
  const last = events[events.length - 1];
  if (last === undefined) return folded;
  folded.nextSeq = last.seq + 1;
  folded.last = last;
  // The last batch links: the fold is what the log's last event closes, kept for the next write.
  if (linked) folded.known = { last, messages: folded.messages };
  return folded;
}

/** A thread as this process knows it, when it knows its messages (see known-logs.ts). */
export function knownFold(id: string, known: Known): FoldedThread | undefined {
  if (known.messages === undefined) return undefined;
  const { last } = known;
  return {
    nextSeq: last.seq + 1,
    lastNonce: linkOf(last)?.nonce ?? null,
    last,
    known,
    thread: recordOf(id, last, 'thread'),
    messages: known.messages as ReadonlyMap<string, PlacedMessage>,
  };
}

/** Messages in stored order: by creation time, then by the seq that first saved them. */
export function inStoredOrder(
  messages: Iterable<PlacedMessage>,
  direction: 'ASC' | 'DESC' = 'ASC',
): StoredMessage[] {
  const sign = direction === 'ASC' ? 1 : -1;
  return [...messages]
    .map((placed) => ({ placed, at: new Date(placed.message.createdAt).getTime() }))
    .sort((a, b) => sign * (a.at - b.at || a.placed.order - b.placed.order))
    .map(({ placed }) => placed.message);
}

/**
 * A `mastra/messages` event for `messages`, with the position of each one already stored (its first
 * save), so that a reader of the log's end orders it without the batch that first saved it.
 */
export function messagesEvent(
  messages: readonly StoredMessage[],
  stored: ReadonlyMap<string, PlacedMessage>,
): { type: string; data: JsonValue } {
  const orders: JsonObject = {};
  for (const m of messages) {
    const placed = stored.get(m.id);
    if (placed !== undefined) orders[m.id] = placed.order;
  }
  return { type: THREAD_EVENT.messages, data: { messages: messages as unknown as JsonValue, orders } };
}
