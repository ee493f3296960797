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
    const first = await chats.saveChat({ chatId, messages: one });
    expect(first).toEqual({
      written: true,
      version: expect.any(String),
      appended: 2,
      replaced: 0,
      removed: 0,
    });
    expect(await chats.saveChat({ chatId, messages: one })).toEqual({
      written: false,
      version: first.version,
      appended: 0,
      replaced: 0,
      removed: 0,
    });
    // A changed message: the save names the version its list was built from.
    const two = [one[0]!, msg('a1', 'assistant', 'hello!'), msg('u2', 'user', 'more')];
    const second = await chats.saveChat({ chatId, messages: two, version: first.version });
    expect(second).toEqual({
      written: true,
      version: expect.any(String),
      appended: 1,
      replaced: 1,
      removed: 0,
    });
    expect(second.version).not.toBe(first.version);
    expect((await chats.loadChatState(chatId)).version).toBe(second.version);
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
    // base: the snapshot a reader folds from (the first event, here).
    expect(events[3]?.data).toEqual({ append: [two[2]], replace: [two[1]], base: 0 });
  });

  it('removes and reorders messages as a regenerate does, and can add a removed id back', async () => {
    const chatId = 'chat-2';
    const { version } = await chats.saveChat({
      chatId,
      messages: [msg('u1', 'user', 'q'), msg('a1', 'assistant', 'first try')],
    });
    const regenerated = [msg('u1', 'user', 'q'), msg('a2', 'assistant', 'second try')];
    const saved = await chats.saveChat({ chatId, messages: regenerated, version });
    expect(saved).toMatchObject({ appended: 1, removed: 1 });
    expect(await chats.loadChat(chatId)).toEqual(regenerated);
    const back = [msg('a1', 'assistant', 'back again'), ...regenerated];
    await chats.saveChat({ chatId, messages: back, version: saved.version });
    expect(await chats.loadChat(chatId)).toEqual(back);
    expect(await chats.saveChat({ chatId, messages: [], replace: true })).toMatchObject({ removed: 3 });
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

  it('refuses a save built from a stale load: CONFLICT, retryable, nothing written', async () => {
    const other = createChatStore({ store: await backend.open() });
    const chatId = 'chat-5';
    const base = [msg('u1', 'user', 'hi'), msg('a1', 'assistant', 'hello')];
    await chats.saveChat({ chatId, messages: base });
    const loadedByA = await chats.loadChatState(chatId);
    const loadedByB = await other.loadChatState(chatId);
    const fromA = [...loadedByA.messages, msg('u2', 'user', 'from A'), msg('a2', 'assistant', 'to A')];
    const fromB = [...loadedByB.messages, msg('u3', 'user', 'from B'), msg('a3', 'assistant', 'to B')];
    await chats.saveChat({ chatId, messages: fromA });
    const eventsBefore = (await store.load(sessionIdOfChat(chatId))).events.length;

    // By prefix (no version): the stored list is not where B's list starts.
    const byPrefix = await other.saveChat({ chatId, messages: fromB }).catch((error: unknown) => error);
    expect(byPrefix).toMatchObject({ code: 'CONFLICT', retryable: true });
    expect((byPrefix as Error).message).toMatch(/does not start with them \(message 2, "u2", is "u3"/);
    // By version: B's version is stale even for a list that would pass the prefix rule.
    const byVersion = await other
      .saveChat({ chatId, messages: [...fromA, msg('u3', 'user', 'from B')], version: loadedByB.version })
      .catch((error: unknown) => error);
    expect(byVersion).toMatchObject({ code: 'CONFLICT', retryable: true });
    // A stored message changed by the stale list (a continuation of a1 built on the old load).
    const edited = [base[0]!, msg('a1', 'assistant', 'hello, continued'), ...fromA.slice(2)];
    await expect(other.saveChat({ chatId, messages: edited })).rejects.toMatchObject({ code: 'CONFLICT' });
    expect((await store.load(sessionIdOfChat(chatId))).events).toHaveLength(eventsBefore);
    expect(await chats.loadChat(chatId)).toEqual(fromA);

    // B reloads and applies its turn again: both turns are kept.
    const reloaded = await other.loadChatState(chatId);
    const retried = [...reloaded.messages, ...fromB.slice(2)];
    await other.saveChat({ chatId, messages: retried, version: reloaded.version });
    expect((await chats.loadChat(chatId)).map((m) => m.id)).toEqual(['u1', 'a1', 'u2', 'a2', 'u3', 'a3']);

    // replace: true overwrites whatever is stored, as the caller asked.
    await other.saveChat({ chatId, messages: fromB, replace: true });
    expect(await chats.loadChat(chatId)).toEqual(fromB);
  });

  it('saves a list the chat already holds whatever version it names, and refuses a deleted version', async () => {
    const chatId = 'chat-6';
    const list = [msg('u1', 'user', 'hi')];
    const first = await chats.saveChat({ chatId, messages: list });
    await chats.saveChat({ chatId, messages: [...list, msg('a1', 'assistant', 'yo')] });
    // A retry of a save whose answer was lost: nothing to write, nothing to refuse.
    expect(
      await chats.saveChat({
        chatId,
        messages: [...list, msg('a1', 'assistant', 'yo')],
        version: first.version,
      }),
    ).toMatchObject({ written: false });

    const before = await chats.loadChatState(chatId);
    await chats.deleteChat(chatId);
    await expect(chats.loadChat(chatId)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(chats.deleteChat(chatId)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(
      chats.saveChat({
        chatId,
        messages: [...before.messages, msg('u2', 'user', 'x')],
        version: before.version,
      }),
    ).rejects.toMatchObject({ code: 'CONFLICT', message: expect.stringMatching(/no longer exists/) });
    // Written again to the same length: a new version, so the old one still does not match.
    await chats.saveChat({ chatId, messages: list });
    await chats.saveChat({ chatId, messages: before.messages });
    const again = await chats.loadChatState(chatId);
    expect(again.messages).toEqual(before.messages);
    expect(again.version).not.toBe(before.version);
    await expect(
      chats.saveChat({ chatId, messages: [msg('x', 'user', 'stale')], version: before.version }),
    ).rejects.toMatchObject({ code: 'CONFLICT' });
  });

  it('takes an active stream change or an end record for no change of the messages', async () => {
    const chatId = 'chat-7';
    const saved = await chats.saveChat({ chatId, messages: [msg('u1', 'user', 'hi')] });
    expect(await chats.setActiveStreamId(chatId, null, 's1')).toBe(true);
    await chats.onEnd(chatId, { activeStreamId: 's1' })({
      messages: [msg('u1', 'user', 'hi')],
      isAborted: true,
    });
    const state = await chats.loadChatState(chatId);
    expect(state.version).toBe(saved.version);
    expect(state.activeStreamId).toBeNull();
    // So a reply saved with the version loaded before the stream was claimed still lands.
    const reply = [msg('u1', 'user', 'hi'), msg('a1', 'assistant', 'hello')];
    await chats.onEnd(chatId, { version: saved.version })({ messages: reply, isAborted: false });
    expect(await chats.loadChat(chatId)).toEqual(reply);
  });
});
