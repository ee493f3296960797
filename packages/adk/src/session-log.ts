// Reading an ADK session's log: whole, or from its end only, as far back as a question needs.
// A cold `getSession({ numRecentEvents })` reads the last closing event, then the events from the
// newest snapshot on (at most SNAPSHOT_EVERY batches), and only reaches further back when the
// recent events asked for lie before it.
import { isTidemarkError, type SessionEvent, type SessionStore } from '@tidemark/core';
import type { LogKey } from './keys.js';
import {
  ADK_EVENT,
  type Closing,
  closingOf,
  eventsAfter,
  eventsOf,
  headerOf,
  type SessionHeader,
  type SessionView,
  type StoredEvent,
  stateFromSnapshot,
  stateOfWholeLog,
} from './records.js';

/** The ADK key a log is read for. */
export type AdkKey = Omit<SessionHeader, 'state' | 'createdAt'>;

/** Which events a read wants. */
export interface EventFilter {
  numRecentEvents?: number;
  afterTimestamp?: number;
}

/** Every event of the log, in seq order; undefined when the log does not exist. */
export async function readRange(
  store: SessionStore,
  id: string,
  range: { fromSeq?: number; toSeq?: number; last?: number },
): Promise<SessionEvent[] | undefined> {
  const out: SessionEvent[] = [];
  try {
    for await (const event of store.read(id, range)) out.push(event);
  } catch (error) {
    if (isTidemarkError(error, 'NOT_FOUND')) return undefined;
    throw error;
  }
  return out;
}

/** The end of a log: its last closing event, that event's seq, and the event of its batch. */
export interface LogHead {
  closing: Closing;
  seq: number;
  /**
   * The log's last event (the closing event), whole, as read from the store: what a batch planned
   * on this head is appended after (`append(…, { after })`).
   */
  last: SessionEvent;
  /** The ADK event of the last batch (none for a session without events), with its seq. */
  lastEvent?: { event: StoredEvent; seq: number; replaces?: number };
}

/** The end of the log; undefined when the log does not exist. */
export async function readHead(store: SessionStore, log: LogKey): Promise<LogHead | undefined> {
  // A batch is at most [event, snapshot, end]: the last three events hold the last batch.
  const last = await readRange(store, log.id, { last: 3 });
  const end = last?.[last.length - 1];
  if (last === undefined || end === undefined) return undefined;
  const head: LogHead = { closing: closingOf(end, log.id), seq: end.seq, last: end };
  const previousEnd = last.findLastIndex((e, i) => i < last.length - 1 && e.type === ADK_EVENT.end);
  const record = last.slice(previousEnd + 1).find((e) => e.type === ADK_EVENT.event);
  if (record !== undefined) {
    const data = record.data as unknown as { event: StoredEvent; replaces?: number };
    head.lastEvent = {
      event: data.event,
      seq: record.seq,
      ...(data.replaces !== undefined && { replaces: data.replaces }),
    };
  }
  return head;
}

/** The whole session, folded from seq 0. */
async function readWhole(store: SessionStore, log: LogKey, key: AdkKey): Promise<SessionView | undefined> {
  const events = await readRange(store, log.id, {});
  return events === undefined || events.length === 0 ? undefined : foldWhole(events, log, key);
}

/**
 * The session with the events `filter` asks for (every event without a filter); undefined when it
 * does not exist. With a filter only the log's end is read, widened until it holds the answer.
 */
export async function readSession(
  store: SessionStore,
  log: LogKey,
  key: AdkKey,
  filter: EventFilter,
): Promise<SessionView | undefined> {
  if (filter.numRecentEvents === undefined && filter.afterTimestamp === undefined)
    return readWhole(store, log, key);
  const head = await readHead(store, log);
  if (head === undefined) return undefined;
  const wanted = filter.numRecentEvents ?? 0;
  let count = Math.max(head.seq - head.closing.snapshotSeq + 3, 3 * wanted + 3);
  for (;;) {
    const events = await readRange(store, log.id, { last: Math.min(count, head.seq + 1) });
    if (events === undefined || events.length === 0) return undefined;
    const whole = events[0]!.seq === 0;
    if (whole) return sliceView(foldWhole(events, log, key), filter);
    const list = eventsOf(events);
    const answered = answers(list, filter);
    const state = stateFromSnapshot(events, closingOf(events[events.length - 1]!, log.id));
    if (answered !== undefined && state !== undefined) {
      // The header (seq 0) is outside the view; its key is the one the log's id is the hash of.
      const lastUpdateTime = closingOf(events[events.length - 1]!, log.id).lastUpdateTime;
      return { state, events: answered, lastUpdateTime };
    }
    count *= 2;
  }
}

/** A whole log (from seq 0) as the session it holds. */
function foldWhole(events: readonly SessionEvent[], log: LogKey, key: AdkKey): SessionView {
  const header = headerOf(events[0]!, log.id, key);
  return {
    state: stateOfWholeLog(events, header),
    events: eventsOf(events),
    lastUpdateTime: closingOf(events[events.length - 1]!, log.id).lastUpdateTime,
  };
}

function sliceView(view: SessionView, filter: EventFilter): SessionView {
  return { ...view, events: answers(view.events, filter, true) ?? view.events };
}

/** The events `filter` selects from `list`, or undefined when `list` (a log's end) may not hold them all. */
function answers(list: StoredEvent[], filter: EventFilter, whole = false): StoredEvent[] | undefined {
  let events = list;
  if (filter.numRecentEvents !== undefined) {
    if (list.length < filter.numRecentEvents && !whole) return undefined;
    events = events.slice(-filter.numRecentEvents);
  }
  if (filter.afterTimestamp !== undefined) {
    const after = eventsAfter(events, filter.afterTimestamp);
    if (!after.complete && !whole && filter.numRecentEvents === undefined) return undefined;
    events = after.events;
  }
  return events;
}
