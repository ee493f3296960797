// saveChat writes only what changed, by message id, as one batch per save, and the fold on load
// gives back exactly the list last saved: new, replaced, removed and reordered messages.
import { isTidemarkError, type SessionStore } from '@tidemark/core';
import type { UIMessage } from 'ai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CHAT_EVENT, type ChatStore, createChatStore, sessionIdOfChat } from '../src/index.js';
import { BACKENDS, type Backend } from './backends.js';

const msg = (id: string, role: UIMessage['role'], text: string): UIMessage => ({
  id,
  role,
  parts: [{ type: 'text', text }],
});

async function rejection(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    if (isTidemarkError(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error('expected a rejection');
}

describe.each(BACKENDS)('saveChat on $name', (kind) => {
  let backend: Backend;
  let store: SessionStore;
  let chats: ChatStore;

  beforeEach(async () => {
    backend = await kind.make();
    store = await backend.open();
    chats = createChatStore({ store });
  });
  afterEach(() => backend.dispose());

  it('appends new messages, replaces changed ones, and writes nothing for an unchanged list', async () => {
    const chatId = 'chat-1';
    const one = [msg('u1', 'user', 'hi'), msg('a1', 'assistant', 'hello')];
    expect(await chats.saveChat({ chatId, messages: one })).toEqual({
      written: true,
      appended: 2,
      replaced: 0,
      removed: 0,
    });
    expect(await chats.saveChat({ chatId, messages: one })).toEqual({
      written: false,
      appended: 0,
      replaced: 0,
      removed: 0,
    });
    const two = [one[0]!, msg('a1', 'assistant', 'hello!'), msg('u2', 'user', 'more')];
    expect(await chats.saveChat({ chatId, messages: two })).toEqual({
      written: true,
      appended: 1,
      replaced: 1,
      removed: 0,
    });
    expect(await chats.loadChat(chatId)).toEqual(two);

    const events = (await store.load(sessionIdOfChat(chatId))).events;
    // created + save + boundary, then save + boundary: one batch per write, each closed by turn/end.
    expect(events.map((e) => e.type)).toEqual([
      CHAT_EVENT.created,
      CHAT_EVENT.save,
      'turn/end',
      CHAT_EVENT.save,
      'turn/end',
    ]);
    expect(events[3]?.data).toEqual({ append: [two[2]], replace: [two[1]] });
  });

  it('removes and reorders messages as a regenerate does, and can add a removed id back', async () => {
    const chatId = 'chat-2';
    await chats.saveChat({ chatId, messages: [msg('u1', 'user', 'q'), msg('a1', 'assistant', 'first try')] });
    const regenerated = [msg('u1', 'user', 'q'), msg('a2', 'assistant', 'second try')];
    expect(await chats.saveChat({ chatId, messages: regenerated })).toMatchObject({
      appended: 1,
      removed: 1,
    });
    expect(await chats.loadChat(chatId)).toEqual(regenerated);
    const back = [msg('a1', 'assistant', 'back again'), ...regenerated];
    await chats.saveChat({ chatId, messages: back });
    expect(await chats.loadChat(chatId)).toEqual(back);
    expect(await chats.saveChat({ chatId, messages: [] })).toMatchObject({ removed: 3 });
    expect(await chats.loadChat(chatId)).toEqual([]);
  });

  it('keeps what the caller later mutates out of the chat, and drops undefined fields as JSON does', async () => {
    const message = { ...msg('u1', 'user', 'original'), metadata: undefined };
    await chats.saveChat({ chatId: 'chat-3', messages: [message] });
    (message.parts[0] as { text: string }).text = 'mutated';
    expect(await chats.loadChat('chat-3')).toEqual([msg('u1', 'user', 'original')]);
  });

  it('creates chats, refuses a second create, and says NOT_FOUND only for a chat never written', async () => {
    const id = await chats.createChat({ title: 'greetings' });
    expect(await chats.loadChat(id)).toEqual([]);
    expect((await store.load(sessionIdOfChat(id))).summary.title).toBe('greetings');
    expect(await rejection(chats.createChat({ id }))).toMatchObject({ code: 'ALREADY_EXISTS' });
    expect(
      await rejection(createChatStore({ store: await backend.open() }).createChat({ id })),
    ).toMatchObject({ code: 'ALREADY_EXISTS' });
    expect(await rejection(chats.loadChat('never-written'))).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('rejects bad input with INVALID naming what was wrong, and writes nothing', async () => {
    const cases: Array<[Promise<unknown>, RegExp]> = [
      [chats.saveChat({ chatId: '', messages: [] }), /chatId: expected a non-empty string/],
      [chats.saveChat({ chatId: 'x'.repeat(129), messages: [] }), /chatId: .* is too long/],
      [chats.saveChat({ chatId: 'c', messages: 'no' as never }), /messages: expected an array/],
      [
        chats.saveChat({ chatId: 'c', messages: [msg('m', 'user', 'a'), msg('m', 'user', 'b')] }),
        /messages\[1\]\.id: "m" is also the id of messages\[0\]/,
      ],
      [
        chats.saveChat({ chatId: 'c', messages: [{ ...msg('', 'user', 'a') }] }),
        /messages\[0\]\.id: expected a non-empty string/,
      ],
      [
        chats.saveChat({ chatId: 'c', messages: [{ ...msg('m', 'user', 'a'), role: 'tool' as never }] }),
        /messages\[0\]\.role/,
      ],
      [
        chats.saveChat({ chatId: 'c', messages: [{ ...msg('m', 'user', 'a'), metadata: { n: 10n } }] }),
        /messages\[0\]\.metadata\.n: BigInt/,
      ],
      [
        chats.saveChat({ chatId: 'c', messages: [{ ...msg('m', 'user', 'a'), metadata: new Date(0) }] }),
        /messages\[0\]\.metadata/,
      ],
      [chats.setActiveStreamId('c', null, ''), /setActiveStreamId: next/],
      [chats.setActiveStreamId('c', 7 as never, 's'), /setActiveStreamId: expected/],
      [chats.onEnd('c')({ messages: [], isAborted: 'yes' as never }), /isAborted: expected a boolean/],
    ];
    for (const [promise, pattern] of cases) {
      const error = await rejection(promise);
      expect(error.code).toBe('INVALID');
      expect(error.message).toMatch(pattern);
    }
    expect(() => chats.onEnd('')).toThrow(/chatId/);
    expect(() => createChatStore({ store: undefined as never })).toThrow(/options.store/);
    expect(await store.has(sessionIdOfChat('c'))).toBe(false);
  });

  it('refuses a session that is not a chat', async () => {
    await store.create({ id: 'plain-session' });
    await store.append('plain-session', [
      { seq: 0, type: 'user/message', time: new Date().toISOString(), data: 'hi' },
    ]);
    expect(await rejection(chats.loadChat('plain-session'))).toMatchObject({
      code: 'INVALID',
      message: expect.stringMatching(/not an AI SDK chat/),
    });
    expect(await rejection(chats.saveChat({ chatId: 'plain-session', messages: [] }))).toMatchObject({
      code: 'INVALID',
    });
  });

  it('wraps a failed validation as INVALID with the AI SDK error as cause', async () => {
    await chats.saveChat({
      chatId: 'chat-4',
      messages: [{ ...msg('u1', 'user', 'hi'), metadata: { n: 1 } }],
    });
    const { z } = await import('zod');
    const error = await rejection(
      chats.loadChat('chat-4', { validation: { metadataSchema: z.object({ n: z.string() }) } }),
    );
    expect(error).toMatchObject({
      code: 'INVALID',
      message: expect.stringMatching(/chat "chat-4": stored messages fail validation: .*metadata/),
    });
    expect(
      await chats.loadChat('chat-4', { validation: { metadataSchema: z.object({ n: z.number() }) } }),
    ).toHaveLength(1);
  });

  it('lets concurrent saves from two servers both land, the later list winning whole', async () => {
    const other = createChatStore({ store: await backend.open() });
    const chatId = 'chat-5';
    await chats.saveChat({ chatId, messages: [msg('u1', 'user', 'hi')] });
    const a = [msg('u1', 'user', 'hi'), msg('a1', 'assistant', 'from server A')];
    const b = [msg('u1', 'user', 'hi'), msg('b1', 'assistant', 'from server B')];
    await Promise.all([chats.saveChat({ chatId, messages: a }), other.saveChat({ chatId, messages: b })]);
    const final = await chats.loadChat(chatId);
    expect([a, b]).toContainEqual(final);
  });
});
