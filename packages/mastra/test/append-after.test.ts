// Writes confirmed by the append itself (`append(…, { after })`): on a store that checks `after`, a
// write to a thread, resource or run this object wrote before (or read for a write) is planned on
// what it knows and names the log's last event it knows, so the store refuses a write planned on a
// log that is no longer there (nothing written, not even a stray batch) and the object reads the
// session and plans again; no read before the write and none after it. A write that what it knows
// says has nothing to do, or would refuse, is confirmed by a read first. A store without the check
// gets today's reads: one before the write, one after it. On every shared backend, with two store
// instances over one store: whatever the other instance deleted and rewrote behind what an object
// knows, its write lands on what the store holds.

import type { StorageThreadType } from '@mastra/core/memory';
import { checksAppendAfter, type SessionStore } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import {
  type CountedCalls as Calls,
  countingStore as counting,
  openTwoInstances,
  sharedBackends,
  withInterleaving,
} from '@tidemark/test-hosts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TidemarkMastraStore, threadSessionId } from '../src/index.js';
import { sampleMessage, sampleThread, textsOf } from './targets.js';

const THREAD = sampleThread({ id: 'chat', resourceId: 'user-1', title: 'first' });
const RUN = { workflowName: 'wf', runId: 'run-1' };
const snapshot = (status: string, context: Record<string, unknown> = {}, runId = RUN.runId) =>
  ({ runId, status, context }) as never;
const stepResult = { status: 'success', output: 1 } as never;

/** A thread with two messages, a resource and a run, written by `s` (which then knows them), each in two batches. */
async function written(s: TidemarkMastraStore) {
  const m1 = sampleMessage(THREAD, 'one');
  const m2 = sampleMessage(THREAD, 'two');
  await s.memory.saveThread({ thread: THREAD });
  await s.memory.saveMessages({ messages: [m1, m2] });
  for (const version of ['# v0', '# v1'])
    await s.memory.updateResource({ resourceId: 'user-1', workingMemory: version });
  for (const status of ['pending', 'running'])
    await s.workflows.persistWorkflowSnapshot({ ...RUN, snapshot: snapshot(status) });
  return { m1, m2 };
}

/** Each warm write Mastra makes, on a thread, resource and run its object has written. */
const WRITES: [string, (s: TidemarkMastraStore, m: { m1: { id: string } }) => Promise<unknown>][] = [
  ['saveThread', (s) => s.memory.saveThread({ thread: { ...THREAD, title: 'renamed' } })],
  ['updateThread', (s) => s.memory.updateThread({ id: THREAD.id, title: 'renamed', metadata: {} })],
  ['saveMessages', (s) => s.memory.saveMessages({ messages: [sampleMessage(THREAD, 'three')] })],
  ['updateResource', (s) => s.memory.updateResource({ resourceId: 'user-1', workingMemory: '# v2' })],
  [
    'persistWorkflowSnapshot',
    (s) => s.workflows.persistWorkflowSnapshot({ ...RUN, snapshot: snapshot('running') }),
  ],
  [
    'updateWorkflowResults',
    (s) =>
      s.workflows.updateWorkflowResults({ ...RUN, stepId: 's1', result: stepResult, requestContext: {} }),
  ],
  [
    'updateWorkflowState',
    (s) => s.workflows.updateWorkflowState({ ...RUN, opts: { status: 'suspended' } as never }),
  ],
  // Finds the message by id (reads its thread), then removes it.
  ['deleteMessages', (s, { m1 }) => s.memory.deleteMessages([m1.id])],
];

const none = (): Calls => ({ reads: 0, loads: 0, appends: 0, afters: 0, updates: 0, conflicts: 0 });

/** The calls one warm write makes, on a store that checks `after` or on one that does not. */
async function callsOf(write: (typeof WRITES)[number][1], capable: boolean): Promise<Calls> {
  const inner = await openMemoryStore();
  expect(checksAppendAfter(inner)).toBe(true);
  const { store, calls, reset } = counting(inner, capable);
  expect(checksAppendAfter(store)).toBe(capable);
  const s = new TidemarkMastraStore({ store });
  const messages = await written(s);
  reset();
  await write(s, messages);
  return { ...calls };
}

