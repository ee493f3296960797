import {
  generateId,
  isTidemarkError,
  KeyedQueue,
  nowIso,
  type SessionStore,
  TidemarkError,
} from '@tidemark/core';
import { type UIMessage, validateUIMessages } from 'ai';
import { describe, sessionIdOfChat } from './chat-ids.js';
import { batchOf, type ChatEnd, emptyChat, type FoldedChat, type Operation, versionOf } from './chat-log.js';
import { readChat } from './chat-reader.js';
import { diffMessages, toStoredMessages } from './messages.js';
import { checkExpectation, checkStreamId, checkUnchangedSince, type Expectation } from './save-rules.js';

/** The schemas `validateUIMessages` takes (everything but the messages). */
export type ChatValidation<UI_MESSAGE extends UIMessage> = Omit<
  Parameters<typeof validateUIMessages<UI_MESSAGE>>[0],
  'messages'
>;

/** Options of {@link createChatStore}. */
export interface ChatStoreOptions<UI_MESSAGE extends UIMessage = UIMessage> {
  /** Any tidemark store: memory, JSONL, SQLite, PostgreSQL. The chat store does not close it. */
  store: SessionStore;
  /**
   * When given, {@link ChatStore.loadChat} checks what it loads with the AI SDK's
   * `validateUIMessages` and these schemas (an empty object checks the message structure only).
   */
  validation?: ChatValidation<UI_MESSAGE>;
  /** Working directory recorded on new chat sessions (the JSONL backend buckets by it). */
  cwd?: string;
  /** Attempts of one operation that loses seq races to other writers before CONFLICT (default 16). */
  maxAttempts?: number;
}

/** Arguments of {@link ChatStore.createChat}. */
export interface CreateChatInit {
  /** The chat id; a time-ordered UUIDv7 when omitted. */
  id?: string;
  /** Title stored in the session summary. */
  title?: string;
}

/** Arguments of {@link ChatStore.saveChat}. */
export interface SaveChatArgs<UI_MESSAGE extends UIMessage = UIMessage> {
  chatId: string;
  /** The whole list the chat is to hold. */
  messages: readonly UI_MESSAGE[];
  /**
   * The `version` of the chat this list was built from ({@link ChatState.version}, or the
   * {@link SaveResult.version} of the previous save). The save is CONFLICT unless the chat's
   * messages are still at that version; any change is then allowed (a regenerate, an edit, a
   * continued message). Without it, the stored list must be a prefix of `messages`.
   */
  version?: string;
  /** Replace whatever the chat holds, without either check: the last writer wins. */
  replace?: boolean;
}

/** What a save wrote. */
export interface SaveResult {
  /** False when the chat already held exactly these messages (nothing appended). */
  written: boolean;
  /** The version of the chat's messages after the save, for a later save built on this list. */
  version: string;
  /** Messages added. */
  appended: number;
  /** Messages whose content changed. */
  replaced: number;
  /** Messages the chat held that the saved list left out. */
  removed: number;
}

/** A chat with everything the adapter records about it. */
export interface ChatState<UI_MESSAGE extends UIMessage = UIMessage> {
  chatId: string;
  /** The tidemark session holding the chat ({@link sessionIdOfChat}). */
  sessionId: string;
  messages: UI_MESSAGE[];
  /**
   * The version of these messages: pass it to `saveChat` or `onEnd` to save a list built from
   * them, whatever it changed. It changes with every write that changes a message.
   */
  version: string;
  /** Id of the stream a client can resume, or null. */
  activeStreamId: string | null;
  /** How the last stream recorded by an end handler ended, with the seq and time of its event. */
  lastEnd?: ChatEnd & { seq: number; time: string };
}

/**
 * The finish event of the AI SDK's UI message streams (`onFinish` of `toUIMessageStreamResponse`
 * and `createUIMessageStream` in AI SDK 6, `onEnd` in 7), reduced to what persistence needs.
 */
export interface ChatEndEvent<UI_MESSAGE extends UIMessage = UIMessage> {
  messages: UI_MESSAGE[];
  isAborted: boolean;
  isContinuation?: boolean;
  responseMessage?: UI_MESSAGE;
  finishReason?: string;
  /** The operation-level outcome (recent AI SDK 6 releases and 7). */
  outcome?: { status: string };
}

