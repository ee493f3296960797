// Two processes over one shared store (one JSONL root, one SQLite file, one PostgreSQL schema),
// each with its own long-lived TidemarkMastraStore, as the workers of a deployment keep them: this
// process is host A, a child process is host B. Whatever one host writes, the other's next call
// sees as a process that has just started would; racing writers both land or are refused with a
// typed CONFLICT, and every acknowledged message is stored once, in one order (contract §9).
//
// JSONL: a session's writer lock is held by the process that wrote it last until that process goes
// idle; `handOver()` waits the second the contract gives for that before the other host writes.
import type { MastraDBMessage, StorageThreadType } from '@mastra/core/memory';
import { isTidemarkError, type SessionStore } from '@tidemark/core';
import { type Host, openStoreAt, type SharedStore, sharedBackends, startHost } from '@tidemark/test-hosts';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TidemarkMastraStore, threadSessionId } from '../src/index.js';
import { sampleMessage, sampleThread, sleep, textsOf } from './targets.js';

const HOST = new URL('./fixtures/storage-host.mjs', import.meta.url);
const TIMEOUT = 120_000;

describe.each(await sharedBackends())('two hosts over one $name store', (backend) => {
  let shared: SharedStore;
  let store: SessionStore;
  let a: TidemarkMastraStore;
  let b: Host;
  let thread: StorageThreadType;
  const handOver = () => (backend.name === 'jsonl' ? sleep(1200) : Promise.resolve());

  beforeEach(async () => {
    shared = await backend.create();
    store = await openStoreAt(shared.address);
    a = new TidemarkMastraStore({ store });
    b = await startHost(shared.address, HOST);
    thread = sampleThread({ id: 'shared-thread', resourceId: 'user-1' });
    await a.memory.saveThread({ thread });
    await handOver();
  }, TIMEOUT);
  afterEach(async () => {
    await b.close();
    await store.close();
    await shared.cleanup();
  }, TIMEOUT);

  it('keeps every acknowledged message of two racing writers once, in one order', {
    timeout: TIMEOUT,
  }, async () => {
    const acked: string[] = [];
    for (let round = 0; round < 15; round++) {
      const ma = sampleMessage(thread, `a${round}`);
      const mb = sampleMessage(thread, `b${round}`);
      const outcomes = await Promise.allSettled([
        a.memory.saveMessages({ messages: [ma] }),
        b.call('saveMessages', [mb]),
      ]);
      outcomes.forEach((outcome, i) => {
        if (outcome.status === 'fulfilled') acked.push(i === 0 ? `a${round}` : `b${round}`);
        else expectRefusedRace(outcome.reason, backend.name);
      });
    }
    const onA = textsOf((await a.memory.listMessages({ threadId: thread.id, perPage: false })).messages);
    const onB = textsOf(await b.call<MastraDBMessage[]>('listMessages', thread.id));
    expect(onB).toEqual(onA); // one order, seen alike by both hosts
    expect([...onA].sort()).toEqual([...acked].sort()); // each acknowledged message once, nothing else
    if (backend.name !== 'jsonl') expect(acked).toHaveLength(30);
  });

  it('lets both hosts create the same new thread and save to it at once', { timeout: TIMEOUT }, async () => {
    for (let i = 0; i < 8; i++) {
      const fresh = sampleThread({ id: `new-${i}`, resourceId: 'user-1' });
      const ma = sampleMessage(fresh, `a${i}`);
      const mb = sampleMessage(fresh, `b${i}`);
      const landed: string[] = [];
      const outcomes = await Promise.allSettled([
        a.memory.saveThread({ thread: fresh }).then(() => a.memory.saveMessages({ messages: [ma] })),
        b.call('saveThread', fresh).then(() => b.call('saveMessages', [mb])),
      ]);
      outcomes.forEach((outcome, j) => {
        if (outcome.status === 'fulfilled') landed.push(j === 0 ? `a${i}` : `b${i}`);
        else expectRefusedRace(outcome.reason, backend.name);
      });
      expect(landed.length).toBeGreaterThan(0);
      const stored = textsOf((await a.memory.listMessages({ threadId: fresh.id, perPage: false })).messages);
      expect([...stored].sort()).toEqual([...landed].sort());
      expect((await a.memory.getThreadById({ threadId: fresh.id }))?.resourceId).toBe('user-1');
    }
  });

  it('sees on B what A wrote after B had read it', { timeout: TIMEOUT }, async () => {
    await b.call('listMessages', thread.id);
    await a.memory.saveMessages({ messages: [sampleMessage(thread, 'from A')] });
    await a.memory.updateThread({ id: thread.id, title: 'renamed by A', metadata: { by: 'a' } });
    expect(textsOf(await b.call<MastraDBMessage[]>('listMessages', thread.id))).toEqual(['from A']);
    expect((await b.call<StorageThreadType>('getThreadById', thread.id)).title).toBe('renamed by A');
    await a.memory.updateResource({ resourceId: 'user-1', workingMemory: '# from A' });
    expect((await b.call<{ workingMemory: string }>('getResourceById', 'user-1')).workingMemory).toBe(
      '# from A',
    );
    await handOver();
    await b.call('updateThread', thread.id, undefined, { also: 'b' });
    expect((await a.memory.getThreadById({ threadId: thread.id }))?.metadata).toMatchObject({
      by: 'a',
      also: 'b',
    });
  });

  it('plans on the thread A deleted and wrote again, not on what B had read', {
    timeout: TIMEOUT,
  }, async () => {
    const old = [sampleMessage(thread, 'old-1'), sampleMessage(thread, 'old-2')];
    await a.memory.saveMessages({ messages: old });
    await handOver();
    expect(textsOf(await b.call<MastraDBMessage[]>('listMessages', thread.id))).toEqual(['old-1', 'old-2']);
    await handOver();
    await a.memory.deleteThread({ threadId: thread.id });
    await a.memory.saveThread({ thread: { ...thread, title: 'second life' } });
    await a.memory.saveMessages({
      messages: [sampleMessage(thread, 'new-1'), sampleMessage(thread, 'new-2')],
    });
    await handOver();
    // B resaves a message it read from the old thread: it is new to this thread, so it is stored.
    await b.call('saveMessages', [old[0]]);
    expect(textsOf((await a.memory.listMessages({ threadId: thread.id })).messages).sort()).toEqual([
      'new-1',
      'new-2',
      'old-1',
    ]);
    expect((await a.memory.getThreadById({ threadId: thread.id }))?.title).toBe('second life');
    expect(await b.call<MastraDBMessage[]>('listMessagesById', [old[1]!.id])).toEqual([]);
  });

  it('saves on B, planned on what B kept of its own last save, onto the thread A deleted and wrote again to the same length', {
    timeout: TIMEOUT,
  }, async () => {
    const log = async () => (await store.load(threadSessionId(thread.id))).events.length;
    const start = await log();
    // B's save leaves B knowing the thread's last event: its next save is planned on that alone.
    await b.call('saveMessages', [sampleMessage(thread, 'b-1')]);
    const kept = await log();
    await handOver();
    await a.memory.deleteThread({ threadId: thread.id });
    await a.memory.saveThread({ thread: { ...thread, title: 'second life' } });
    await a.memory.saveMessages({ messages: [sampleMessage(thread, 'a-1')] });
    // The same length as the log B knows: only the events' content tells the two apart.
    expect(await log()).toBe(kept);
    await handOver();
    await b.call('saveMessages', [sampleMessage(thread, 'b-2')]);
    expect(textsOf((await a.memory.listMessages({ threadId: thread.id })).messages).sort()).toEqual([
      'a-1',
      'b-2',
    ]);
    expect((await a.memory.getThreadById({ threadId: thread.id }))?.title).toBe('second life');
    // One save's batch landed on the new log, as planned on it: no stray batch planned on B's old one.
    expect(await log()).toBe(kept + (kept - start));
  });

  it('keeps working memory and metadata written by both hosts', { timeout: TIMEOUT }, async () => {
    // On JSONL either host may take the new resource's lock first; the other is refused.
    const [fromA, fromB] = await Promise.allSettled([
      a.memory.updateResource({ resourceId: 'user-1', workingMemory: '# notes', metadata: { a: 1 } }),
      b.call('updateResource', 'user-1', undefined, { b: 2 }),
    ]);
    for (const outcome of [fromA, fromB])
      if (outcome.status === 'rejected') expectRefusedRace(outcome.reason, backend.name);
    expect(fromA.status === 'fulfilled' || fromB.status === 'fulfilled').toBe(true);
    const resource = await a.memory.getResourceById({ resourceId: 'user-1' });
    if (fromA.status === 'fulfilled') {
      expect(resource?.workingMemory).toBe('# notes');
      expect(resource?.metadata?.a).toBe(1);
    }
    if (fromB.status === 'fulfilled') expect(resource?.metadata?.b).toBe(2);
  });

  it('keeps the step results of both hosts updating one workflow run', { timeout: TIMEOUT }, async () => {
    const run = { workflowName: 'wf', runId: 'run-1' };
    await a.workflows.persistWorkflowSnapshot({
      ...run,
      snapshot: { runId: 'run-1', status: 'running', context: {} } as never,
    });
    await handOver();
    const landed: string[] = [];
    for (let i = 0; i < 6; i++) {
      const outcomes = await Promise.allSettled([
        a.workflows.updateWorkflowResults({
          ...run,
          stepId: `a-${i}`,
          result: { status: 'success' } as never,
          requestContext: {},
        }),
        b.call('updateWorkflowResults', {
          ...run,
          stepId: `b-${i}`,
          result: { status: 'success' },
          requestContext: {},
        }),
      ]);
      outcomes.forEach((outcome, j) => {
        if (outcome.status === 'fulfilled') landed.push(`${j === 0 ? 'a' : 'b'}-${i}`);
        else expectRefusedRace(outcome.reason, backend.name);
      });
    }
    const snapshot = await a.workflows.loadWorkflowSnapshot(run);
    expect(Object.keys(snapshot?.context ?? {}).sort()).toEqual(landed.sort());
    expect(await b.call('loadWorkflowSnapshot', run.workflowName, run.runId)).toEqual(snapshot);
  });
});

/** A racing write may only be refused with a typed, retryable CONFLICT, on JSONL while the other process holds the lock. */
function expectRefusedRace(reason: unknown, backend: string): void {
  expect(isTidemarkError(reason, 'CONFLICT'), String(reason)).toBe(true);
  expect(backend).toBe('jsonl');
}
