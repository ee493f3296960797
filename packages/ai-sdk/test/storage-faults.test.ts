// A storage fault reaches the caller, and through the end handler the AI SDK's response stream,
// as the store's typed IO error: never as an absent chat, an empty chat or a silent success. After
// the fault is lifted, the same save lands once.
import { type SessionEvent, type SessionStore, TidemarkError } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import { convertToModelMessages, streamText, type UIMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import { createChatStore, sessionIdOfChat } from '../src/index.js';
import { scriptedModel } from './mock-model.js';

/** A store whose `append` or `load` fails with IO (EIO) while the switch is on. */
function faultyStore(inner: SessionStore, fail: { append: boolean; load: boolean }): SessionStore {
  const eio = (what: string) =>
    new TidemarkError('IO', `${what}: EIO: i/o error`, {
      errno: 'EIO',
      retryable: true,
      cause: Object.assign(new Error('EIO'), { code: 'EIO' }),
    });
  return new Proxy(inner, {
    get(target, key) {
      if (key === 'append' && fail.append)
        return async (_id: string, _events: readonly SessionEvent[]) => Promise.reject(eio('append'));
      if (key === 'load' && fail.load) return async () => Promise.reject(eio('load'));
      const value = Reflect.get(target, key);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

const hi: UIMessage = { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'hi' }] };

describe('storage faults', () => {
  it('a failing append rejects saveChat, createChat and setActiveStreamId with IO and writes nothing', async () => {
    const inner = await openMemoryStore();
    const fail = { append: true, load: false };
    const chats = createChatStore({ store: faultyStore(inner, fail) });
    await expect(chats.createChat({ id: 'c1' })).rejects.toMatchObject({ code: 'IO', errno: 'EIO' });
    await expect(chats.saveChat({ chatId: 'c2', messages: [hi] })).rejects.toMatchObject({ code: 'IO' });
    await expect(chats.setActiveStreamId('c3', null, 's')).rejects.toMatchObject({ code: 'IO' });
    for (const id of ['c1', 'c2', 'c3']) expect(await inner.has(sessionIdOfChat(id))).toBe(false);

    fail.append = false;
    expect(await chats.saveChat({ chatId: 'c2', messages: [hi] })).toMatchObject({
      written: true,
      appended: 1,
    });
    expect(await chats.saveChat({ chatId: 'c2', messages: [hi] })).toMatchObject({ written: false });
    expect(await chats.loadChat('c2')).toEqual([hi]);
  });

  it('a failing load is IO for loadChat and saveChat, never NOT_FOUND or an empty chat', async () => {
    const inner = await openMemoryStore();
    const fail = { append: false, load: false };
    const chats = createChatStore({ store: faultyStore(inner, fail) });
    await chats.saveChat({ chatId: 'c1', messages: [hi] });
    fail.load = true;
    await expect(chats.loadChat('c1')).rejects.toMatchObject({ code: 'IO' });
    await expect(chats.loadChat('never-written')).rejects.toMatchObject({ code: 'IO' });
    // A save must not take an unreadable chat for a new one and start it over.
    await expect(chats.saveChat({ chatId: 'c1', messages: [] })).rejects.toMatchObject({ code: 'IO' });
    fail.load = false;
    expect(await chats.loadChat('c1')).toEqual([hi]);
  });

  it('reaches the AI SDK: the response stream fails with the IO error of the end handler', async () => {
    const inner = await openMemoryStore();
    const chats = createChatStore({ store: faultyStore(inner, { append: true, load: false }) });
    const response = streamText({
      model: scriptedModel(['a', 'b']),
      messages: await convertToModelMessages([hi]),
    }).toUIMessageStreamResponse({
      originalMessages: [hi],
      generateMessageId: () => 'a1',
      onFinish: chats.onEnd('c1'),
    });
    await expect(response.text()).rejects.toMatchObject({ name: 'TidemarkError', code: 'IO' });
    expect(await inner.has(sessionIdOfChat('c1'))).toBe(false);
  });
});
