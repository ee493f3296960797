// Two host processes over one shared store (one JSONL root, one SQLite file, one PostgreSQL
// schema), each with its own long-lived ChatStore, as a server with several workers runs: no
// acknowledged message is lost when both save one chat, and every call sees the other host's
// writes and deletes as a process that has just started would.
import { isTidemarkError, type SessionStore } from '@tidemark/core';
import { type Host, openStoreAt, type SharedStore, sharedBackends, startHost } from '@tidemark/test-hosts';
import type { UIMessage } from 'ai';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ChatState, SaveResult } from '../src/index.js';

const HOST = new URL('./fixtures/chat-host.mjs', import.meta.url);
const backends = await sharedBackends();
const TIMEOUT = 240_000;
const ROUNDS = 12;

const msg = (id: string, role: UIMessage['role'], text: string): UIMessage => ({
  id,
  role,
  parts: [{ type: 'text', text }],
});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const codeOf = (error: unknown) => (isTidemarkError(error) ? error.code : String(error));

/**
 * Saves `added` on top of what the chat holds, as a route retries after a CONFLICT: reload,
 * apply again, save. Gives up after `deadlineMs` (a JSONL lock is handed over within a second of
 * its writer going idle).
 */
async function saveWithRetry(host: Host, chatId: string, added: UIMessage[], deadlineMs = 60_000) {
  const start = Date.now();
  for (;;) {
    const state = await host.call<ChatState>('loadChatState', chatId).catch((error: unknown) => {
      if (isTidemarkError(error, 'NOT_FOUND')) return undefined;
      throw error;
    });
    const messages = [...(state?.messages ?? []), ...added];
    try {
      return await host.call<SaveResult>('saveChat', {
        chatId,
        messages,
        ...(state !== undefined && { version: state.version }),
      });
    } catch (error) {
      if (!isTidemarkError(error, 'CONFLICT') || Date.now() - start > deadlineMs) throw error;
      await sleep(Math.random() * 50);
    }
  }
}

