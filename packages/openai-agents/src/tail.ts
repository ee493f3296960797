// The last items of a history, found from the end of the log alone, so that a new process reads
// `getItems(limit)` (and plans an `addItems` or `popItem`) with one short read instead of folding
// the whole log. Every closing event says how many items the history holds after its batch, and
// every batch writes its items last, so the items of a batch closed at count C are the positions
// C - k .. C - 1. The item at a position is the one written there last: reading batches from the
// newest, the first item found for each position is the live one.
import { isTidemarkError, type JsonValue, type SessionEvent, type SessionStore } from '@tidemark/core';
import { EVENT, type LogHead, linksTo, nonceOf } from './history.js';

/** The end of a log: its head and its last items. */
export interface LogTail extends LogHead {
  /** The last `min(limit, count)` items in order, still encoded. */
  items: JsonValue[];
}

/** What {@link tailOf} needs when the events it was given do not settle the tail. */
export type TailShortfall = 'read more' | 'fold';

const EMPTY: LogTail = { nextSeq: 0, lastNonce: null, count: 0, items: [] };

/**
 * The tail of a log from its last events (all of them when the first has seq 0). 'read more' when
 * the answer lies further back; 'fold' when the log was written before closing events held counts.
 */
export function tailOf(events: readonly SessionEvent[], limit: number): LogTail | TailShortfall {
  const last = events[events.length - 1];
  if (last === undefined) return { ...EMPTY };
  if (last.type !== EVENT.end) return 'fold';
  const whole = events[0]!.seq === 0;
  const ends: number[] = [];
  events.forEach((event, i) => {
    if (event.type === EVENT.end) ends.push(i);
  });
  let count: number | undefined;
  let want = 0;
  const found = new Map<number, JsonValue>();
  for (let b = ends.length - 1; b >= 0; b--) {
    // The first batch in view may have begun before it: only a whole log shows it all.
    if (b === 0 && !whole) return 'read more';
    const end = events[ends[b]!]!;
    const closing = end.data as { count?: unknown; prev?: unknown } | null;
    if (typeof closing?.count !== 'number' || !Object.hasOwn(closing, 'prev')) return 'fold';
    if (!linksTo(end, b === 0 ? null : nonceOf(events[ends[b - 1]!]!))) continue;
    if (count === undefined) {
      count = closing.count;
      want = Math.min(limit, count);
    }
    if (found.size === want) break;
    const items = events.slice(b === 0 ? 0 : ends[b - 1]! + 1, ends[b]).filter((e) => e.type === EVENT.item);
    items.forEach((item, j) => {
      const position = (closing.count as number) - items.length + j;
      if (position >= count! - want && position < count! && !found.has(position))
        found.set(position, item.data);
    });
    if (found.size === want) break;
  }
  if (count === undefined || found.size < want) return whole ? 'fold' : 'read more';
  const items = Array.from({ length: want }, (_, i) => found.get(count! - want + i)!);
  return { nextSeq: last.seq + 1, lastNonce: nonceOf(last), count, items, last };
}

/**
 * The last `n` events of a session (fewer when it has fewer), in seq order; [] when it does not
 * exist. One indexed lookup on SQLite and PostgreSQL (`read` with `last`).
 */
export async function readLast(store: SessionStore, id: string, n: number): Promise<SessionEvent[]> {
  const out: SessionEvent[] = [];
  try {
    for await (const event of store.read(id, { last: n })) out.push(event);
  } catch (error) {
    if (isTidemarkError(error, 'NOT_FOUND')) return [];
    throw error;
  }
  return out;
}

/**
 * The tail of a session's log with its last `limit` items, reading a few more events than the
 * items wanted and four times as many again while the answer lies further back; undefined when
 * only a fold of the whole log can tell (a log written before closing events held counts).
 */
export async function readTail(store: SessionStore, id: string, limit: number): Promise<LogTail | undefined> {
  for (let n = limit + 16; ; n *= 4) {
    const events = await readLast(store, id, n);
    const tail = tailOf(events, limit);
    if (tail === 'fold') return undefined;
    if (tail !== 'read more') return tail;
    if (events.length < n) return undefined; // the whole log, yet not settled: let the fold decide
  }
}