/** Options of {@link ChatStore.onEnd}. */
export interface OnEndOptions {
  /** As {@link SaveChatArgs.version}: the version of the chat the response was built from. */
  version?: string;
  /** As {@link SaveChatArgs.replace}. */
  replace?: boolean;
  /**
   * The resumable stream this response was published as. When the chat's active stream id is
   * still this one, the save also clears it, in the same atomic batch.
   */
  activeStreamId?: string;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function checkEndEvent(event: unknown): ChatEndEvent {
  if (typeof event !== 'object' || event === null)
    throw new TidemarkError('INVALID', `end event: expected an object, got ${describe(event)}`);
  const { isAborted, finishReason } = event as Record<string, unknown>;
  if (typeof isAborted !== 'boolean')
    throw new TidemarkError('INVALID', `end event.isAborted: expected a boolean, got ${describe(isAborted)}`);
  if (finishReason !== undefined && typeof finishReason !== 'string') {
    throw new TidemarkError(
      'INVALID',
      `end event.finishReason: expected a string, got ${describe(finishReason)}`,
    );
  }
  return event as ChatEndEvent;
}

/**
 * Chat persistence for the Vercel AI SDK over any tidemark store: one chat is one session, and
 * every operation (create, save, end of a stream, active-stream change) is one appended batch,
 * so it lands whole or not at all. Writes are compare-and-set on the session's next seq: two
 * servers writing one chat never interleave, and the one that loses the race reads the chat
 * again and re-checks what it expects (the version or prefix of a save, the active stream id).
 * It keeps nothing of a chat in memory between calls: every call reads the store, so another
 * host's write or delete is seen as by a process that has just started.
 */
export class ChatStore<UI_MESSAGE extends UIMessage = UIMessage> {
  private readonly store: SessionStore;
  private readonly validation: ChatValidation<UI_MESSAGE> | undefined;
  private readonly cwd: string | undefined;
  private readonly maxAttempts: number;
  private readonly queue = new KeyedQueue();

  constructor(options: ChatStoreOptions<UI_MESSAGE>) {
    if (typeof options !== 'object' || options === null || typeof options.store?.append !== 'function') {
      throw new TidemarkError('INVALID', 'createChatStore: options.store must be a tidemark SessionStore');
    }
    const attempts = options.maxAttempts ?? 16;
    if (!Number.isSafeInteger(attempts) || attempts < 1) {
      throw new TidemarkError(
        'INVALID',
        `createChatStore: maxAttempts must be a positive integer, got ${describe(attempts)}`,
      );
    }
    this.store = options.store;
    this.validation = options.validation;
    this.cwd = options.cwd;
    this.maxAttempts = attempts;
  }

  /**
   * Creates a chat and writes it, so that any server can load it at once, and returns its id.
   * @throws TidemarkError ALREADY_EXISTS when the chat exists, INVALID for a bad id or title.
   */
  async createChat(init: CreateChatInit = {}): Promise<string> {
    const chatId = init.id ?? generateId();
    const sessionId = sessionIdOfChat(chatId);
    return this.queue.run(sessionId, async () => {
      await this.reserve(sessionId, init.title);
      try {
        await this.store.append(
          sessionId,
          batchOf(emptyChat(sessionId, chatId, generateId()), { created: true }, nowIso()),
        );
      } catch (error) {
        if (!isTidemarkError(error, 'CONFLICT')) throw error;
        throw new TidemarkError('ALREADY_EXISTS', `chat ${JSON.stringify(chatId)} already exists`, {
          sessionId,
          cause: error,
        });
      }
      return chatId;
    });
  }

  /**
   * The messages of a chat, validated with `validateUIMessages` when the store (or this call) has
   * validation schemas.
   * @throws TidemarkError NOT_FOUND when the chat was never created or saved, INVALID when the
   *   messages fail validation (the AI SDK's error is the `cause`), and every store error as is.
   */
  async loadChat(
    chatId: string,
    options: { validation?: ChatValidation<UI_MESSAGE> } = {},
  ): Promise<UI_MESSAGE[]> {
    return (await this.loadChatState(chatId, options)).messages;
  }

  /**
   * The chat with the version of its messages, its active stream id and how its last stream
   * ended; validated as {@link ChatStore.loadChat}. NOT_FOUND as loadChat.
   */
  async loadChatState(
    chatId: string,
    options: { validation?: ChatValidation<UI_MESSAGE> } = {},
  ): Promise<ChatState<UI_MESSAGE>> {
    const sessionId = sessionIdOfChat(chatId);
    const chat = await readChat(this.store, sessionId, chatId);
    if (chat === undefined)
      throw new TidemarkError('NOT_FOUND', `chat ${JSON.stringify(chatId)} does not exist`, { sessionId });
    const state: ChatState<UI_MESSAGE> = {
      chatId,
      sessionId,
      messages: await this.validated(
        chat,
        chat.order.map((id) => chat.byId.get(id) as unknown as UI_MESSAGE),
        options.validation ?? this.validation,
      ),
      version: versionOf(chat),
      activeStreamId: chat.activeStreamId,
    };
    if (chat.lastEnd !== undefined) state.lastEnd = chat.lastEnd;
    return state;
  }

