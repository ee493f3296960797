// The newest messages read from the log's end (what Memory asks before every turn) are exactly what
// the fold of the whole log gives, whatever was saved, resaved, moved and deleted before, and with
// creation times out of order and equal; and on a long thread the read stays at the log's end.
import type { MastraDBMessage } from '@mastra/core/memory';
import type { SessionEvent, SessionStore } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import { describe, expect, it } from 'vitest';
import { TidemarkMastraStore } from '../src/index.js';
import { sampleMessage, sampleThread } from './targets.js';

/** A small seeded generator, so that a failing case replays. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/** A store that counts the events its `read` yields. */
function counting(inner: SessionStore): { store: SessionStore; read: () => number } {
  let read = 0;
  const store = new Proxy(inner, {
    get(target, key, receiver) {
      if (key !== 'read') return Reflect.get(target, key, receiver);
      return (id: string, range?: object) => {
        const source = target.read(id, range as never);
        return (async function* () {
          for await (const event of source as AsyncIterable<SessionEvent>) {
            read++;
            yield event;
          }
        })();
      };
    },
  });
  return { store, read: () => read };
}

describe('the newest messages from the log end', () => {
  it.each(Array.from({ length: 12 }, (_, i) => i + 1))('match the whole fold (seed %i)', async (seed) => {
    const next = random(seed);
    const { memory } = new TidemarkMastraStore({ store: await openMemoryStore() });
    const thread = sampleThread();
    const other = sampleThread({ resourceId: thread.resourceId });
    await memory.saveThread({ thread });
    await memory.saveThread({ thread: other });
    const base = Date.now();
    const stored: MastraDBMessage[] = [];
    for (let op = 0; op < 60; op++) {
      const roll = next();
      if (roll < 0.55 || stored.length < 3) {
        const batch = Array.from({ length: 1 + Math.floor(next() * 4) }, () => {
          // Mostly increasing times, sometimes one in the past, sometimes the same millisecond.
          const at =
            next() < 0.15 ? base + Math.floor(next() * op * 10) : base + op * 10 + (next() < 0.3 ? 0 : 1);
          return sampleMessage(thread, `m${op}-${stored.length}`, { createdAt: new Date(at) });
        });
        stored.push(...batch);
        await memory.saveMessages({ messages: batch });
      } else if (roll < 0.7) {
        const pick = stored[Math.floor(next() * stored.length)]!;
        await memory.saveMessages({
          messages: [{ ...pick, content: { ...pick.content, content: `edited ${op}` } }],
        });
      } else if (roll < 0.85) {
        const pick = stored.splice(Math.floor(next() * stored.length), 1)[0]!;
        await memory.deleteMessages([pick.id]);
      } else {
        const pick = stored.splice(Math.floor(next() * stored.length), 1)[0]!;
        await memory.updateMessages({ messages: [{ id: pick.id, threadId: other.id }] });
      }
      for (const n of [1, 5, 40]) {
        const tail = await memory.listMessages({
          threadId: thread.id,
          perPage: n,
          orderBy: { field: 'createdAt', direction: 'DESC' },
        });
        const all = await memory.listMessages({
          threadId: thread.id,
          perPage: false,
          orderBy: { field: 'createdAt', direction: 'DESC' },
        });
        expect(tail.messages, `op ${op}, last ${n}`).toEqual(all.messages.slice(0, n));
        expect(tail.total).toBe(all.total);
        expect(tail.hasMore).toBe(all.total > n);
      }
    }
  });

  it('reads a few batches of a 2,000-message thread, not the whole log', async () => {
    const inner = await openMemoryStore();
    const { memory } = new TidemarkMastraStore({ store: inner });
    const thread = sampleThread();
    await memory.saveThread({ thread });
    const base = Date.now();
    for (let i = 0; i < 2000; i += 10) {
      await memory.saveMessages({
        messages: Array.from({ length: 10 }, (_, k) =>
          sampleMessage(thread, `m${i + k}`, { createdAt: new Date(base + i + k) }),
        ),
      });
    }
    const { store, read } = counting(inner);
    const cold = new TidemarkMastraStore({ store }).memory;
    const last = await cold.listMessages({
      threadId: thread.id,
      perPage: 40,
      orderBy: { field: 'createdAt', direction: 'DESC' },
    });
    expect(last.messages.map((m) => m.content.content)).toEqual(
      Array.from({ length: 40 }, (_, i) => `m${1999 - i}`),
    );
    expect(last.total).toBe(2000);
    expect(read()).toBeLessThan(100); // the log holds 401 events
  });
});
