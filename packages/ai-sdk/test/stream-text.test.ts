// The real AI SDK (streamText, toUIMessageStreamResponse) with its mock model, persisted through
// the end handler, on every backend: a run saved and reloaded, a second turn that appends only the
// new messages, a continuation that replaces the assistant message, an abort and a client that
// goes away.
import type { SessionStore } from '@tidemark/core';
import { consumeStream, convertToModelMessages, streamText, type UIMessage } from 'ai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  CHAT_EVENT,
  type ChatEndEvent,
  type ChatStore,
  createChatStore,
  sessionIdOfChat,
} from '../src/index.js';
import { BACKENDS, type Backend } from './backends.js';
import { deferred, scriptedModel } from './mock-model.js';

type Metadata = { model: string };
type ChatMessage = UIMessage<Metadata>;

const user = (id: string, text: string): ChatMessage => ({
  id,
  role: 'user',
  parts: [{ type: 'text', text }],
});

interface Turn {
  response: Response;
  /** Settles when the end handler has finished (or failed). */
  saved: Promise<void>;
}

/**
 * One POST of a chat route as the AI SDK documents it: the client sends only its new message, the
 * server loads the chat, streams the reply and saves through the end handler.
 */
async function postMessage(
  chats: ChatStore<ChatMessage>,
  chatId: string,
  message: ChatMessage,
  options: {
    words: string[];
    delayMs?: number;
    abortSignal?: AbortSignal;
    consume?: boolean;
    responseId: string;
  },
): Promise<Turn> {
  // The version loaded makes the save compare-and-set whatever the turn changes.
  const { messages: previous, version } = await chats.loadChatState(chatId);
  const messages = [...previous.filter((m) => m.id !== message.id), message];
  const result = streamText({
    model: scriptedModel(options.words, options.delayMs),
    messages: await convertToModelMessages(messages),
    ...(options.abortSignal !== undefined && { abortSignal: options.abortSignal }),
  });
  const done = deferred();
  const onEnd = chats.onEnd(chatId, { version });
  const response = result.toUIMessageStreamResponse<ChatMessage>({
    originalMessages: messages,
    generateMessageId: () => options.responseId,
    messageMetadata: ({ part }) => (part.type === 'start' ? { model: 'mock' } : undefined),
    ...(options.consume === true && { consumeSseStream: consumeStream }),
    onFinish: (event: ChatEndEvent<ChatMessage>) => onEnd(event).then(done.resolve, done.reject),
  });
  return { response, saved: done.promise };
}

const textOf = (message: ChatMessage | undefined) =>
  message?.parts.map((part) => (part.type === 'text' ? part.text : '')).join('') ?? '';

