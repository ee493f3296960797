// Finding messages by id, and merging an update into a stored message.
//
// A message lives in its thread's session. `listMessagesById`, `updateMessages` and
// `deleteMessages` name messages by id alone, so the locator remembers where this process last
// saw each id (a hint, bounded) and confirms it by reading that thread in the same call; an id it
// has no hint for, or whose hint the store does not confirm, is looked for in every thread.
// `saveMessages` uses the hints alone to move a message resaved under another thread (looking in
// every thread on every save would cost a scan of the store per turn).
import type { MastraDBMessage } from '@mastra/core/memory';
import type { SessionStore } from '@tidemark/core';
import { isoOf, type JsonObject, toJson } from './codec.js';
import { threadSessionId } from './ids.js';
import { listSessions } from './listing.js';
import { readAll } from './session-log.js';
import { type FoldedThread, foldThread, type StoredMessage } from './thread-log.js';

/** What `updateMessages` may change in a message. */
export type MessageUpdate = Partial<Omit<MastraDBMessage, 'createdAt' | 'content'>> & {
  id: string;
  createdAt?: Date;
  content?: { metadata?: unknown; content?: unknown; [key: string]: unknown };
};

/** A message found by id: the session of its thread and the stored message. */
export interface Found {
  sessionId: string;
  message: StoredMessage;
}

const MAX_HINTS = 100_000;

/** Finds messages by id; see the file comment. */
export class MessageLocator {
  readonly #store: SessionStore;
  readonly #hints = new Map<string, string>();

  constructor(store: SessionStore) {
    this.#store = store;
  }

  /** The thread in session `sessionId`, folded from its whole log; its message ids become hints. */
  async fold(sessionId: string): Promise<FoldedThread> {
    const thread = foldThread(sessionId, await readAll(this.#store, sessionId));
    for (const messageId of thread.messages.keys()) this.remember(messageId, sessionId);
    return thread;
  }

  /** Where this process last saw message `messageId`, unconfirmed. */
  hintOf(messageId: string): string | undefined {
    return this.#hints.get(messageId);
  }

  /** Remembers that message `messageId` was last seen in session `sessionId`. */
  remember(messageId: string, sessionId: string): void {
    this.#hints.delete(messageId);
    this.#hints.set(messageId, sessionId);
    if (this.#hints.size > MAX_HINTS) this.#hints.delete(this.#hints.keys().next().value as string);
  }

  /** The folded thread holding `messageId` (in `threadId` when given), undefined when none does. */
  async threadOf(messageId: string, threadId?: string): Promise<FoldedThread | undefined> {
    if (threadId !== undefined) {
      const thread = await this.fold(threadSessionId(threadId));
      if (thread.messages.has(messageId)) return thread;
    }
    const hit = (await this.find([messageId])).get(messageId);
    return hit === undefined ? undefined : this.fold(hit.sessionId);
  }

  /** Where each of `ids` is stored; ids no thread holds are left out. */
  async find(ids: readonly string[]): Promise<Map<string, Found>> {
    const found = new Map<string, Found>();
    const folds = new Map<string, FoldedThread>();
    const look = async (sessionId: string, wanted: readonly string[]) => {
      let thread = folds.get(sessionId);
      if (thread === undefined) {
        thread = await this.fold(sessionId);
        folds.set(sessionId, thread);
      }
      for (const id of wanted) {
        const placed = thread.messages.get(id);
        if (placed !== undefined && !found.has(id)) {
          found.set(id, { sessionId, message: placed.message });
          this.remember(id, sessionId);
        }
      }
    };
    for (const id of new Set(ids)) {
      const hint = this.#hints.get(id);
      if (hint !== undefined) await look(hint, [id]);
    }
    let missing = ids.filter((id) => !found.has(id));
    if (missing.length === 0) return found;
    for (const listed of await listSessions(this.#store, 'thread')) {
      if (folds.has(listed.sessionId)) continue;
      await look(listed.sessionId, missing);
      missing = missing.filter((id) => !found.has(id));
      if (missing.length === 0) break;
    }
    return found;
  }
}

/** `update` merged into `stored` as Mastra's stores merge it (content and its metadata shallowly). */
export function mergeUpdate(stored: StoredMessage, update: MessageUpdate): StoredMessage {
  const next: JsonObject = { ...stored };
  for (const field of ['role', 'type', 'resourceId', 'threadId'] as const) {
    if (update[field] !== undefined && update[field] !== null)
      next[field] = toJson(update[field], `updateMessages: ${field}`);
  }
  if (update.createdAt !== undefined)
    next.createdAt = isoOf(update.createdAt, 'updateMessages: createdAt', stored.createdAt);
  if (update.content !== undefined) {
    const before = (stored.content ?? {}) as JsonObject;
    const patch = toJson(update.content, 'updateMessages: content') as JsonObject;
    const content: JsonObject = { ...before, ...patch };
    if (before.metadata !== undefined && patch.metadata !== undefined) {
      content.metadata = { ...(before.metadata as JsonObject), ...(patch.metadata as JsonObject) };
    }
    next.content = content;
  }
  return next as StoredMessage;
}
