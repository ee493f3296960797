// Mastra's storage cases for threads and resources (stores/_test-utils in mastra-ai/mastra is
// private), restated in our words, run on Mastra's in-memory store as the control and on
// TidemarkMastraStore over every backend.
import type { MemoryStorage } from '@mastra/core/storage';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleMessage, sampleThread, sleep, type Target, targets } from './targets.js';

const ms = (d: Date | string) => new Date(d).getTime();

describe.each(await targets())('threads and resources: $name', (target: Target) => {
  let memory: MemoryStorage;
  beforeAll(async () => {
    memory = (await target.open()).memory;
  });
  afterAll(() => target.cleanup());

  it('saves a thread and gets it back with its ids, title, metadata and dates', async () => {
    const thread = sampleThread({ id: '1346362547862769664', resourceId: '532374164040974346' });
    expect(await memory.saveThread({ thread })).toEqual(thread);
    const got = await memory.getThreadById({ threadId: thread.id });
    expect(got).toMatchObject({ id: thread.id, resourceId: thread.resourceId, title: thread.title });
    expect(got?.metadata).toEqual(thread.metadata);
    expect(ms(got!.createdAt)).toBe(ms(thread.createdAt));
    expect(ms(got!.updatedAt)).toBe(ms(thread.updatedAt));
  });

  it('answers null for a thread that was never saved', async () => {
    expect(await memory.getThreadById({ threadId: 'no-such-thread' })).toBeNull();
  });

  it('keeps a thread to its resource when getThreadById names one', async () => {
    const thread = sampleThread();
    await memory.saveThread({ thread });
    expect((await memory.getThreadById({ threadId: thread.id, resourceId: thread.resourceId }))?.id).toBe(
      thread.id,
    );
    expect(await memory.getThreadById({ threadId: thread.id, resourceId: 'someone-else' })).toBeNull();
    expect((await memory.getThreadById({ threadId: thread.id }))?.id).toBe(thread.id);
  });

  it('lists the threads of a resource in pages with their total', async () => {
    const resourceId = `paged-${Math.random()}`;
    await Promise.all(
      Array.from({ length: 17 }, () => memory.saveThread({ thread: sampleThread({ resourceId }) })),
    );
    await memory.saveThread({ thread: sampleThread() }); // another resource's thread
    const first = await memory.listThreads({ filter: { resourceId }, page: 0, perPage: 7 });
    expect(first).toMatchObject({ total: 17, page: 0, perPage: 7, hasMore: true });
    expect(first.threads).toHaveLength(7);
    const third = await memory.listThreads({ filter: { resourceId }, page: 2, perPage: 7 });
    expect(third.threads).toHaveLength(3);
    expect(third.hasMore).toBe(false);
    const all = await memory.listThreads({ filter: { resourceId }, perPage: false });
    expect(new Set(all.threads.map((t) => t.id)).size).toBe(17);
    const seen = [first, await memory.listThreads({ filter: { resourceId }, page: 1, perPage: 7 }), third];
    expect(new Set(seen.flatMap((p) => p.threads.map((t) => t.id))).size).toBe(17); // no thread on two pages
  });

  it('orders listed threads by creation or update time, either way', async () => {
    const resourceId = `ordered-${Math.random()}`;
    const base = Date.now();
    for (let i = 0; i < 3; i++) {
      const at = new Date(base + i * 1000);
      await memory.saveThread({
        thread: sampleThread({
          resourceId,
          title: `t${i}`,
          createdAt: at,
          updatedAt: new Date(base + (3 - i) * 1000),
        }),
      });
    }
    const titles = async (field: 'createdAt' | 'updatedAt', direction: 'ASC' | 'DESC') =>
      (await memory.listThreads({ filter: { resourceId }, orderBy: { field, direction } })).threads.map(
        (t) => t.title,
      );
    expect(await titles('createdAt', 'DESC')).toEqual(['t2', 't1', 't0']);
    expect(await titles('createdAt', 'ASC')).toEqual(['t0', 't1', 't2']);
    expect(await titles('updatedAt', 'DESC')).toEqual(['t0', 't1', 't2']);
  });

  it('filters listed threads by metadata', async () => {
    const resourceId = `meta-${Math.random()}`;
    await memory.saveThread({ thread: sampleThread({ resourceId, metadata: { tier: 'gold', n: 1 } }) });
    await memory.saveThread({ thread: sampleThread({ resourceId, metadata: { tier: 'free', n: 1 } }) });
    const gold = await memory.listThreads({ filter: { resourceId, metadata: { tier: 'gold' } } });
    expect(gold.threads.map((t) => t.metadata?.tier)).toEqual(['gold']);
    expect((await memory.listThreads({ filter: { resourceId, metadata: { n: 1 } } })).total).toBe(2);
  });

  it('updates the title and merges the metadata, and get and list then agree', async () => {
    const thread = sampleThread();
    await memory.saveThread({ thread });
    const savedAt = ms(thread.updatedAt); // before the call: the control keeps and changes this very object
    await sleep(20);
    const updated = await memory.updateThread({
      id: thread.id,
      title: 'Updated',
      metadata: { extra: 'yes' },
    });
    expect(updated.title).toBe('Updated');
    expect(updated.metadata).toEqual({ ...thread.metadata, extra: 'yes' });
    const got = await memory.getThreadById({ threadId: thread.id });
    expect(got).toEqual(updated);
    const listed = (await memory.listThreads({ filter: { resourceId: thread.resourceId } })).threads[0]!;
    expect(ms(listed.updatedAt)).toBe(ms(got!.updatedAt));
    expect(ms(listed.createdAt)).toBe(ms(got!.createdAt));
    expect(ms(got!.updatedAt)).toBeGreaterThan(savedAt);
  });

  it('rejects an update of a thread that does not exist', async () => {
    await expect(memory.updateThread({ id: 'missing-thread', title: 'x', metadata: {} })).rejects.toThrow();
  });

  it('settles concurrent updates of one thread, each resolving', async () => {
    const thread = sampleThread();
    await memory.saveThread({ thread });
    const updates = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        memory.updateThread({ id: thread.id, title: `u${i}`, metadata: { [`k${i}`]: i } }),
      ),
    );
    expect(updates).toHaveLength(5);
    const final = await memory.getThreadById({ threadId: thread.id });
    for (let i = 0; i < 5; i++) expect(final?.metadata?.[`k${i}`]).toBe(i); // no update lost
  });

  it('keeps quotes and emoji in a title and a large metadata object whole', async () => {
    const metadata = { rows: Array.from({ length: 50 }, (_, i) => ({ i, data: 'x'.repeat(40) })) };
    const thread = sampleThread({ title: `Special 'quotes' and "double" 🎉`, metadata });
    await memory.saveThread({ thread });
    const got = await memory.getThreadById({ threadId: thread.id });
    expect(got?.title).toBe(thread.title);
    expect(got?.metadata).toEqual(metadata);
  });

  it('deletes a thread with its messages', async () => {
    const thread = sampleThread();
    await memory.saveThread({ thread });
    await memory.saveMessages({ messages: [sampleMessage(thread, 'a'), sampleMessage(thread, 'b')] });
    await memory.deleteThread({ threadId: thread.id });
    expect(await memory.getThreadById({ threadId: thread.id })).toBeNull();
    expect((await memory.listMessages({ threadId: thread.id })).messages).toEqual([]);
    expect((await memory.listThreads({ filter: { resourceId: thread.resourceId } })).total).toBe(0);
  });

  it('moves the thread updatedAt forward when a message is saved to it', async () => {
    const thread = sampleThread();
    await memory.saveThread({ thread });
    const before = await memory.getThreadById({ threadId: thread.id });
    await sleep(10);
    await memory.saveMessages({ messages: [sampleMessage(thread, 'bump')] });
    const after = await memory.getThreadById({ threadId: thread.id });
    expect(ms(after!.updatedAt)).toBeGreaterThan(ms(before!.updatedAt));
  });

  it('saves a resource and gets it back; null for one never saved', async () => {
    const now = new Date();
    const resource = {
      id: `res-${Math.random()}`,
      workingMemory: '# notes',
      metadata: { plan: 'pro' },
      createdAt: now,
      updatedAt: now,
    };
    await memory.saveResource({ resource });
    const got = await memory.getResourceById({ resourceId: resource.id });
    expect(got).toMatchObject({ id: resource.id, workingMemory: '# notes', metadata: { plan: 'pro' } });
    expect(ms(got!.createdAt)).toBe(ms(now));
    expect(await memory.getResourceById({ resourceId: 'no-such-resource' })).toBeNull();
  });

  it('creates a resource on its first update and merges later updates', async () => {
    const resourceId = `res-${Math.random()}`;
    const created = await memory.updateResource({ resourceId, workingMemory: 'v1', metadata: { a: 1 } });
    expect(created).toMatchObject({ id: resourceId, workingMemory: 'v1', metadata: { a: 1 } });
    await memory.updateResource({ resourceId, metadata: { b: 2 } });
    const got = await memory.getResourceById({ resourceId });
    expect(got).toMatchObject({ workingMemory: 'v1', metadata: { a: 1, b: 2 } });
    await memory.updateResource({ resourceId, workingMemory: 'v2' });
    expect((await memory.getResourceById({ resourceId }))?.workingMemory).toBe('v2');
  });
});