describe.each(backends)('two hosts over one $name store', (backend) => {
  let shared: SharedStore;
  let a: Host;
  let b: Host;
  let store: SessionStore;
  const cleanups: SharedStore[] = [];

  beforeEach(async () => {
    shared = await backend.create();
    cleanups.push(shared);
    [a, b] = await Promise.all([startHost(shared.address, HOST), startHost(shared.address, HOST)]);
    store = await openStoreAt(shared.address);
  });
  afterEach(async () => {
    await Promise.all([a.close(), b.close(), store.close()]);
  });
  afterAll(async () => {
    for (const done of cleanups) await done.cleanup();
  });

  it(
    'load, append, save on one chat from both hosts over many rounds: no acknowledged message lost',
    async () => {
      const chatId = 'shared-chat';
      await a.call('saveChat', { chatId, messages: [msg('u0', 'user', 'hello')] });
      const acknowledged: string[] = ['u0'];
      let conflicts = 0;
      for (let round = 0; round < ROUNDS; round++) {
        // Both hosts load the same chat, then both save their turn on top of it: the route of the
        // AI SDK's guide. Even rounds save by prefix (no version), odd ones by the version loaded.
        const [fromA, fromB] = await Promise.all([
          a.call<ChatState>('loadChatState', chatId),
          b.call<ChatState>('loadChatState', chatId),
        ]);
        const turn = (host: string) => [
          msg(`${host}-u${round}`, 'user', `${host} asks ${round}`),
          msg(`${host}-a${round}`, 'assistant', `${host} answers ${round}`),
        ];
        const save = (host: Host, state: ChatState, added: UIMessage[]) =>
          host.call<SaveResult>('saveChat', {
            chatId,
            messages: [...state.messages, ...added],
            ...(round % 2 === 1 && { version: state.version }),
          });
        const outcomes = await Promise.allSettled([save(a, fromA, turn('A')), save(b, fromB, turn('B'))]);
        for (const [i, outcome] of outcomes.entries()) {
          const added = turn(i === 0 ? 'A' : 'B');
          if (outcome.status === 'fulfilled') {
            acknowledged.push(...added.map((m) => m.id));
            continue;
          }
          // The loser is told, typed and retryable, and wrote nothing; its retry keeps both.
          expect(codeOf(outcome.reason)).toBe('CONFLICT');
          expect((outcome.reason as { retryable?: boolean }).retryable).toBe(true);
          conflicts++;
          await saveWithRetry(i === 0 ? a : b, chatId, added);
          acknowledged.push(...added.map((m) => m.id));
        }
        const held = (await b.call<UIMessage[]>('loadChat', chatId)).map((m) => m.id);
        for (const id of acknowledged) expect(held, `round ${round}: ${id} acknowledged`).toContain(id);
      }
      const final = (await a.call<UIMessage[]>('loadChat', chatId)).map((m) => m.id);
      expect(final).toHaveLength(1 + 4 * ROUNDS);
      expect(new Set(final)).toEqual(new Set(acknowledged));
      // The hosts really raced: both loaded before either saved, so every round had a loser.
      expect(conflicts).toBe(ROUNDS);
    },
    TIMEOUT,
  );

  it(
    'B sees what A wrote after B has loaded, and a save or stream-id claim of B built on its load is refused',
    async () => {
      const chatId = 'write-a-read-b';
      await a.call('saveChat', { chatId, messages: [msg('u1', 'user', 'hi')] });
      const seenByB = await b.call<ChatState>('loadChatState', chatId);
      expect(await b.call('getActiveStreamId', chatId)).toBeNull();

      await saveWithRetry(a, chatId, [msg('a1', 'assistant', 'from A')]);
      expect(await a.call('setActiveStreamId', chatId, null, 'stream-A')).toBe(true);
      expect((await b.call<UIMessage[]>('loadChat', chatId)).map((m) => m.id)).toEqual(['u1', 'a1']);
      expect(await b.call('getActiveStreamId', chatId)).toBe('stream-A');
      expect(await b.call('setActiveStreamId', chatId, null, 'stream-B')).toBe(false);
      const stale = [...seenByB.messages, msg('b1', 'assistant', 'from B')];
      await expect(b.call('saveChat', { chatId, messages: stale })).rejects.toMatchObject({
        code: 'CONFLICT',
      });
      await expect(
        b.call('saveChat', { chatId, messages: stale, version: seenByB.version }),
      ).rejects.toMatchObject({ code: 'CONFLICT' });
      // The end handler of B's stream, built on the same load, is refused too.
      await expect(
        b.call('endTurn', chatId, { version: seenByB.version }, { messages: stale, isAborted: false }),
      ).rejects.toMatchObject({ code: 'CONFLICT' });
      expect((await a.call<UIMessage[]>('loadChat', chatId)).map((m) => m.id)).toEqual(['u1', 'a1']);
    },
    TIMEOUT,
  );

  it(
    'after A deletes and rewrites a chat, B answers from the store, and its old load is refused',
    async () => {
      const chatId = 'deleted-behind';
      await a.call('saveChat', {
        chatId,
        messages: [msg('u1', 'user', 'first life'), msg('a1', 'assistant', 'x')],
      });
      const old = await b.call<ChatState>('loadChatState', chatId);
      expect(await b.call('setActiveStreamId', chatId, null, 'stream-old')).toBe(true);

      await a.call('deleteChat', chatId);
      await expect(b.call('loadChat', chatId)).rejects.toMatchObject({ code: 'NOT_FOUND' });
      await expect(b.call('getActiveStreamId', chatId)).rejects.toMatchObject({ code: 'NOT_FOUND' });
      await expect(
        b.call('saveChat', { chatId, messages: old.messages, version: old.version }),
      ).rejects.toMatchObject({ code: 'CONFLICT' });
      expect(await store.has(chatId)).toBe(false);

      // Rewritten to the same length, with other messages.
      const second = [msg('u1', 'user', 'second life'), msg('a1', 'assistant', 'y')];
      await saveWithRetry(a, chatId, second);
      const now = await b.call<ChatState>('loadChatState', chatId);
      expect(now.messages).toEqual(second);
      expect(now.activeStreamId).toBeNull();
      expect(now.version).not.toBe(old.version);
      const onOld = [...old.messages, msg('u2', 'user', 'on the old chat')];
      await expect(b.call('saveChat', { chatId, messages: onOld })).rejects.toMatchObject({
        code: 'CONFLICT',
      });
      await expect(
        b.call('saveChat', { chatId, messages: onOld, version: old.version }),
      ).rejects.toMatchObject({ code: 'CONFLICT' });
      expect(await b.call('setActiveStreamId', chatId, 'stream-old', null)).toBe(false);
      expect(await a.call('loadChat', chatId)).toEqual(second);
    },
    TIMEOUT,
  );

  it(
    'racing first saves and creates of new chats: one wins each, the other is told and keeps its messages on retry',
    async () => {
      for (let i = 0; i < 6; i++) {
        const chatId = `new-chat-${i}`;
        const fromA = [msg(`a${i}`, 'user', 'A starts it')];
        const fromB = [msg(`b${i}`, 'user', 'B starts it')];
        const outcomes = await Promise.allSettled([
          a.call('saveChat', { chatId, messages: fromA }),
          b.call('saveChat', { chatId, messages: fromB }),
        ]);
        const won = outcomes.filter((o) => o.status === 'fulfilled');
        expect(won).toHaveLength(1);
        const lost = outcomes.findIndex((o) => o.status === 'rejected');
        expect(codeOf((outcomes[lost] as PromiseRejectedResult).reason)).toBe('CONFLICT');
        await saveWithRetry(lost === 0 ? a : b, chatId, lost === 0 ? fromA : fromB);
        const held = (await b.call<UIMessage[]>('loadChat', chatId)).map((m) => m.id);
        expect(held.sort()).toEqual([`a${i}`, `b${i}`]);

        const created = await Promise.allSettled([
          a.call('createChat', { id: `created-${i}` }),
          b.call('createChat', { id: `created-${i}` }),
        ]);
        expect(created.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
        const refused = created.find((o) => o.status === 'rejected') as PromiseRejectedResult;
        expect(['ALREADY_EXISTS', 'CONFLICT']).toContain(codeOf(refused.reason));
        expect(await a.call('loadChat', `created-${i}`)).toEqual([]);
      }
    },
    TIMEOUT,
  );
});