describe('warm writes on a store that checks append after', () => {
  // Per warm write: the store calls before this change (still those of a store without the check)
  // and now. Reads are `read` calls (the last event, the closing event before its batch, the
  // confirming read), loads whole-log reads (a thread folded for its messages).
  const EXPECTED: Record<string, { without: Partial<Calls>; with: Partial<Calls> }> = {
    saveThread: { without: { reads: 3, loads: 0 }, with: { reads: 0, loads: 0 } },
    updateThread: { without: { reads: 3, loads: 0 }, with: { reads: 0, loads: 0 } },
    saveMessages: { without: { reads: 1, loads: 1 }, with: { reads: 0, loads: 0 } },
    updateResource: { without: { reads: 3, loads: 0 }, with: { reads: 0, loads: 0 } },
    persistWorkflowSnapshot: { without: { reads: 3, loads: 0 }, with: { reads: 0, loads: 0 } },
    updateWorkflowResults: { without: { reads: 3, loads: 0 }, with: { reads: 0, loads: 0 } },
    updateWorkflowState: { without: { reads: 3, loads: 0 }, with: { reads: 0, loads: 0 } },
    deleteMessages: { without: { reads: 1, loads: 2 }, with: { reads: 0, loads: 1 } },
  };

  it.each(WRITES)(
    '%s: one append naming the event it follows, no read before or after it',
    async (name, write) => {
      const expected = EXPECTED[name]!;
      const before = await callsOf(write, false);
      expect(before).toEqual({ ...none(), appends: 1, updates: 1, ...expected.without });
      const now = await callsOf(write, true);
      expect(now).toEqual({ ...none(), appends: 1, afters: 1, updates: 1, ...expected.with });
    },
  );

  it('keeps writing warm: ten saves of a turn read nothing, and a new object reads them all', async () => {
    const inner = await openMemoryStore();
    const { store, calls, reset } = counting(inner, true);
    const s = new TidemarkMastraStore({ store });
    await written(s);
    reset();
    for (let i = 0; i < 10; i++) await s.memory.saveMessages({ messages: [sampleMessage(THREAD, `m${i}`)] });
    await s.memory.updateThread({ id: THREAD.id, title: 'after ten', metadata: {} });
    expect(calls).toEqual({ ...none(), appends: 11, afters: 11, updates: 11 });
    const fresh = new TidemarkMastraStore({ store: inner }).memory;
    const listed = await fresh.listMessages({ threadId: THREAD.id, perPage: false });
    expect(textsOf(listed.messages)).toEqual([
      'one',
      'two',
      ...Array.from({ length: 10 }, (_, i) => `m${i}`),
    ]);
    expect((await fresh.getThreadById({ threadId: THREAD.id }))?.title).toBe('after ten');
  });

  it('confirms with a read a write it knows has nothing to do, and appends nothing', async () => {
    const inner = await openMemoryStore();
    const { store, calls, reset } = counting(inner, true);
    const s = new TidemarkMastraStore({ store });
    const { m1 } = await written(s);
    reset();
    await s.memory.saveMessages({ messages: [m1] }); // stored already
    expect(calls).toMatchObject({ appends: 0, loads: 1 });
    const stored = (await s.memory.getThreadById({ threadId: THREAD.id }))!;
    reset();
    await s.memory.saveThread({ thread: stored }); // as stored
    expect(calls).toMatchObject({ appends: 0, reads: 2 });
    reset();
    expect(
      await s.workflows.updateWorkflowState({ ...RUN, opts: { expectedStatus: 'suspended' } as never }),
    ).toBe(undefined); // the run is running: refused
    expect(calls).toMatchObject({ appends: 0, reads: 2 });
  });

  it('writes what it knows has nothing to do, or would refuse, when the store says otherwise', async () => {
    const inner = await openMemoryStore();
    const s = new TidemarkMastraStore({ store: counting(inner, true).store });
    const other = new TidemarkMastraStore({ store: inner }); // another instance over the same store
    const { m1 } = await written(s);
    await other.memory.deleteMessages([m1.id]);
    await s.memory.saveMessages({ messages: [m1] }); // stored, as far as s knows
    expect(textsOf((await other.memory.listMessages({ threadId: THREAD.id })).messages)).toEqual([
      'two',
      'one',
    ]);
    await other.workflows.persistWorkflowSnapshot({ ...RUN, snapshot: snapshot('suspended') });
    const resumed = await s.workflows.updateWorkflowState({
      ...RUN,
      opts: { status: 'running', expectedStatus: 'suspended' } as never,
    }); // the run is running, as far as s knows
    expect(resumed?.status).toBe('running');
    expect((await other.workflows.loadWorkflowSnapshot(RUN))?.status).toBe('running');
  });

  it('gets a read before and after each write on a store that does not check after', async () => {
    const inner = await openMemoryStore();
    const { store, calls, reset } = counting(inner, false);
    expect(checksAppendAfter(store)).toBe(false);
    const s = new TidemarkMastraStore({ store });
    await written(s);
    reset();
    for (let i = 0; i < 3; i++) await s.memory.saveMessages({ messages: [sampleMessage(THREAD, `m${i}`)] });
    expect(calls).toEqual({ ...none(), reads: 3, loads: 3, appends: 3, updates: 3 });
  });
});

