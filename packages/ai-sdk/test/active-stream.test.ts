// The active stream id of resumable streams is a compare-and-set through the store's seq rules:
// of many servers racing from the same expected value, exactly one wins, on every backend.
import { isTidemarkError, type SessionEvent, type SessionStore } from '@tidemark/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ChatStore, createChatStore } from '../src/index.js';
import { BACKENDS, type Backend } from './backends.js';

describe.each(BACKENDS)('active stream id on $name', (kind) => {
  let backend: Backend;
  let chats: ChatStore;

  beforeEach(async () => {
    backend = await kind.make();
    chats = createChatStore({ store: await backend.open() });
  });
  afterEach(() => backend.dispose());

  it('sets only from the expected value and clears', async () => {
    const chatId = await chats.createChat();
    expect(await chats.getActiveStreamId(chatId)).toBeNull();
    expect(await chats.setActiveStreamId(chatId, 'other', 's1')).toBe(false);
    expect(await chats.setActiveStreamId(chatId, null, 's1')).toBe(true);
    expect(await chats.setActiveStreamId(chatId, null, 's2')).toBe(false);
    expect(await chats.getActiveStreamId(chatId)).toBe('s1');
    expect(await chats.setActiveStreamId(chatId, 's1', null)).toBe(true);
    expect(await chats.getActiveStreamId(chatId)).toBeNull();
  });

  it('gives exactly one winner among many servers racing from the same expected value', async () => {
    const chatId = await chats.createChat();
    // Six servers, each with its own store instance (own pool, own file handles), four setters each.
    let conflicts = 0;
    const countingConflicts = (store: SessionStore): SessionStore =>
      new Proxy(store, {
        get(target, key) {
          if (key !== 'append') {
            const value = Reflect.get(target, key);
            return typeof value === 'function' ? value.bind(target) : value;
          }
          return (id: string, events: readonly SessionEvent[]) =>
            target.append(id, events).catch((error: unknown) => {
              if (isTidemarkError(error, 'CONFLICT')) conflicts++;
              throw error;
            });
        },
      });
    // The claim is about winners, not about the retry budget: a loser retries until it reads the
    // winner's id. With the default budget (16 jittered retries, about half a second) a loser ran
    // out once in a CI dry run, while the first JSONL append (file publish, three syncs) and the
    // lock hand-overs crawled under the harness's disk load; that is a retryable CONFLICT, kept
    // out of this test by a budget no disk should exhaust.
    const servers = await Promise.all(
      Array.from({ length: 6 }, async () =>
        createChatStore({ store: countingConflicts(await backend.open()), maxAttempts: 200 }),
      ),
    );
    const attempts = servers.flatMap((server, s) =>
      Array.from({ length: 4 }, (_, k) => ({
        id: `stream-${s}-${k}`,
        run: () => server.setActiveStreamId(chatId, null, `stream-${s}-${k}`),
      })),
    );
    const results = await Promise.all(attempts.map((attempt) => attempt.run()));
    const winners = attempts.filter((_, i) => results[i] === true).map((attempt) => attempt.id);
    expect(winners).toHaveLength(1);
    expect(await chats.getActiveStreamId(chatId)).toBe(winners[0]);
    // The servers really raced: the store's seq rule turned appends away.
    expect(conflicts).toBeGreaterThan(0);
  });

  it('clears the id in the same batch as the save of the stream that owned it, and only then', async () => {
    const chatId = await chats.createChat();
    expect(await chats.setActiveStreamId(chatId, null, 's1')).toBe(true);
    const messages = [{ id: 'u1', role: 'user' as const, parts: [{ type: 'text' as const, text: 'hi' }] }];
    // An end handler of an older stream leaves the newer stream's id alone.
    await chats.onEnd(chatId, { activeStreamId: 's0' })({ messages, isAborted: false });
    expect(await chats.getActiveStreamId(chatId)).toBe('s1');
    await chats.onEnd(chatId, { activeStreamId: 's1' })({ messages, isAborted: false });
    expect(await chats.getActiveStreamId(chatId)).toBeNull();
  });

  it('creates a chat whose first write is a set', async () => {
    expect(await chats.setActiveStreamId('fresh-chat', null, 's1')).toBe(true);
    expect(await chats.loadChatState('fresh-chat')).toMatchObject({ messages: [], activeStreamId: 's1' });
  });
});
