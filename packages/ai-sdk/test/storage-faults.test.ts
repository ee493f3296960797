// A storage fault reaches the caller, and through the end handler the AI SDK's response stream,
// as the store's typed IO error: never as an absent chat, an empty chat or a silent success.
// Every operation of the adapter meets every store method it calls failing (each read of a load
// apart: the tail and the read from the snapshot), and after the fault is lifted the chat is as
// it was and the same operation succeeds.
import { isTidemarkError, type SessionEvent, type SessionStore, TidemarkError } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import { convertToModelMessages, streamText, type UIMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import { type ChatStore, createChatStore, sessionIdOfChat } from '../src/index.js';
import { scriptedModel } from './mock-model.js';

const METHODS = ['create', 'append', 'load', 'read', 'has', 'list', 'update', 'delete'] as const;
type Method = (typeof METHODS)[number];

const eio = (what: string) =>
  new TidemarkError('IO', `${what}: EIO: i/o error`, {
    errno: 'EIO',
    retryable: true,
    cause: Object.assign(new Error('EIO'), { code: 'EIO' }),
  });

/** What to fail: a store method, on every call or only on its `nth` call (1-based). */
interface Fault {
  method?: Method;
  nth?: number;
}

/** A store whose `fault.method` fails with IO; counts the calls of every method. */
function faultyStore(inner: SessionStore, fault: Fault, calls: Map<string, number>): SessionStore {
  return new Proxy(inner, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (typeof value !== 'function') return value;
      const method = String(key);
      return (...args: unknown[]) => {
        const count = (calls.get(method) ?? 0) + 1;
        calls.set(method, count);
        const failing = fault.method === method && (fault.nth === undefined || fault.nth === count);
        if (!failing) return value.apply(target, args);
        if (method === 'read') {
          return {
            [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(eio('read')) }),
          } satisfies AsyncIterable<SessionEvent>;
        }
        return Promise.reject(eio(method));
      };
    },
  });
}

const text = (id: string, role: UIMessage['role'], value: string): UIMessage => ({
  id,
  role,
  parts: [{ type: 'text', text: value }],
});
const hi = text('u1', 'user', 'hi');

/** A chat saved 50 times, one message each: its last snapshot lies before the tail a load reads. */
async function seededStore(): Promise<{ inner: SessionStore; held: UIMessage[] }> {
  const inner = await openMemoryStore();
  const chats = createChatStore({ store: inner });
  const held: UIMessage[] = [];
  for (let i = 0; i < 50; i++) {
    held.push(text(`m${i}`, i % 2 === 0 ? 'user' : 'assistant', `message ${i}`));
    await chats.saveChat({ chatId: 'c', messages: held });
  }
  await chats.setActiveStreamId('c', null, 'stream-1');
  return { inner, held };
}

/** Every operation of the adapter, on the seeded chat `c` and on chats that do not exist. */
function operations(held: UIMessage[]): Array<[string, (chats: ChatStore) => Promise<unknown>]> {
  const more = [...held, text('n1', 'user', 'one more')];
  return [
    ['createChat', (chats) => chats.createChat({ id: 'new-chat' })],
    ['loadChat', (chats) => chats.loadChat('c')],
    ['loadChat of an absent chat', (chats) => chats.loadChat('absent').catch(notFoundAsNull)],
    ['loadChatState', (chats) => chats.loadChatState('c')],
    ['saveChat', (chats) => chats.saveChat({ chatId: 'c', messages: more })],
    ['saveChat of a new chat', (chats) => chats.saveChat({ chatId: 'new-chat', messages: [hi] })],
    [
      'saveChat with a version',
      async (chats) => {
        const { version } = await chats.loadChatState('c');
        return chats.saveChat({ chatId: 'c', messages: [hi], version });
      },
    ],
    [
      'onEnd',
      (chats) => chats.onEnd('c', { activeStreamId: 'stream-1' })({ messages: more, isAborted: false }),
    ],
    ['deleteChat', (chats) => chats.deleteChat('c')],
    ['getActiveStreamId', (chats) => chats.getActiveStreamId('c')],
    ['setActiveStreamId', (chats) => chats.setActiveStreamId('c', 'stream-1', 'stream-2')],
  ];
}

/** NOT_FOUND of an absent chat is an answer, not a fault: null, so a fault cannot pass for it. */
function notFoundAsNull(error: unknown): null {
  if (isTidemarkError(error, 'NOT_FOUND')) return null;
  throw error;
}

const { held: HELD } = await seededStore();
const FAULTS: Fault[] = [
  ...METHODS.map((method) => ({ method })),
  { method: 'read', nth: 1 },
  { method: 'read', nth: 2 },
];

describe('every operation under a failing store', () => {
  it.each(operations(HELD).map(([name]) => name))('%s rejects with IO and changes nothing', async (name) => {
    const run = operations(HELD).find(([n]) => n === name)![1];
    let faultsMet = 0;
    for (const fault of FAULTS) {
      const { inner } = await seededStore();
      const before = (await inner.load(sessionIdOfChat('c'))).events;
      const armed: Fault = { ...fault };
      const calls = new Map<string, number>();
      const chats = createChatStore({ store: faultyStore(inner, armed, calls) });
      const outcome = await run(chats).then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      );
      const met = (calls.get(fault.method!) ?? 0) >= (fault.nth ?? 1);
      if (met) {
        faultsMet++;
        expect('error' in outcome, `${name} with ${JSON.stringify(fault)} failing resolved`).toBe(true);
        expect((outcome as { error: unknown }).error).toMatchObject({ name: 'TidemarkError', code: 'IO' });
        // Nothing written: the chat is as it was, and the new chat was not started.
        expect((await inner.load(sessionIdOfChat('c'))).events).toEqual(before);
        expect(await inner.has(sessionIdOfChat('new-chat'))).toBe(false);
        // Lifted: the store is still writable and the same operation succeeds on this instance.
        armed.method = undefined;
        await expect(run(chats)).resolves.not.toBeInstanceOf(Error);
      } else {
        expect(outcome, `${name} with ${JSON.stringify(fault)}, never called`).not.toHaveProperty('error');
      }
      await inner.close();
    }
    expect(faultsMet).toBeGreaterThan(0);
  });
});

describe('storage faults through the AI SDK', () => {
  it('the response stream fails with the IO error of the end handler', async () => {
    const inner = await openMemoryStore();
    const chats = createChatStore({ store: faultyStore(inner, { method: 'append' }, new Map()) });
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