/** Host B's log of `thread` (three events: a saveThread, and a saveMessages of two), deleted by host A and written again to the same length. */
async function rewriteBehind(a: TidemarkMastraStore, thread: StorageThreadType) {
  await a.memory.deleteThread({ threadId: thread.id });
  await a.memory.saveThread({ thread: { ...thread, title: 'second life', metadata: { fresh: true } } });
  await a.memory.saveMessages({ messages: [sampleMessage(thread, 'new-1'), sampleMessage(thread, 'new-2')] });
}

async function writtenByB(b: TidemarkMastraStore, thread: StorageThreadType) {
  await b.memory.saveThread({ thread });
  await b.memory.saveMessages({ messages: [sampleMessage(thread, 'old-1'), sampleMessage(thread, 'old-2')] });
}

describe('a log deleted and written again to the same length behind what B knows', () => {
  const thread = sampleThread({ id: 'rewritten', title: 'first life', metadata: { old: true } });

  it('refuses by the append a save planned on the old log, and saves onto the new one, no stray batch', async () => {
    const inner = await openMemoryStore();
    const counted = counting(inner, true);
    const a = new TidemarkMastraStore({ store: inner });
    const b = new TidemarkMastraStore({ store: counted.store });
    await writtenByB(b, thread);
    await rewriteBehind(a, thread);
    counted.reset();
    await b.memory.saveMessages({
      messages: [sampleMessage(thread, 'from B', { createdAt: new Date(Date.now() + 1000) })],
    });
    expect(counted.calls).toMatchObject({ conflicts: 1, appends: 2, afters: 2 });
    expect(textsOf((await a.memory.listMessages({ threadId: thread.id })).messages)).toEqual([
      'new-1',
      'new-2',
      'from B',
    ]);
    expect((await a.memory.getThreadById({ threadId: thread.id }))?.title).toBe('second life');
    // Three events of the rewrite, two of B's save: nothing planned on the old log was written.
    expect((await inner.load(threadSessionId(thread.id))).events).toHaveLength(5);
  });

  it('merges an update into the rewritten thread, not into the one B knew', async () => {
    const inner = await openMemoryStore();
    const a = new TidemarkMastraStore({ store: inner });
    const b = new TidemarkMastraStore({ store: counting(inner, true).store });
    await writtenByB(b, thread);
    await rewriteBehind(a, thread);
    const updated = await b.memory.updateThread({ id: thread.id, title: 'renamed by B', metadata: { b: 1 } });
    expect(updated.metadata).toEqual({ fresh: true, b: 1 });
    expect(await a.memory.getThreadById({ threadId: thread.id })).toMatchObject({
      title: 'renamed by B',
      metadata: { fresh: true, b: 1 },
    });
    expect((await inner.load(threadSessionId(thread.id))).events).toHaveLength(4);
  });

  it.each([
    ['between B’s read and its append (B knew nothing)', false],
    ['right before B’s append planned on what it knew', true],
  ])('refuses it when the rewrite comes %s', async (_, warm) => {
    const inner = await openMemoryStore();
    const a = new TidemarkMastraStore({ store: inner });
    const b = withInterleaving(inner, { passAfter: true });
    const memoryB = new TidemarkMastraStore({ store: b.store }).memory;
    if (warm) await writtenByB(new TidemarkMastraStore({ store: b.store }), thread);
    else await writtenByB(a, thread);
    b.arm(() => rewriteBehind(a, thread));
    await memoryB.saveMessages({
      messages: [sampleMessage(thread, 'from B', { createdAt: new Date(Date.now() + 1000) })],
    });
    expect(textsOf((await a.memory.listMessages({ threadId: thread.id })).messages)).toEqual([
      'new-1',
      'new-2',
      'from B',
    ]);
    expect((await memoryB.getThreadById({ threadId: thread.id }))?.metadata).toEqual({ fresh: true });
    expect((await inner.load(threadSessionId(thread.id))).events).toHaveLength(5);
  });
});

