// Mastra's memory domain over a tidemark store: threads with their messages, and resources.
import type { MastraDBMessage, StorageThreadType } from '@mastra/core/memory';
import {
  jsonValueEquals,
  MemoryStorage,
  type StorageListMessagesInput,
  type StorageListMessagesOutput,
  type StorageListThreadsInput,
  type StorageListThreadsOutput,
  type StorageResourceType,
} from '@mastra/core/storage';
import { type SessionStore, TidemarkError } from '@tidemark/core';
import { type JsonObject, msOf, sameJson, toJsonObject } from './codec.js';
import { checkId, resourceCwd, resourceSessionId, threadSessionId } from './ids.js';
import type { Known } from './known-logs.js';
import { listSessions, removeAll } from './listing.js';
import { answer, contextOf, DEFAULT_MESSAGES_PER_PAGE, pageArgs, selectMessages } from './message-query.js';
import { readNewest } from './message-tail.js';
import { MessageLocator, type MessageUpdate, mergeUpdate } from './message-updates.js';
import {
  decodeMessage,
  decodeResource,
  decodeThread,
  encodeMessage,
  encodeResource,
  encodeThread,
  laterThan,
} from './records.js';
import {
  type Batch,
  commit,
  type Head,
  knownHead,
  type RecordHead,
  readHead,
  removeSession,
} from './session-log.js';
import {
  type FoldedThread,
  knownFold,
  messagesEvent,
  type StoredMessage,
  statsFromClose,
  statsOf,
  THREAD_EVENT,
  type ThreadStats,
} from './thread-log.js';

/** Threads per page when Mastra asks for none. */
const DEFAULT_THREADS_PER_PAGE = 100;

/** The batch that closes a thread call: its record after the call, mirrored in the summary. */
function threadBatch(thread: JsonObject, events: Batch['events'], op: string, stats: ThreadStats): Batch {
  return {
    events,
    close: { op, thread, stats: stats as unknown as JsonObject },
    summary: {
      ...(typeof thread.title === 'string' && { title: thread.title.slice(0, 200) }),
      attrs: { mastra: 'thread', thread },
    },
    cwd: resourceCwd(String(thread.resourceId)),
  };
}

/** A thread's head with its record and the stats of its messages. */
type ThreadHead = Head & { thread: JsonObject | undefined; stats: ThreadStats };

const threadHead = ({ record, close, ...head }: RecordHead): ThreadHead => ({
  ...head,
  thread: record,
  stats: statsFromClose(close),
});

/** A resource's head with its record. */
type ResourceHead = Head & { resource: JsonObject | undefined };

const resourceHead = ({ record, close: _, ...head }: RecordHead): ResourceHead => ({
  ...head,
  resource: record,
});

/**
 * Mastra's `MemoryStorage` kept in a tidemark store. A thread is one session holding its record
 * and its messages; a resource (working memory) is one session. Every read reads what it needs
 * from the store in the same call, so other processes' writes are seen at once. A write is planned
 * on a read of the same call, or, on a store that checks `append(…, { after })`, on what this
 * process knows from its last write to that thread or resource, confirmed by the append itself
 * (`commit` in session-log.ts). Every storage failure rejects with the store's `TidemarkError`
 * (IO, CORRUPT, CLOSED), never with a thread reported missing, a short page or an empty working
 * memory.
 */
export class TidemarkMemoryStorage extends MemoryStorage {
  override readonly supportsPartialThreadUpdate = true;
  readonly #store: SessionStore;
  readonly #locator: MessageLocator;

  constructor(store: SessionStore) {
    super();
    this.#store = store;
    this.#locator = new MessageLocator(store);
  }

  /** Deletes every thread and resource of the store (tests only). */
  override async dangerouslyClearAll(): Promise<void> {
    await removeAll(this.#store, ['thread', 'resource']);
  }

  async #fold(sessionId: string): Promise<FoldedThread> {
    return this.#locator.fold(sessionId);
  }

  async #threadRecord(threadId: string): Promise<ThreadHead> {
    return threadHead(await readHead(this.#store, threadSessionId(threadId), 'thread'));
  }

  /** How a write reads, or knows, a thread's record (not its messages). */
  #threadSteps(threadId: string) {
    const id = threadSessionId(threadId);
    return {
      read: () => this.#threadRecord(threadId),
      fromKnown: (known: Known) => threadHead(knownHead(id, known, 'thread')),
    };
  }

