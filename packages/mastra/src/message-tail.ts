// The newest messages of a thread from the end of its log, for what Memory asks before every turn
// (the last N messages, newest first), so that the cost does not grow with the thread.
//
// Reading the last events of the log, the batches after the first closing event in view are folded
// forward from that closing event (skipping a batch that does not link, as the whole fold does).
// A message seen there is in its latest version, and a delete seen there hides it. Every message
// not seen was stored, unchanged, at that first closing event, whose stats say the latest creation
// time among the messages stored then: when the N newest messages seen are all newer than that, no
// unseen message can be among the N newest, and the answer stands. Otherwise more is read, four
// times as much each time, and a log read whole is folded whole. The total is the count of the last
// linked closing event.
import type { SessionEvent, SessionStore } from '@tidemark/core';
import type { JsonObject } from './codec.js';
import { CLOSE, eventAt, linkOf, readAll, readLast } from './session-log.js';
import {
  type FoldedThread,
  foldThread,
  inStoredOrder,
  type PlacedMessage,
  type StoredMessage,
  statsFromClose,
  THREAD_EVENT,
} from './thread-log.js';

/** The newest messages and the total, or undefined when the log holds no thread. */
export interface Tail {
  newest: StoredMessage[];
  total: number;
  thread: FoldedThread['thread'];
}

/** The window's batches folded forward from its first closing event; undefined when it has none. */
function foldWindow(events: readonly SessionEvent[]) {
  const first = events.findIndex((e) => e.type === CLOSE);
  if (first === -1) return undefined;
  const anchor = events[first]!;
  const bound = statsFromClose(anchor.data as JsonObject).maxCreatedAt;
  const seen = new Map<string, PlacedMessage>();
  const deleted = new Set<string>();
  let lastNonce = linkOf(anchor)?.nonce ?? null;
  let close = anchor.data as JsonObject;
  let start = first + 1;
  for (let i = start; i < events.length; i++) {
    const event = events[i]!;
    if (event.type !== CLOSE) continue;
    const link = linkOf(event);
    if (link !== undefined && link.prev === lastNonce) {
      for (const e of events.slice(start, i)) {
        const data = e.data as JsonObject;
        if (e.type === THREAD_EVENT.messages) {
          const orders = (data.orders ?? {}) as JsonObject;
          for (const value of data.messages as unknown as StoredMessage[]) {
            const order = seen.get(value.id)?.order ?? (orders[value.id] as number | undefined) ?? e.seq;
            seen.set(value.id, { message: value, order });
            deleted.delete(value.id);
          }
        } else if (e.type === THREAD_EVENT.remove) {
          for (const messageId of data.ids as unknown as string[]) {
            seen.delete(messageId);
            deleted.add(messageId);
          }
        }
      }
      close = event.data as JsonObject;
    }
    lastNonce = link?.nonce ?? null;
    start = i + 1;
  }
  return { anchor, bound, seen, close };
}

/** True when the window's first closing event links to the one before its batch (it is no stray). */
async function anchorLinks(store: SessionStore, id: string, anchor: SessionEvent): Promise<boolean> {
  const link = linkOf(anchor);
  if (link === undefined) return false;
  const before = anchor.seq - link.size;
  if (before < 0) return link.prev === null;
  const previous = await eventAt(store, id, before);
  return previous !== undefined && linkOf(previous)?.nonce === link.prev;
}

function fromFold(folded: FoldedThread, n: number): Tail {
  return {
    newest: inStoredOrder(folded.messages.values(), 'DESC').slice(0, n),
    total: folded.messages.size,
    thread: folded.thread,
  };
}

/**
 * The `n` newest messages of the thread in session `id` (newest first) and its message count, read
 * from the log's end; the whole log is folded only when its end does not settle the answer.
 */
export async function readNewest(store: SessionStore, id: string, n: number): Promise<Tail> {
  for (let k = 8; ; k *= 4) {
    const events = await readLast(store, id, k);
    if (events.length === 0) return { newest: [], total: 0, thread: undefined };
    if (events[0]!.seq === 0) return fromFold(foldThread(id, events), n); // the whole log
    const window = foldWindow(events);
    if (window === undefined) continue; // one batch longer than the window
    if (!(await anchorLinks(store, id, window.anchor)))
      return fromFold(foldThread(id, await readAll(store, id)), n);
    const newest = inStoredOrder(window.seen.values(), 'DESC').slice(0, n);
    const total = statsFromClose(window.close).count;
    const oldest = newest.at(-1);
    const allSeen = window.seen.size === total;
    const olderThanSeen =
      window.bound === null || (oldest !== undefined && new Date(oldest.createdAt).getTime() > window.bound);
    if (newest.length === Math.min(n, total) && (allSeen || olderThanSeen)) {
      return { newest, total, thread: window.close.thread as FoldedThread['thread'] };
    }
  }
}