describe.each(await sharedBackends())('behind what host B knows, on two $name store instances', (backend) => {
  let close: (() => Promise<void>) | undefined;
  let storeA: SessionStore;
  let storeB: SessionStore;
  beforeAll(async () => {
    ({ storeA, storeB, close } = await openTwoInstances(backend));
    expect(checksAppendAfter(storeB)).toBe(true);
  });
  afterAll(() => close?.());

  it('saves onto the thread A deleted and wrote again to the same length, as planned on it', async () => {
    const thread = sampleThread({ id: `rewritten-${backend.name}`, title: 'first life' });
    const a = new TidemarkMastraStore({ store: storeA });
    const b = new TidemarkMastraStore({ store: storeB });
    await writtenByB(b, thread);
    await rewriteBehind(a, thread);
    await b.memory.saveMessages({
      messages: [sampleMessage(thread, 'from B', { createdAt: new Date(Date.now() + 1000) })],
    });
    await b.memory.updateThread({ id: thread.id, metadata: { b: 1 } });
    const expected = ['new-1', 'new-2', 'from B'];
    expect(textsOf((await a.memory.listMessages({ threadId: thread.id })).messages)).toEqual(expected);
    expect(textsOf((await b.memory.listMessages({ threadId: thread.id })).messages)).toEqual(expected);
    expect(await a.memory.getThreadById({ threadId: thread.id })).toMatchObject({
      title: 'second life',
      metadata: { fresh: true, b: 1 },
    });
    // Three events of the rewrite, two of B's save, one of its update.
    expect((await storeA.load(threadSessionId(thread.id))).events).toHaveLength(6);
  });

  it('writes again a run and a resource that A deleted or changed', async () => {
    const run = { workflowName: 'wf', runId: `run-${backend.name}` };
    const a = new TidemarkMastraStore({ store: storeA });
    const b = new TidemarkMastraStore({ store: storeB });
    await b.workflows.persistWorkflowSnapshot({ ...run, snapshot: snapshot('running', {}, run.runId) });
    await a.workflows.deleteWorkflowRunById(run);
    await a.workflows.persistWorkflowSnapshot({
      ...run,
      snapshot: snapshot('suspended', { a: { status: 'success' } }, run.runId),
    }); // as many events as B's run had
    const context = await b.workflows.updateWorkflowResults({
      ...run,
      stepId: 'b',
      result: stepResult,
      requestContext: {},
    });
    expect(Object.keys(context).sort()).toEqual(['a', 'b']);
    expect((await a.workflows.loadWorkflowSnapshot(run))?.status).toBe('suspended');
    const resourceId = `user-${backend.name}`;
    await b.memory.updateResource({ resourceId, workingMemory: '# B', metadata: { b: 1 } });
    await a.memory.updateResource({ resourceId, metadata: { a: 1 } });
    await b.memory.updateResource({ resourceId, workingMemory: '# B again' });
    expect(await a.memory.getResourceById({ resourceId })).toMatchObject({
      workingMemory: '# B again',
      metadata: { a: 1, b: 1 },
    });
  });

  it('keeps writing warm on both hosts, taking turns', async () => {
    const thread = sampleThread({ id: `turns-${backend.name}` });
    const a = new TidemarkMastraStore({ store: storeA });
    const b = new TidemarkMastraStore({ store: storeB });
    await a.memory.saveThread({ thread });
    const at = Date.now();
    for (let i = 0; i < 4; i++) {
      await a.memory.saveMessages({
        messages: [sampleMessage(thread, `a${i}`, { createdAt: new Date(at + 2 * i) })],
      });
      await b.memory.saveMessages({
        messages: [sampleMessage(thread, `b${i}`, { createdAt: new Date(at + 2 * i + 1) })],
      });
    }
    const expected = ['a0', 'b0', 'a1', 'b1', 'a2', 'b2', 'a3', 'b3'];
    expect(textsOf((await a.memory.listMessages({ threadId: thread.id, perPage: false })).messages)).toEqual(
      expected,
    );
    expect(
      textsOf(
        (
          await new TidemarkMastraStore({ store: storeB }).memory.listMessages({
            threadId: thread.id,
            perPage: false,
          })
        ).messages,
      ),
    ).toEqual(expected);
  });
});