  /** How a write reads, or knows, a thread with its messages. */
  #foldSteps(sessionId: string) {
    return {
      read: () => this.#fold(sessionId),
      fromKnown: (known: Known) => knownFold(sessionId, known),
    };
  }

  override async getThreadById(args: {
    threadId: string;
    resourceId?: string;
  }): Promise<StorageThreadType | null> {
    const { thread } = await this.#threadRecord(checkId(args?.threadId, 'getThreadById: threadId'));
    if (thread === undefined) return null;
    if (args.resourceId !== undefined && thread.resourceId !== args.resourceId) return null;
    return decodeThread(thread);
  }

  override async saveThread(args: { thread: StorageThreadType }): Promise<StorageThreadType> {
    const record = encodeThread(args?.thread, 'saveThread: thread');
    const id = threadSessionId(String(record.id));
    await commit(this.#store, id, {
      ...this.#threadSteps(String(record.id)),
      plan: (state) => ({
        result: undefined,
        batch:
          state.thread !== undefined && sameJson(state.thread, record)
            ? undefined
            : threadBatch(record, [], 'saveThread', state.stats),
      }),
    });
    return args.thread;
  }

  override async updateThread(args: {
    id: string;
    title?: string;
    metadata?: Record<string, unknown>;
  }): Promise<StorageThreadType> {
    const threadId = checkId(args?.id, 'updateThread: id');
    const metadata = args.metadata === undefined ? {} : toJsonObject(args.metadata, 'updateThread: metadata');
    if (args.title !== undefined && typeof args.title !== 'string') {
      throw new TidemarkError('INVALID', 'updateThread: title must be a string');
    }
    const updated = await commit(this.#store, threadSessionId(threadId), {
      ...this.#threadSteps(threadId),
      plan: (state) => {
        if (state.thread === undefined) {
          throw new TidemarkError(
            'NOT_FOUND',
            `updateThread: thread ${JSON.stringify(threadId)} does not exist`,
          );
        }
        const previous = (state.thread.metadata ?? {}) as JsonObject;
        const thread: JsonObject = {
          ...state.thread,
          ...(args.title !== undefined && { title: args.title }),
          metadata: { ...previous, ...metadata },
          updatedAt: laterThan(state.thread.updatedAt),
        };
        return { result: thread, batch: threadBatch(thread, [], 'updateThread', state.stats) };
      },
    });
    return decodeThread(updated);
  }

  override async deleteThread(args: { threadId: string }): Promise<void> {
    await removeSession(this.#store, threadSessionId(checkId(args?.threadId, 'deleteThread: threadId')));
  }

  override async listThreads(args: StorageListThreadsInput = {}): Promise<StorageListThreadsOutput> {
    const { field, direction } = this.parseOrderBy(args.orderBy);
    const page = pageArgs(args.page ?? 0, args.perPage, DEFAULT_THREADS_PER_PAGE);
    this.validateMetadataKeys(args.filter?.metadata);
    const resourceId = args.filter?.resourceId;
    const listed = await listSessions(
      this.#store,
      'thread',
      resourceId === undefined ? undefined : resourceCwd(resourceId),
    );
    // A summary left behind by a call that failed after its batch landed: the record from the log.
    const records = await Promise.all(
      listed.map(async ({ attrs, current }) => {
        const thread = attrs.thread as JsonObject;
        return current ? thread : (await this.#threadRecord(String(thread.id))).thread;
      }),
    );
    let threads = records.filter(
      (thread): thread is JsonObject =>
        thread !== undefined && (resourceId === undefined || thread.resourceId === resourceId),
    );
    const wanted = Object.entries(args.filter?.metadata ?? {});
    if (wanted.length > 0) {
      threads = threads.filter((thread) => {
        const metadata = thread.metadata as JsonObject | undefined;
        return (
          metadata !== undefined && wanted.every(([key, value]) => jsonValueEquals(metadata[key], value))
        );
      });
    }
    const sign = direction === 'ASC' ? 1 : -1;
    threads.sort(
      (a, b) => sign * (msOf(a[field]) - msOf(b[field])) || String(a.id).localeCompare(String(b.id)),
    );
    return {
      threads: threads.slice(page.offset, page.offset + page.perPage).map(decodeThread),
      total: threads.length,
      page: page.page,
      perPage: page.perPageOut,
      hasMore: page.offset + page.perPage < threads.length,
    };
  }

  override async listMessages(args: StorageListMessagesInput): Promise<StorageListMessagesOutput> {
    const ids = Array.isArray(args?.threadId) ? args.threadId : [args?.threadId];
    if (ids.length === 0)
      throw new TidemarkError('INVALID', 'listMessages: threadId must name at least one thread');
    for (const [i, id] of ids.entries()) checkId(id, `listMessages: threadId[${i}]`);
    const { direction } = this.parseOrderBy(args.orderBy, 'ASC');
    const page = pageArgs(args.page ?? 0, args.perPage, DEFAULT_MESSAGES_PER_PAGE);
    const include = args.include ?? [];
    if (page.perPage === 0 && include.length === 0) {
      return { messages: [], total: 0, page: page.page, perPage: page.perPageOut, hasMore: false };
    }
    const filtered = args.filter?.dateRange !== undefined || args.filter?.metadata !== undefined;
    if (ids.length === 1 && include.length === 0 && !filtered && args.resourceId === undefined) {
      if (direction === 'DESC' && page.page === 0 && args.perPage !== false) {
        // What Memory asks before every turn: the newest messages, read from the log's end.
        const tail = await readNewest(this.#store, threadSessionId(ids[0]!), page.perPage);
        return {
          messages: tail.newest.map(decodeMessage),
          total: tail.total,
          page: 0,
          perPage: page.perPageOut,
          hasMore: page.perPage < tail.total,
        };
      }
    }
    const threads = await Promise.all(ids.map((id) => this.#fold(threadSessionId(id))));
    const selected = selectMessages(threads, args, direction);
    const included: StoredMessage[] = [];
    for (const [i, item] of include.entries()) {
      const target = checkId(item?.id, `listMessages: include[${i}].id`);
      const thread = await this.#locator.threadOf(target, item.threadId);
      if (thread === undefined) continue;
      included.push(
        ...contextOf(
          thread,
          target,
          item.withPreviousMessages ?? 0,
          item.withNextMessages ?? 0,
          args.resourceId,
        ),
      );
    }
    return answer(selected, included, args, page, direction);
  }

  override async listMessagesById(args: { messageIds: string[] }): Promise<{ messages: MastraDBMessage[] }> {
    if (!Array.isArray(args?.messageIds))
      throw new TidemarkError('INVALID', 'listMessagesById: messageIds must be an array');
    const found = await this.#locator.find(
      args.messageIds.map((id, i) => checkId(id, `listMessagesById: messageIds[${i}]`)),
    );
    const messages = [...found.values()].map((hit) => hit.message);
    messages.sort((a, b) => msOf(a.createdAt) - msOf(b.createdAt));
    return { messages: messages.map(decodeMessage) };
  }

  override async saveMessages(args: {
    messages: MastraDBMessage[];
  }): Promise<{ messages: MastraDBMessage[] }> {
    if (!Array.isArray(args?.messages))
      throw new TidemarkError('INVALID', 'saveMessages: messages must be an array');
    const stored = args.messages.map((m, i) => encodeMessage(m, `saveMessages: messages[${i}]`));
    const byThread = new Map<string, StoredMessage[]>();
    for (const message of stored) {
      // The last of several messages with one id in one call wins, as with an upsert.
      const list = byThread.get(message.threadId) ?? [];
      byThread.set(message.threadId, [...list.filter((m) => m.id !== message.id), message]);
    }
    // Ids this process last saw in another thread: resaved here, they move (see message-updates.ts).
    const elsewhere = new Map<string, string[]>();
    for (const message of stored) {
      const hint = this.#locator.hintOf(message.id);
      if (hint !== undefined && hint !== threadSessionId(message.threadId)) {
        elsewhere.set(hint, [...(elsewhere.get(hint) ?? []), message.id]);
      }
    }
    for (const [threadId, messages] of byThread) await this.#saveToThread(threadId, messages);
    for (const [sessionId, ids] of elsewhere) await this.#removeFromThread(sessionId, ids);
    for (const message of stored) this.#locator.remember(message.id, threadSessionId(message.threadId));
    return { messages: stored.map(decodeMessage) };
  }

  async #saveToThread(threadId: string, messages: StoredMessage[]): Promise<void> {
    const id = threadSessionId(threadId);
    await commit(this.#store, id, {
      ...this.#foldSteps(id),
      plan: (folded) => {
        if (folded.thread === undefined) {
          throw new TidemarkError(
            'NOT_FOUND',
            `saveMessages: thread ${JSON.stringify(threadId)} does not exist`,
            {
              sessionId: id,
            },
          );
        }
        const changed = messages.filter((m) => !sameJson(folded.messages.get(m.id)?.message, m));
        if (changed.length === 0) return { result: undefined }; // saved before: stored once
        const thread = { ...folded.thread, updatedAt: laterThan(folded.thread.updatedAt) };
        const after = new Map(folded.messages);
        for (const m of changed)
          after.set(m.id, { message: m, order: after.get(m.id)?.order ?? folded.nextSeq });
        const events = [messagesEvent(changed, folded.messages)];
        return {
          result: undefined,
          batch: threadBatch(thread, events, 'saveMessages', statsOf(after.values())),
          messages: after,
        };
      },
    });
    for (const message of messages) this.#locator.remember(message.id, id);
  }

  override async updateMessages(args: { messages: MessageUpdate[] }): Promise<MastraDBMessage[]> {
    if (!Array.isArray(args?.messages))
      throw new TidemarkError('INVALID', 'updateMessages: messages must be an array');
    const updates = args.messages.map((u, i) => ({
      ...u,
      id: checkId(u?.id, `updateMessages: messages[${i}].id`),
    }));
    const found = await this.#locator.find(updates.map((u) => u.id));
    const out: MastraDBMessage[] = [];
    for (const update of updates) {
      const hit = found.get(update.id);
      if (hit === undefined) continue; // Mastra's stores skip ids they do not hold
      const next = mergeUpdate(hit.message, update);
      if (next.threadId !== hit.message.threadId) {
        await this.#saveToThread(next.threadId, [next]); // first where it goes, then away from where it was
        await this.#removeFromThread(hit.sessionId, [update.id]);
        this.#locator.remember(update.id, threadSessionId(next.threadId));
      } else await this.#saveToThread(next.threadId, [{ ...next }]);
      out.push(decodeMessage(next));
    }
    return out;
  }

  override async deleteMessages(messageIds: string[]): Promise<void> {
    if (!Array.isArray(messageIds))
      throw new TidemarkError('INVALID', 'deleteMessages: expected an array of ids');
    if (messageIds.length === 0) return;
    const found = await this.#locator.find(
      messageIds.map((id, i) => checkId(id, `deleteMessages: messageIds[${i}]`)),
    );
    const bySession = new Map<string, string[]>();
    for (const [messageId, hit] of found)
      bySession.set(hit.sessionId, [...(bySession.get(hit.sessionId) ?? []), messageId]);
    for (const [sessionId, ids] of bySession) await this.#removeFromThread(sessionId, ids);
  }

  async #removeFromThread(sessionId: string, ids: string[]): Promise<void> {
    await commit(this.#store, sessionId, {
      ...this.#foldSteps(sessionId),
      plan: (folded) => {
        const present = ids.filter((id) => folded.messages.has(id));
        if (present.length === 0 || folded.thread === undefined) return { result: undefined };
        const thread = { ...folded.thread, updatedAt: laterThan(folded.thread.updatedAt) };
        const events = [{ type: THREAD_EVENT.remove, data: { ids: present } }];
        const after = new Map(folded.messages);
        for (const id of present) after.delete(id);
        return {
          result: undefined,
          batch: threadBatch(thread, events, 'deleteMessages', statsOf(after.values())),
          messages: after,
        };
      },
    });
  }

  async #resourceRecord(resourceId: string): Promise<ResourceHead> {
    return resourceHead(await readHead(this.#store, resourceSessionId(resourceId), 'resource'));
  }

  override async getResourceById(args: { resourceId: string }): Promise<StorageResourceType | null> {
    const { resource } = await this.#resourceRecord(checkId(args?.resourceId, 'getResourceById: resourceId'));
    return resource === undefined ? null : decodeResource(resource);
  }

  override async saveResource(args: { resource: StorageResourceType }): Promise<StorageResourceType> {
    const record = encodeResource(args?.resource, 'saveResource: resource');
    await this.#writeResource(String(record.id), () => record);
    return args.resource;
  }

  override async updateResource(args: {
    resourceId: string;
    workingMemory?: string;
    metadata?: Record<string, unknown>;
  }): Promise<StorageResourceType> {
    const resourceId = checkId(args?.resourceId, 'updateResource: resourceId');
    if (args.workingMemory !== undefined && typeof args.workingMemory !== 'string') {
      throw new TidemarkError('INVALID', 'updateResource: workingMemory must be a string');
    }
    const metadata =
      args.metadata === undefined ? {} : toJsonObject(args.metadata, 'updateResource: metadata');
    const record = await this.#writeResource(resourceId, (previous) => {
      const now = laterThan(previous?.updatedAt);
      return {
        ...(previous ?? { id: resourceId, createdAt: now, metadata: {} }),
        ...(args.workingMemory !== undefined && { workingMemory: args.workingMemory }),
        metadata: { ...((previous?.metadata ?? {}) as JsonObject), ...metadata },
        updatedAt: now,
      };
    });
    return decodeResource(record);
  }

  async #writeResource(
    resourceId: string,
    next: (previous: JsonObject | undefined) => JsonObject,
  ): Promise<JsonObject> {
    const id = resourceSessionId(resourceId);
    return commit(this.#store, id, {
      read: () => this.#resourceRecord(resourceId),
      fromKnown: (known) => resourceHead(knownHead(id, known, 'resource')),
      plan: (state) => {
        const resource = next(state.resource);
        if (state.resource !== undefined && sameJson(state.resource, resource)) return { result: resource };
        return {
          result: resource,
          batch: {
            events: [],
            close: { op: 'resource', resource },
            summary: { attrs: { mastra: 'resource', id: resourceId } },
          },
        };
      },
    });
  }
}
