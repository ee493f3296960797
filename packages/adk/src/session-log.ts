// Reading an ADK session's log: whole, or from its end only, as far back as a question needs.
// A cold `getSession({ numRecentEvents })` reads the last closing event, then the events from the
// newest snapshot on (at most SNAPSHOT_EVERY batches), and only reaches further back when the
// recent events asked for lie before it.
import { isTidemarkError, type SessionEvent, type SessionStore } from '@tidemark/core';
import type { LogKey } from './keys.js';
import {
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
  range: { fromSeq?: number; last?: number },
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

/** The last closing event of the log and its seq; undefined when the log does not exist. */
export async function readHead(
  store: SessionStore,
  log: LogKey,
): Promise<{ closing: Closing; seq: number } | undefined> {
  const last = await readRange(store, log.id, { last: 1 });
  if (last === undefined) return undefined;
  const end = last[0];
  if (end === undefined) return undefined;
  return { closing: closingOf(end, log.id), seq: end.seq };
}

/** The whole session, folded from seq 0. */
async function readWhole(store: SessionStore, log: LogKey, key: AdkKey): Promise<SessionView | undefined> {
  const events = await readRange(store, log.id, {});
  if (events === undefined || events.length === 0) return undefined;
  const header = headerOf(events[0]!, log.id, key);
  const closing = closingOf(events[events.length - 1]!, log.id);
  return {
    header,
    state: stateOfWholeLog(events, header),
    events: eventsOf(events).list,
    lastUpdateTime: closing.lastUpdateTime,
  };
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
    if (whole) return sliceView(await foldWhole(events, log, key), filter);
    const { list } = eventsOf(events);
    const answered = answers(list, filter);
    const state = stateFromSnapshot(events, closingOf(events[events.length - 1]!, log.id));
    if (answered !== undefined && state !== undefined) {
      // The header is seq 0, outside the view: read it on its own.
      const first = await readRange(store, log.id, { fromSeq: 0, last: 1 });
      if (first === undefined || first.length === 0) return undefined;
      const header = headerOf(first[0]!, log.id, key);
      const lastUpdateTime = closingOf(events[events.length - 1]!, log.id).lastUpdateTime;
      return { header, state, events: answered, lastUpdateTime };
    }
    count *= 2;
  }
}

async function foldWhole(events: SessionEvent[], log: LogKey, key: AdkKey): Promise<SessionView> {
  const header = headerOf(events[0]!, log.id, key);
  return {
    header,
    state: stateOfWholeLog(events, header),
    events: eventsOf(events).list,
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
