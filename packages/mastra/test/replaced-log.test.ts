// A write planned on a thread that another host deletes and writes again to the same length before
// the write lands: the append's seq check passes, so only the link of the batch to the closing
// event before it tells. Deterministic: a store wrapper lets host A delete and rewrite the thread
// right after host B's read, before B appends.
import { openMemoryStore } from '@tidemark/memory';
import { withInterleaving } from '@tidemark/test-hosts';
import { describe, expect, it } from 'vitest';
import { TidemarkMastraStore, threadSessionId } from '../src/index.js';
import { sampleMessage, sampleThread, textsOf } from './targets.js';

async function setup() {
  const inner = await openMemoryStore();
  const a = new TidemarkMastraStore({ store: inner }).memory;
  const b = withInterleaving(inner);
  const memoryB = new TidemarkMastraStore({ store: b.store }).memory;
  const thread = sampleThread({ id: 'chat', title: 'first life', metadata: { old: true } });
  await a.saveThread({ thread });
  await a.saveMessages({ messages: [sampleMessage(thread, 'old-1'), sampleMessage(thread, 'old-2')] });
  const rewrite = async () => {
    await a.deleteThread({ threadId: thread.id });
    await a.saveThread({ thread: { ...thread, title: 'second life', metadata: { fresh: true } } });
    await a.saveMessages({ messages: [sampleMessage(thread, 'new-1'), sampleMessage(thread, 'new-2')] });
  };
  return { inner, a, b, memoryB, thread, rewrite };
}

describe('a thread deleted and written again to the same length between a read and a write', () => {
  it('merges an update into the rewritten thread, not into the one it read', async () => {
    const { inner, a, b, memoryB, thread, rewrite } = await setup();
    const before = (await inner.load(threadSessionId(thread.id))).events.length;
    b.arm(rewrite);
    const updated = await memoryB.updateThread({ id: thread.id, title: 'renamed by B', metadata: { b: 1 } });
    expect((await inner.load(threadSessionId(thread.id))).events.length).toBeGreaterThan(before);
    expect(updated.metadata).toEqual({ fresh: true, b: 1 });
    expect(await a.getThreadById({ threadId: thread.id })).toMatchObject({
      title: 'renamed by B',
      metadata: { fresh: true, b: 1 },
    });
    expect(textsOf((await a.listMessages({ threadId: thread.id })).messages)).toEqual(['new-1', 'new-2']);
  });

  it('saves a message onto the rewritten thread and keeps its record', async () => {
    const { a, b, memoryB, thread, rewrite } = await setup();
    b.arm(rewrite);
    await memoryB.saveMessages({
      messages: [sampleMessage(thread, 'from B', { createdAt: new Date(Date.now() + 1000) })],
    });
    expect(textsOf((await a.listMessages({ threadId: thread.id })).messages)).toEqual([
      'new-1',
      'new-2',
      'from B',
    ]);
    expect((await a.getThreadById({ threadId: thread.id }))?.title).toBe('second life');
    expect((await memoryB.getThreadById({ threadId: thread.id }))?.metadata).toEqual({ fresh: true });
  });
});
