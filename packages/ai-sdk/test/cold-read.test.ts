// A load reads the last few events and the events from the snapshot they name, never the whole
// log, and gives exactly what a fold of the whole log gives: after any sequence of saves,
// regenerates, edits, stream-id changes and ends; for a log written before there were pointers;
// and when another host rewrites the chat between the two reads.
import { type SessionEvent, type SessionStore, TidemarkError } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import type { UIMessage } from 'ai';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { foldChat } from '../src/chat-log.js';
import { readChat } from '../src/chat-reader.js';
import { CHAT_EVENT, createChatStore, sessionIdOfChat } from '../src/index.js';
import { BACKENDS, type Backend } from './backends.js';

const msg = (id: string, role: UIMessage['role'], text: string): UIMessage => ({
  id,
  role,
  parts: [{ type: 'text', text }],
});

/** A store that counts what `load` and `read` hand out. */
function counting(inner: SessionStore, seen: { loads: number; readCalls: unknown[]; readEvents: number }) {
  return new Proxy(inner, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (key === 'load') {
        return (...args: Parameters<SessionStore['load']>) => {
          seen.loads++;
          return target.load(...args);
        };
      }
      if (key === 'read') {
        return (id: string, range?: object) => {
          seen.readCalls.push(range);
          const events = target.read(id, range as never);
          return {
            async *[Symbol.asyncIterator]() {
              for await (const event of events) {
                seen.readEvents++;
                yield event;
              }
            },
          };
        };
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** The chat as a fold of its whole log gives it, without the fields that only steer snapshots. */
async function wholeFold(store: SessionStore, chatId: string) {
  const sessionId = sessionIdOfChat(chatId);
  const { sinceBase, indexed, base, ...chat } = foldChat(
    sessionId,
    chatId,
    (await store.load(sessionId)).events,
  );
  return chat;
}
async function pointerRead(store: SessionStore, chatId: string) {
  const read = await readChat(store, sessionIdOfChat(chatId), chatId);
  if (read === undefined) return undefined;
  const { sinceBase, indexed, base, ...chat } = read;
  return chat;
}

describe.each(BACKENDS)('a cold load on $name', (kind) => {
  let backend: Backend;
  beforeEach(async () => {
    backend = await kind.make();
  });
  afterEach(() => backend.dispose());

  it('reads the tail and the events from the last snapshot, not the whole log', async () => {
    const chats = createChatStore({ store: await backend.open() });
    const chatId = 'long-chat';
    const list: UIMessage[] = [];
    // 150 turns of a route that saves the user's message first and the reply once it ends.
    for (let turn = 0; turn < 150; turn++) {
      list.push(msg(`u${turn}`, 'user', `question ${turn}`));
      await chats.saveChat({ chatId, messages: list });
      list.push(msg(`a${turn}`, 'assistant', `answer ${turn}`));
      await chats.saveChat({ chatId, messages: list });
    }
    const store = await backend.open();
    const events = (await store.load(sessionIdOfChat(chatId))).events;
    expect(events.filter((e) => e.type === CHAT_EVENT.snapshot).length).toBeGreaterThan(0);

    // A new server: its first load.
    const seen = { loads: 0, readCalls: [] as unknown[], readEvents: 0 };
    const cold = createChatStore({ store: counting(store, seen) });
    expect(await cold.loadChat(chatId)).toEqual(list);
    expect(seen.loads).toBe(0);
    expect(seen.readCalls[0]).toEqual({ last: 8 });
    // What follows the tail read starts at a snapshot holding at least half of the chat: the
    // events read are about as many as the chat has messages (one save and its boundary per
    // message here), not as the log has events.
    const fromSnapshot = seen.readCalls.slice(1) as Array<{ fromSeq: number }>;
    expect(fromSnapshot).toHaveLength(1);
    const snapshotSeq = fromSnapshot[0]!.fromSeq;
    expect(events[snapshotSeq]?.type).toBe(CHAT_EVENT.snapshot);
    expect(events.length - snapshotSeq).toBeLessThanOrEqual(list.length + 2);
    expect(events.length).toBeGreaterThan(2 * list.length);
    expect((events[snapshotSeq]!.data as { messages: unknown[] }).messages.length).toBeGreaterThanOrEqual(
      list.length / 2,
    );
    expect(await pointerRead(store, chatId)).toEqual(await wholeFold(store, chatId));
  });

  it('reads a log written before pointers by folding it, and the next save adds a snapshot', async () => {
    const store = await backend.open();
    const chatId = 'old-chat';
    const sessionId = sessionIdOfChat(chatId);
    const time = new Date().toISOString();
    const old = (seq: number, type: string, data: unknown) => ({
      seq,
      type,
      time,
      data: data as SessionEvent['data'],
    });
    // The format-1 log as the adapter wrote it before: no incarnation, no base pointers.
    await store.create({ id: sessionId });
    await store.append(sessionId, [
      old(0, CHAT_EVENT.created, { chatId, format: 1 }),
      old(1, CHAT_EVENT.save, { append: [msg('u1', 'user', 'hi')], replace: [] }),
      old(2, 'turn/end', null),
    ]);
    await store.append(sessionId, [
      old(3, CHAT_EVENT.save, { append: [msg('a1', 'assistant', 'hello')], replace: [] }),
      old(4, CHAT_EVENT.activeStream, { expected: null, next: 's1' }),
      old(5, 'turn/end', null),
    ]);
    const seen = { loads: 0, readCalls: [] as unknown[], readEvents: 0 };
    const chats = createChatStore({ store: counting(store, seen) });
    const state = await chats.loadChatState(chatId);
    expect(state.messages.map((m) => m.id)).toEqual(['u1', 'a1']);
    expect(state.activeStreamId).toBe('s1');
    expect(seen.loads).toBe(1);

    await chats.saveChat({
      chatId,
      messages: [...state.messages, msg('u2', 'user', 'more')],
      version: state.version,
    });
    const events = (await store.load(sessionId)).events;
    expect(events.at(-2)?.type).toBe(CHAT_EVENT.snapshot);
    seen.loads = 0;
    expect((await chats.loadChat(chatId)).map((m) => m.id)).toEqual(['u1', 'a1', 'u2']);
    expect(seen.loads).toBe(0);
  });
});

describe('reads from a snapshot (memory)', () => {
  it('give what a fold of the whole log gives, after any sequence of operations', async () => {
    type Op =
      | { kind: 'append'; n: number }
      | { kind: 'edit'; index: number }
      | { kind: 'regenerate' }
      | { kind: 'stream'; id: string | null }
      | { kind: 'end'; aborted: boolean };
    const op = fc.oneof(
      fc.record({ kind: fc.constant('append' as const), n: fc.integer({ min: 1, max: 6 }) }),
      fc.record({ kind: fc.constant('edit' as const), index: fc.nat() }),
      fc.record({ kind: fc.constant('regenerate' as const) }),
      fc.record({ kind: fc.constant('stream' as const), id: fc.constantFrom(null, 's1', 's2') }),
      fc.record({ kind: fc.constant('end' as const), aborted: fc.boolean() }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 120 }), async (ops: Op[]) => {
        const store = await openMemoryStore();
        const chats = createChatStore({ store });
        const chatId = 'c';
        let next = 0;
        await chats.createChat({ id: chatId });
        for (const step of ops) {
          const { messages, version, activeStreamId } = await chats.loadChatState(chatId);
          if (step.kind === 'append') {
            const added = Array.from({ length: step.n }, () => msg(`m${next++}`, 'user', `text ${next}`));
            await chats.saveChat({ chatId, messages: [...messages, ...added] });
          } else if (step.kind === 'edit' && messages.length > 0) {
            const at = step.index % messages.length;
            const edited = messages.map((m, i) => (i === at ? msg(m.id, m.role, `edited ${next++}`) : m));
            await chats.saveChat({ chatId, messages: edited, version });
          } else if (step.kind === 'regenerate' && messages.length > 0) {
            const reply = msg(`m${next++}`, 'assistant', 'again');
            await chats.saveChat({ chatId, messages: [...messages.slice(0, -1), reply], version });
          } else if (step.kind === 'stream') {
            await chats.setActiveStreamId(chatId, activeStreamId, step.id);
          } else if (step.kind === 'end') {
            await chats.onEnd(chatId)({ messages, isAborted: step.aborted });
          }
          expect(await pointerRead(store, chatId)).toEqual(await wholeFold(store, chatId));
        }
        await store.close();
      }),
      { numRuns: 25 },
    );
  });

  it('reads again when another host rewrites the chat between the tail and the snapshot', async () => {
    const inner = await openMemoryStore();
    const writer = createChatStore({ store: inner });
    const chatId = 'c';
    const long = Array.from({ length: 80 }, (_, i) => msg(`m${i}`, 'user', `text ${i}`));
    for (let i = 1; i <= long.length; i++) await writer.saveChat({ chatId, messages: long.slice(0, i) });
    let rewritten = false;
    const racing = new Proxy(inner, {
      get(target, key) {
        const value = Reflect.get(target, key);
        if (key !== 'read') return typeof value === 'function' ? value.bind(target) : value;
        return (id: string, range?: { fromSeq?: number }) => {
          if (range?.fromSeq === undefined || rewritten) return target.read(id, range);
          rewritten = true;
          // Between this host's two reads, another deletes the chat and writes a short one.
          const events = (async function* () {
            await writer.deleteChat(chatId);
            await writer.saveChat({ chatId, messages: [msg('x', 'user', 'new chat')] });
            yield* target.read(id, range);
          })();
          return events;
        };
      },
    });
    expect(await createChatStore({ store: racing }).loadChat(chatId)).toEqual([msg('x', 'user', 'new chat')]);
    expect(rewritten).toBe(true);
  });

  it('refuses a snapshot of another chat as CORRUPT', () => {
    const time = new Date().toISOString();
    const snapshot = {
      seq: 0,
      type: CHAT_EVENT.snapshot,
      time,
      data: {
        chatId: 'other',
        format: 1,
        incarnation: 'i',
        messagesSeq: 0,
        messages: [],
        activeStreamId: null,
      },
    };
    expect(() => foldChat('c', 'c', [snapshot])).toThrow(TidemarkError);
    expect(() => foldChat('c', 'c', [snapshot])).toThrow(/holds chat "other"/);
  });
});
