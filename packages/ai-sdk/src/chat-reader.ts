/**
 * Reads a chat from the store without folding its whole history: the last few events name the
 * snapshot to start from (see chat-log.ts), and only the events from there on are read. Nothing is
 * kept between calls: every read asks the store, so another host's append, delete or rewrite is
 * seen at once.
 */
import { isTidemarkError, type SessionEvent, type SessionStore } from '@tidemark/core';
import { type FoldedChat, foldChat, isFoldStart, pointerIn } from './chat-log.js';

/** Events read from the end: the longest batch this adapter writes, and room for a few others. */
const TAIL_EVENTS = 8;
/** Reads of tail and snapshot that another writer may overtake before the whole log is folded. */
const POINTER_ATTEMPTS = 3;

async function collect(events: AsyncIterable<SessionEvent>): Promise<SessionEvent[]> {
  const out: SessionEvent[] = [];
  for await (const event of events) out.push(event);
  return out;
}

async function readChatOrThrow(store: SessionStore, sessionId: string, chatId: string): Promise<FoldedChat> {
  for (let attempt = 0; attempt < POINTER_ATTEMPTS; attempt++) {
    const tail = await collect(store.read(sessionId, { last: TAIL_EVENTS }));
    const base = pointerIn(tail);
    if (base === undefined) break;
    const first = tail[0];
    const lastSeq = tail[tail.length - 1]?.seq ?? base;
    // As a count from the end too (`last`), so a store that reads from the end (JSONL) need not
    // read the log from its start; if the chat grew meanwhile the window starts after `base`,
    // which the check below sends round again.
    const events =
      first !== undefined && base >= first.seq
        ? tail.filter((event) => event.seq >= base)
        : await collect(store.read(sessionId, { fromSeq: base, last: lastSeq - base + 1 }));
    // Another host deleted and rewrote the chat between the two reads: read again.
    if (events[0]?.seq !== base || !isFoldStart(events[0])) continue;
    return foldChat(sessionId, chatId, events);
  }
  // No pointer (a log written before there were any, or not a chat at all): the whole log.
  return foldChat(sessionId, chatId, (await store.load(sessionId)).events);
}

/**
 * The chat stored in `sessionId`; undefined only when the session does not exist.
 * @throws TidemarkError as {@link foldChat}, and every store error as is.
 */
export async function readChat(
  store: SessionStore,
  sessionId: string,
  chatId: string,
): Promise<FoldedChat | undefined> {
  try {
    return await readChatOrThrow(store, sessionId, chatId);
  } catch (error) {
    if (isTidemarkError(error, 'NOT_FOUND')) return undefined;
    throw error;
  }
}