describe.each(BACKENDS)('streamText persisted on $name', (kind) => {
  let backend: Backend;
  let store: SessionStore;
  let chats: ChatStore<ChatMessage>;

  beforeEach(async () => {
    backend = await kind.make();
    store = await backend.open();
    chats = createChatStore<ChatMessage>({
      store,
      validation: { metadataSchema: z.object({ model: z.string() }).optional() },
    });
  });
  afterEach(() => backend.dispose());

  it('saves a run through onEnd, reloads it validated, and continues without duplicating the reply', async () => {
    const chatId = await chats.createChat();
    const first = await postMessage(chats, chatId, user('u1', 'hello?'), {
      words: ['Hi', ' there'],
      responseId: 'a1',
    });
    expect(await first.response.text()).toContain('"delta":" there"');
    await first.saved;

    // Another server (its own store instance) reloads and validates the chat.
    const other = createChatStore<ChatMessage>({
      store: await backend.open(),
      validation: { metadataSchema: z.object({ model: z.string() }).optional() },
    });
    const reloaded = await other.loadChat(chatId);
    expect(reloaded.map((m) => m.id)).toEqual(['u1', 'a1']);
    expect(textOf(reloaded[1])).toBe('Hi there');
    expect(reloaded[1]?.metadata).toEqual({ model: 'mock' });

    const second = await postMessage(other, chatId, user('u2', 'and again'), {
      words: ['Once', ' more'],
      responseId: 'a2',
    });
    await second.response.text();
    await second.saved;

    const final = await chats.loadChat(chatId);
    expect(final.map((m) => m.id)).toEqual(['u1', 'a1', 'u2', 'a2']);
    expect(final.map(textOf)).toEqual(['hello?', 'Hi there', 'and again', 'Once more']);
    // The second save carried only the two new messages.
    const saves = (await store.load(sessionIdOfChat(chatId))).events.filter(
      (e) => e.type === CHAT_EVENT.save,
    );
    expect(
      saves.map((e) => (e.data as unknown as { append: ChatMessage[] }).append.map((m) => m.id)),
    ).toEqual([
      ['u1', 'a1'],
      ['u2', 'a2'],
    ]);
    // A client that posts the whole history again changes nothing.
    expect(await chats.saveChat({ chatId, messages: final })).toMatchObject({ written: false });
  });

  it('replaces the assistant message of a continuation instead of adding a second one', async () => {
    const chatId = await chats.createChat();
    const first = await postMessage(chats, chatId, user('u1', 'start'), {
      words: ['Part', ' one'],
      responseId: 'a1',
    });
    await first.response.text();
    await first.saved;

    // The last message is the assistant's: the AI SDK continues it (isContinuation), which
    // changes a stored message, so the save names the version it continues.
    const { messages, version } = await chats.loadChatState(chatId);
    let continuation: boolean | undefined;
    const onEnd = chats.onEnd(chatId, { version });
    const done = deferred();
    const response = streamText({
      model: scriptedModel([' and two']),
      messages: await convertToModelMessages(messages),
    }).toUIMessageStreamResponse<ChatMessage>({
      originalMessages: messages,
      onFinish: (event) => {
        continuation = event.isContinuation;
        return onEnd(event).then(done.resolve, done.reject);
      },
    });
    await response.text();
    await done.promise;

    expect(continuation).toBe(true);
    const final = await chats.loadChat(chatId);
    expect(final.map((m) => m.id)).toEqual(['u1', 'a1']);
    expect(textOf(final[1])).toBe('Part one and two');
    const saves = (await store.load(sessionIdOfChat(chatId))).events.filter(
      (e) => e.type === CHAT_EVENT.save,
    );
    expect(saves.at(-1)?.data).toMatchObject({ append: [], replace: [{ id: 'a1' }] });
  });

  it('saves an aborted run and records the abort', async () => {
    const chatId = await chats.createChat();
    const controller = new AbortController();
    const turn = await postMessage(chats, chatId, user('u1', 'tell me a long story'), {
      words: ['Once', ' upon', ' a', ' time', ' there', ' was'],
      delayMs: 40,
      abortSignal: controller.signal,
      consume: true,
      responseId: 'a1',
    });
    const reader = turn.response.body!.getReader();
    const decoder = new TextDecoder();
    let seen = '';
    while (!seen.includes('"delta":"Once"')) seen += decoder.decode((await reader.read()).value);
    controller.abort();
    while (!(await reader.read()).done);
    await turn.saved;

    const state = await chats.loadChatState(chatId);
    expect(state.lastEnd).toMatchObject({ aborted: true, outcome: 'aborted', responseMessageId: 'a1' });
    expect(state.messages.map((m) => m.id)).toEqual(['u1', 'a1']);
    expect(textOf(state.messages[1])).toMatch(/^Once/);
    expect(textOf(state.messages[1])).not.toBe('Once upon a time there was');
  });

  it('saves the whole reply when the client disconnects and the response consumes the stream', async () => {
    const chatId = await chats.createChat();
    const turn = await postMessage(chats, chatId, user('u1', 'hi'), {
      words: ['a', 'b', 'c', 'd'],
      delayMs: 20,
      consume: true,
      responseId: 'a1',
    });
    const reader = turn.response.body!.getReader();
    await reader.read();
    await reader.cancel(); // the browser tab closed
    await turn.saved;

    const state = await chats.loadChatState(chatId);
    expect(state.lastEnd).toMatchObject({ aborted: false, outcome: 'completed', finishReason: 'stop' });
    expect(textOf(state.messages[1])).toBe('abcd');
  });

  it('still saves what was streamed when the client disconnects without consumeStream', async () => {
    const chatId = await chats.createChat();
    const turn = await postMessage(chats, chatId, user('u1', 'hi'), {
      words: ['a', 'b', 'c', 'd'],
      delayMs: 30,
      responseId: 'a1',
    });
    const reader = turn.response.body!.getReader();
    const decoder = new TextDecoder();
    let seen = '';
    while (!seen.includes('"delta":"a"')) seen += decoder.decode((await reader.read()).value);
    await reader.cancel();
    await turn.saved;

    const state = await chats.loadChatState(chatId);
    expect(state.messages.map((m) => m.id)).toEqual(['u1', 'a1']);
    // The AI SDK stops the run with the response; it reports no abort, only an unknown outcome.
    expect(state.lastEnd).toMatchObject({ aborted: false, outcome: 'unknown', responseMessageId: 'a1' });
    expect(state.lastEnd?.finishReason).toBeUndefined();
    expect(textOf(state.messages[1])).toMatch(/^a/);
    expect(textOf(state.messages[1])).not.toBe('abcd');
  });
});
