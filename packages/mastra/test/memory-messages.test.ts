// Mastra's storage cases for messages (stores/_test-utils in mastra-ai/mastra is private),
// restated in our words, run on Mastra's in-memory store as the control and on
// TidemarkMastraStore over every backend; plus the ordering promise of issue 24: messages saved in
// the same millisecond keep the order they were saved in, on every page.
import type { StorageThreadType } from '@mastra/core/memory';
import type { MemoryStorage } from '@mastra/core/storage';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleMessage, sampleThread, sleep, type Target, targets, textsOf } from './targets.js';

describe.each(await targets())('messages: $name', (target: Target) => {
  let memory: MemoryStorage;
  const newThread = async (overrides: Partial<StorageThreadType> = {}) => {
    const thread = sampleThread(overrides);
    await memory.saveThread({ thread });
    return thread;
  };
  beforeAll(async () => {
    memory = (await target.open()).memory;
  });
  afterAll(() => target.cleanup());

  it('saves messages and lists them back, content whole (a JSON string stays a string)', async () => {
    const thread = await newThread();
    const json = JSON.stringify({ userInput: 'test', metadata: { key: 'value' } });
    const saved = await memory.saveMessages({
      messages: [sampleMessage(thread, json), sampleMessage(thread, 'two')],
    });
    expect(saved.messages).toHaveLength(2);
    const { messages } = await memory.listMessages({ threadId: thread.id });
    expect(textsOf(messages)).toEqual([json, 'two']);
    expect(messages[0]!.content.format).toBe(2);
    expect(messages[0]!.content.parts).toEqual([{ type: 'text', text: json }]);
    expect(messages[0]!.createdAt).toBeInstanceOf(Date);
    expect(messages[0]).toMatchObject({ threadId: thread.id, resourceId: thread.resourceId, role: 'user' });
  });

  it('answers an empty save with no messages', async () => {
    expect((await memory.saveMessages({ messages: [] })).messages).toEqual([]);
  });

  it('orders by creation time whatever the order of saving', async () => {
    const thread = await newThread();
    const base = Date.now();
    await memory.saveMessages({
      messages: [
        sampleMessage(thread, 'third', { createdAt: new Date(base + 3) }),
        sampleMessage(thread, 'first', { createdAt: new Date(base + 1) }),
        sampleMessage(thread, 'second', { createdAt: new Date(base + 2) }),
      ],
    });
    expect(textsOf((await memory.listMessages({ threadId: thread.id })).messages)).toEqual([
      'first',
      'second',
      'third',
    ]);
    const desc = await memory.listMessages({
      threadId: thread.id,
      orderBy: { field: 'createdAt', direction: 'DESC' },
    });
    expect(textsOf(desc.messages)).toEqual(['third', 'second', 'first']);
  });

  it('keeps messages of one millisecond in the order they were saved, on every page', async () => {
    const thread = await newThread();
    const at = new Date();
    const texts = Array.from({ length: 12 }, (_, i) => `same-ms-${i}`);
    for (let i = 0; i < texts.length; i += 4) {
      await memory.saveMessages({
        messages: texts.slice(i, i + 4).map((t) => sampleMessage(thread, t, { createdAt: at })),
      });
    }
    const pages = [];
    for (let page = 0; page < 3; page++)
      pages.push(...(await memory.listMessages({ threadId: thread.id, page, perPage: 4 })).messages);
    expect(textsOf(pages)).toEqual(texts);
  });

  it('pages messages with total and hasMore', async () => {
    const thread = await newThread();
    const base = Date.now();
    await memory.saveMessages({
      messages: Array.from({ length: 15 }, (_, i) =>
        sampleMessage(thread, `m${i}`, { createdAt: new Date(base + i) }),
      ),
    });
    const first = await memory.listMessages({ threadId: thread.id, page: 0, perPage: 5 });
    expect(first).toMatchObject({ total: 15, page: 0, perPage: 5, hasMore: true });
    expect(textsOf(first.messages)).toEqual(['m0', 'm1', 'm2', 'm3', 'm4']);
    const last = await memory.listMessages({ threadId: thread.id, page: 2, perPage: 5 });
    expect(last.hasMore).toBe(false);
    expect(textsOf(last.messages)).toEqual(['m10', 'm11', 'm12', 'm13', 'm14']);
    const newest = await memory.listMessages({
      threadId: thread.id,
      perPage: 3,
      orderBy: { field: 'createdAt', direction: 'DESC' },
    });
    expect(textsOf(newest.messages)).toEqual(['m14', 'm13', 'm12']); // what Memory reads as the last messages
    expect((await memory.listMessages({ threadId: thread.id, perPage: false })).messages).toHaveLength(15);
  });

  it('filters by a date range', async () => {
    const thread = await newThread();
    const day = 24 * 3600 * 1000;
    const now = Date.now();
    await memory.saveMessages({
      messages: [2, 2, 1, 1, 0, 0].map((d, i) =>
        sampleMessage(thread, `d${d}-${i}`, { createdAt: new Date(now - d * day + i) }),
      ),
    });
    const since = await memory.listMessages({
      threadId: thread.id,
      perPage: 3,
      filter: { dateRange: { start: new Date(now - day) } },
    });
    expect(since.total).toBe(4);
    expect(textsOf(since.messages)).toEqual(['d1-2', 'd1-3', 'd0-4']);
  });

  it('filters by resource within a thread', async () => {
    const thread = await newThread();
    await memory.saveMessages({
      messages: [sampleMessage(thread, 'mine'), sampleMessage(thread, 'theirs', { resourceId: 'other' })],
    });
    const { messages } = await memory.listMessages({ threadId: thread.id, resourceId: thread.resourceId });
    expect(textsOf(messages)).toEqual(['mine']);
  });

  it('includes messages around named ones, across threads, once each', async () => {
    const one = await newThread();
    const two = await newThread();
    const base = Date.now();
    const a = ['A', 'B', 'C'].map((t, i) => sampleMessage(one, t, { createdAt: new Date(base + i) }));
    const b = ['D', 'E', 'F'].map((t, i) => sampleMessage(two, t, { createdAt: new Date(base + 10 + i) }));
    await memory.saveMessages({ messages: [...a, ...b] });
    const around = await memory.listMessages({
      threadId: one.id,
      perPage: 0,
      include: [
        { id: a[1]!.id, threadId: one.id, withPreviousMessages: 2, withNextMessages: 2 },
        { id: b[1]!.id, threadId: two.id, withPreviousMessages: 1, withNextMessages: 1 },
      ],
    });
    expect(textsOf(around.messages)).toEqual(['A', 'B', 'C', 'D', 'E', 'F']);
    const lastTwoAndContext = await memory.listMessages({
      threadId: one.id,
      perPage: 2,
      orderBy: { field: 'createdAt', direction: 'DESC' },
      include: [{ id: b[1]!.id, threadId: two.id, withPreviousMessages: 1, withNextMessages: 1 }],
    });
    expect(textsOf(lastTwoAndContext.messages).sort()).toEqual(['B', 'C', 'D', 'E', 'F']);
    const noThreadNamed = await memory.listMessages({
      threadId: two.id,
      perPage: 0,
      include: [{ id: a[0]!.id, withNextMessages: 1 }],
    });
    expect(textsOf(noThreadNamed.messages)).toEqual(['A', 'B']);
  });

  it('lists messages by id across threads, leaving unknown ids out', async () => {
    const one = await newThread();
    const two = await newThread();
    const m1 = sampleMessage(one, 'x');
    const m2 = sampleMessage(two, 'y', { createdAt: new Date(Date.now() + 5) });
    await memory.saveMessages({ messages: [m1, m2] });
    const { messages } = await memory.listMessagesById({ messageIds: [m2.id, 'unknown', m1.id] });
    expect(textsOf(messages)).toEqual(['x', 'y']);
    expect(messages.map((m) => m.threadId)).toEqual([one.id, two.id]);
  });

  it('stores a message saved twice once, and a resave with new content replaces it', async () => {
    const thread = await newThread();
    const message = sampleMessage(thread, 'v1');
    await memory.saveMessages({ messages: [message] });
    await memory.saveMessages({ messages: [message] });
    await memory.saveMessages({ messages: [{ ...message, content: { ...message.content, content: 'v2' } }] });
    const { messages, total } = await memory.listMessages({ threadId: thread.id });
    expect(total).toBe(1);
    expect(textsOf(messages)).toEqual(['v2']);
  });

  it('moves a message resaved under another thread', async () => {
    const one = await newThread();
    const two = await newThread();
    const message = sampleMessage(one, 'in one');
    await memory.saveMessages({ messages: [message] });
    await memory.saveMessages({ messages: [{ ...sampleMessage(two, 'in two'), id: message.id }] });
    expect((await memory.listMessages({ threadId: one.id })).messages).toEqual([]);
    expect(textsOf((await memory.listMessages({ threadId: two.id })).messages)).toEqual(['in two']);
  });

  it('updates content (merging metadata), role and thread of stored messages, skipping unknown ids', async () => {
    const one = await newThread();
    const two = await newThread();
    const m = sampleMessage(one, 'before', {
      content: {
        format: 2,
        parts: [{ type: 'text', text: 'before' }],
        content: 'before',
        metadata: { a: 1 },
      },
    });
    const n = sampleMessage(one, 'stays');
    await memory.saveMessages({ messages: [m, n] });
    const updated = await memory.updateMessages({
      messages: [
        { id: m.id, role: 'assistant', content: { content: 'after', metadata: { b: 2 } } },
        { id: 'unknown-id', content: { content: 'nothing' } },
      ] as never, // a partial content, as Mastra's own updates send it
    });
    expect(updated.map((u) => u.id)).toEqual([m.id]);
    const { messages } = await memory.listMessagesById({ messageIds: [m.id] });
    expect(messages[0]).toMatchObject({
      role: 'assistant',
      content: { content: 'after', metadata: { a: 1, b: 2 } },
    });
    await memory.updateMessages({ messages: [{ id: m.id, threadId: two.id }] });
    expect(textsOf((await memory.listMessages({ threadId: one.id })).messages)).toEqual(['stays']);
    expect(textsOf((await memory.listMessages({ threadId: two.id })).messages)).toEqual(['after']);
  });

  it('deletes messages by id and keeps the rest', async () => {
    const thread = await newThread();
    const base = Date.now();
    const all = ['a', 'b', 'c', 'd'].map((t, i) =>
      sampleMessage(thread, t, { createdAt: new Date(base + i) }),
    );
    await memory.saveMessages({ messages: all });
    const before = await memory.getThreadById({ threadId: thread.id });
    await sleep(10);
    await memory.deleteMessages([all[1]!.id, all[3]!.id, 'unknown']);
    expect(textsOf((await memory.listMessages({ threadId: thread.id })).messages)).toEqual(['a', 'c']);
    const after = await memory.getThreadById({ threadId: thread.id });
    expect(new Date(after!.updatedAt).getTime()).toBeGreaterThan(new Date(before!.updatedAt).getTime());
    await memory.deleteMessages([]);
    expect((await memory.listMessages({ threadId: thread.id })).total).toBe(2);
  });

  it('lists several threads at once', async () => {
    const one = await newThread();
    const two = await newThread();
    await memory.saveMessages({
      messages: [
        sampleMessage(one, 'one'),
        sampleMessage(two, 'two', { createdAt: new Date(Date.now() + 2) }),
      ],
    });
    expect(textsOf((await memory.listMessages({ threadId: [one.id, two.id] })).messages)).toEqual([
      'one',
      'two',
    ]);
  });

  it('rejects a negative page', async () => {
    const thread = await newThread();
    await expect(memory.listMessages({ threadId: thread.id, page: -1 })).rejects.toThrow();
  });
});