  /**
   * Deletes a chat, as `tidemark delete` would. A save without a version after that starts the
   * chat again; one with a version of the deleted chat is CONFLICT.
   * @throws TidemarkError NOT_FOUND when the chat does not exist, and every store error as is.
   */
  async deleteChat(chatId: string): Promise<void> {
    const sessionId = sessionIdOfChat(chatId);
    await this.queue.run(sessionId, async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await this.store.delete(sessionId);
        } catch (error) {
          // Another writer holds the chat right now (a JSONL lock): as a save would, wait and retry.
          if (!isTidemarkError(error, 'CONFLICT')) throw error;
          await this.afterLostRace(chatId, sessionId, attempt, error);
        }
      }
    });
  }

  private async validated(
    chat: FoldedChat,
    messages: UI_MESSAGE[],
    validation: ChatValidation<UI_MESSAGE> | undefined,
  ): Promise<UI_MESSAGE[]> {
    if (validation === undefined || messages.length === 0) return messages;
    try {
      return await validateUIMessages<UI_MESSAGE>({ ...validation, messages });
    } catch (error) {
      const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
      throw new TidemarkError(
        'INVALID',
        `chat ${JSON.stringify(chat.chatId)}: stored messages fail validation: ${reason}`,
        { sessionId: chat.sessionId, cause: error },
      );
    }
  }

  /**
   * Makes the chat hold exactly `messages`, appending only what is new or changed (by message id)
   * as one event; a chat saved for the first time is created with it. Saving the list the chat
   * already holds writes nothing and succeeds.
   *
   * Compare-and-set: a list built from a chat that has changed since is refused, so that no
   * server overwrites what another one saved meanwhile. With `version`, the chat's messages must
   * still be at that version; without it, the messages the chat holds must be the first messages
   * of `messages`, unchanged (a list loaded and then extended). `replace: true` skips both checks.
   * @throws TidemarkError CONFLICT (retryable, nothing written) when the chat changed since the
   *   list was built: load it again, apply the change again and save; INVALID naming the
   *   offending message; CONFLICT after `maxAttempts` lost races; every store error as is.
   */
  async saveChat(args: SaveChatArgs<UI_MESSAGE>): Promise<SaveResult> {
    if (typeof args !== 'object' || args === null)
      throw new TidemarkError('INVALID', `saveChat: expected { chatId, messages }, got ${describe(args)}`);
    return this.save(args.chatId, args.messages, checkExpectation(args, 'saveChat'), undefined, undefined);
  }

  /**
   * A finish handler for `toUIMessageStreamResponse({ onFinish })` or
   * `createUIMessageStream({ onFinish })` (`onEnd` in AI SDK 7): it saves the final messages and
   * records how the stream ended, aborted or not, in one batch. Pass `consumeSseStream:
   * consumeStream` to the response so that a client that goes away does not stop the run before
   * this handler sees its end. A failed save rejects the handler's promise. The save is
   * compare-and-set as {@link ChatStore.saveChat}: pass the `version` the route loaded when the
   * response changes a stored message (a regenerate, a continued message, a tool result).
   */
  onEnd(chatId: string, options: OnEndOptions = {}): (event: ChatEndEvent<UI_MESSAGE>) => Promise<void> {
    sessionIdOfChat(chatId);
    if (options.activeStreamId !== undefined)
      checkStreamId(options.activeStreamId, 'onEnd: options.activeStreamId');
    const expectation = checkExpectation(options, 'onEnd: options');
    return async (event) => {
      const { messages, isAborted, finishReason, responseMessage, outcome } = checkEndEvent(event);
      const end: ChatEnd = { aborted: isAborted };
      if (typeof outcome?.status === 'string') end.outcome = outcome.status;
      if (finishReason !== undefined) end.finishReason = finishReason;
      if (typeof responseMessage?.id === 'string') end.responseMessageId = responseMessage.id;
      await this.save(chatId, messages as UI_MESSAGE[], expectation, end, options.activeStreamId);
    };
  }

  /** The id of the stream a client can resume, or null. NOT_FOUND when the chat does not exist. */
  async getActiveStreamId(chatId: string): Promise<string | null> {
    return (await this.loadChatState(chatId)).activeStreamId;
  }

  /**
   * Compare-and-set of the active stream id: sets it to `next` only if it is `expected` now, and
   * says whether it did. Of many servers racing from the same `expected`, exactly one gets true.
   * A chat that does not exist yet has the active stream id null (and is created by the set).
   * @throws TidemarkError INVALID for a bad id, CONFLICT after `maxAttempts` races lost to writes
   *   that left the id as expected, and every store error as is.
   */
  async setActiveStreamId(chatId: string, expected: string | null, next: string | null): Promise<boolean> {
    checkStreamId(expected, 'setActiveStreamId: expected');
    checkStreamId(next, 'setActiveStreamId: next');
    return this.commit(chatId, (chat) => {
      if (chat.activeStreamId !== expected) return { result: false };
      if (expected === next) return { result: true };
      return { result: true, operation: { activeStream: { expected, next } } };
    });
  }

  private async save(
    chatId: string,
    messages: readonly UI_MESSAGE[],
    expectation: Expectation,
    end: ChatEnd | undefined,
    clearStream: string | undefined,
  ): Promise<SaveResult> {
    const wanted = toStoredMessages(messages);
    return this.commit(chatId, (chat, stored) => {
      const changes = diffMessages(chat, wanted);
      if (changes !== undefined) checkUnchangedSince(chat, stored, wanted, expectation);
      const kept = new Set(wanted.map((message) => message.id));
      const result: SaveResult = {
        written: false,
        version: versionOf(chat),
        appended: changes?.append.length ?? 0,
        replaced: changes?.replace.length ?? 0,
        removed: chat.order.filter((id) => !kept.has(id)).length,
      };
      const operation: Operation = {};
      if (changes !== undefined || end !== undefined) {
        operation.save = {
          changes: changes ?? { append: [], replace: [] },
          ...(end !== undefined && { end }),
        };
      }
      if (clearStream !== undefined && chat.activeStreamId === clearStream)
        operation.activeStream = { expected: clearStream, next: null };
      if (operation.save === undefined && operation.activeStream === undefined) return { result };
      // A save that changes messages makes its own event the messages' version.
      const version =
        changes === undefined
          ? result.version
          : versionOf({ ...chat, messagesSeq: chat.nextSeq + (stored ? 0 : 1) });
      return { result: { ...result, written: true, version }, operation };
    });
  }

  /**
   * Runs one operation as a compare-and-set on the chat's next seq: read the chat, plan, append at
   * the seq read. A CONFLICT of the append means another writer got there first: read again and
   * plan again (a plan may then refuse, with its own CONFLICT, which is not retried).
   */
  private async commit<T>(
    chatId: string,
    plan: (chat: FoldedChat, stored: boolean) => { result: T; operation?: Operation },
  ): Promise<T> {
    const sessionId = sessionIdOfChat(chatId);
    return this.queue.run(sessionId, async () => {
      for (let attempt = 1; ; attempt++) {
        const stored = await readChat(this.store, sessionId, chatId);
        const chat = stored ?? emptyChat(sessionId, chatId, generateId());
        const { result, operation } = plan(chat, stored !== undefined);
        if (operation === undefined) return result;
        try {
          if (stored === undefined) await this.reserve(sessionId);
          await this.store.append(
            sessionId,
            batchOf(chat, { ...operation, created: stored === undefined }, nowIso()),
          );
          return result;
        } catch (error) {
          if (!isTidemarkError(error, 'CONFLICT')) throw error;
          await this.afterLostRace(chatId, sessionId, attempt, error);
        }
      }
    });
  }

  /**
   * After the `attempt`th race lost to another writer: CONFLICT once `maxAttempts` are spent,
   * else a jittered pause, so writers that keep meeting each other (or a JSONL lock another
   * instance or process is handing over) spread out instead of colliding in step.
   */
  private async afterLostRace(
    chatId: string,
    sessionId: string,
    attempt: number,
    cause: unknown,
  ): Promise<void> {
    if (attempt >= this.maxAttempts) {
      throw new TidemarkError(
        'CONFLICT',
        `chat ${JSON.stringify(chatId)}: lost ${attempt} races to other writers`,
        {
          sessionId,
          cause,
          retryable: true,
        },
      );
    }
    await sleep(Math.random() * Math.min(100, 2 ** attempt));
  }

  /** Reserves the session of a chat's first batch. */
  private async reserve(sessionId: string, title?: string): Promise<void> {
    try {
      await this.store.create({
        id: sessionId,
        ...(this.cwd !== undefined && { cwd: this.cwd }),
        ...(title !== undefined && { title }),
      });
    } catch (error) {
      // Reserved here by an attempt that failed, or written by another writer meanwhile: the
      // append at seq 0 decides (it lands, or is CONFLICT and the chat is read again).
      if (!isTidemarkError(error, 'ALREADY_EXISTS')) throw error;
    }
  }
}

/** A {@link ChatStore} over `options.store`. */
export function createChatStore<UI_MESSAGE extends UIMessage = UIMessage>(
  options: ChatStoreOptions<UI_MESSAGE>,
): ChatStore<UI_MESSAGE> {
  return new ChatStore(options);
}
