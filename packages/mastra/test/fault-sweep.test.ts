// Every Mastra storage operation meets a failing store at each of its storage steps, the fault
// lasting one step or every step from there on. A long-lived TidemarkMastraStore runs the
// operation. Then, with the fault lifted: the call either succeeded with the right answer or
// rejected with a TidemarkError (never a thread reported missing, a short page, an empty working
// memory or a missing snapshot); what a new store object sees is the state before the call or
// after it, never one in between; the long-lived object agrees with it; a retried write applies
// once; and the store takes the next write.
import type { MastraDBMessage } from '@mastra/core/memory';
import { isTidemarkError } from '@tidemark/core';
import { MemoryVolume, openMemoryStore } from '@tidemark/memory';
import { describe, expect, it } from 'vitest';
import { TidemarkMastraStore } from '../src/index.js';

const T = new Date('2026-01-01T00:00:00.000Z');
const thread = {
  id: 'thread-1',
  resourceId: 'user-1',
  title: 'first',
  metadata: { a: 1 },
  createdAt: T,
  updatedAt: T,
};
const message = (id: string, text: string, at = 0): MastraDBMessage => ({
  id,
  threadId: thread.id,
  resourceId: thread.resourceId,
  role: 'user',
  type: 'text',
  createdAt: new Date(T.getTime() + at),
  content: { format: 2, parts: [{ type: 'text', text }], content: text },
});
const run = { workflowName: 'wf', runId: 'run-1' };
const snapshot = (status: string) => ({
  runId: 'run-1',
  status,
  context: { s1: { status: 'success', output: 1 } },
});

interface Operation {
  call: (s: TidemarkMastraStore) => Promise<unknown>;
  /** Idempotent: the caller may retry it after a failure, and it applies once. */
  retried?: boolean;
  /** Run by an object that knows the thread, the resource and the run already (see `warmUp`). */
  warm?: boolean;
}
const OPERATIONS: Record<string, Operation> = {
  saveThread: { call: (s) => s.memory.saveThread({ thread: { ...thread, id: 'thread-2' } }), retried: true },
  updateThread: {
    call: (s) => s.memory.updateThread({ id: thread.id, title: 'second', metadata: { b: 2 } }),
  },
  deleteThread: { call: (s) => s.memory.deleteThread({ threadId: thread.id }), retried: true },
  getThreadById: { call: (s) => s.memory.getThreadById({ threadId: thread.id }) },
  listThreads: { call: (s) => s.memory.listThreads({ filter: { resourceId: thread.resourceId } }) },
  saveMessages: {
    call: (s) => s.memory.saveMessages({ messages: [message('m3', 'three', 3)] }),
    retried: true,
  },
  'saveMessages of stored ones': {
    call: (s) => s.memory.saveMessages({ messages: [message('m1', 'one', 1)] }),
  },
  listMessages: {
    call: (s) =>
      s.memory.listMessages({
        threadId: thread.id,
        perPage: 1,
        orderBy: { field: 'createdAt', direction: 'DESC' },
      }),
  },
  listMessagesById: { call: (s) => s.memory.listMessagesById({ messageIds: ['m2', 'm1'] }) },
  updateMessages: {
    call: (s) =>
      s.memory.updateMessages({ messages: [{ id: 'm1', content: { content: 'edited' } as never }] }),
    retried: true,
  },
  deleteMessages: { call: (s) => s.memory.deleteMessages(['m2']), retried: true },
  getResourceById: { call: (s) => s.memory.getResourceById({ resourceId: 'user-1' }) },
  updateResource: {
    call: (s) => s.memory.updateResource({ resourceId: 'user-1', workingMemory: '# v2' }),
    retried: true,
  },
  persistWorkflowSnapshot: {
    call: (s) =>
      s.workflows.persistWorkflowSnapshot({ ...run, snapshot: snapshot('success') as never, updatedAt: T }),
    retried: true,
  },
  loadWorkflowSnapshot: { call: (s) => s.workflows.loadWorkflowSnapshot(run) },
  updateWorkflowResults: {
    call: (s) =>
      s.workflows.updateWorkflowResults({
        ...run,
        stepId: 's2',
        result: { status: 'success', output: 2 } as never,
        requestContext: {},
      }),
    retried: true,
  },
  updateWorkflowState: {
    call: (s) =>
      s.workflows.updateWorkflowState({
        ...run,
        opts: { status: 'success', expectedStatus: 'suspended' } as never,
      }),
  },
  listWorkflowRuns: { call: (s) => s.workflows.listWorkflowRuns({ workflowName: 'wf' }) },
  getWorkflowRunById: { call: (s) => s.workflows.getWorkflowRunById({ runId: 'run-1' }) },
  deleteWorkflowRunById: { call: (s) => s.workflows.deleteWorkflowRunById(run), retried: true },
};

// The writes again, by an object that planned a write on each record before: on a store that checks
// `append(…, { after })` it plans on what it knows and reads nothing before the append.
for (const name of [
  'updateThread',
  'saveMessages',
  'updateMessages',
  'deleteMessages',
  'updateResource',
  'persistWorkflowSnapshot',
  'updateWorkflowResults',
  'updateWorkflowState',
])
  OPERATIONS[`${name}, warm`] = { ...OPERATIONS[name]!, warm: true };

/**
 * Writes that find nothing to do, so `s` knows the thread with its messages, the resource and the
 * run (each confirmed by a read), and the store is left as it was.
 */
async function warmUp(s: TidemarkMastraStore): Promise<void> {
  await s.memory.saveMessages({ messages: [message('m1', 'one', 1), message('m2', 'two', 2)] });
  const resource = await s.memory.getResourceById({ resourceId: 'user-1' });
  await s.memory.saveResource({ resource: resource! });
  await s.workflows.updateWorkflowState({
    ...run,
    opts: { status: 'x', expectedStatus: 'running' } as never,
  });
}

/** Everything a Mastra user can see, without the clock-driven fields. */
async function observe(s: TidemarkMastraStore): Promise<unknown> {
  const strip = <T extends object>(value: T | null | undefined) => {
    if (value === null || value === undefined) return value ?? null;
    const { updatedAt: _u, ...rest } = value as Record<string, unknown>;
    return rest;
  };
  const threads = await s.memory.listThreads({ filter: { resourceId: thread.resourceId } });
  const messages = await s.memory.listMessages({ threadId: thread.id, perPage: false });
  const runs = await s.workflows.listWorkflowRuns();
  return {
    thread: strip(await s.memory.getThreadById({ threadId: thread.id })),
    threads: threads.threads.map((t) => [t.id, t.title, t.metadata]),
    messages: messages.messages.map((m) => [m.id, m.content.content]),
    resource: (await s.memory.getResourceById({ resourceId: 'user-1' }))?.workingMemory ?? null,
    snapshot: await s.workflows.loadWorkflowSnapshot(run),
    runs: runs.runs.map((r) => r.runId),
  };
}

/** A fresh volume holding a thread with two messages, a resource and a suspended run. */
async function seeded(): Promise<MemoryVolume> {
  const volume = new MemoryVolume();
  const s = new TidemarkMastraStore({ store: await openMemoryStore({ volume }) });
  await s.memory.saveThread({ thread });
  await s.memory.saveMessages({ messages: [message('m1', 'one', 1), message('m2', 'two', 2)] });
  await s.memory.updateResource({ resourceId: 'user-1', workingMemory: '# v1' });
  await s.workflows.persistWorkflowSnapshot({
    ...run,
    snapshot: snapshot('suspended') as never,
    createdAt: T,
    updatedAt: T,
  });
  return volume;
}

async function faultyStore(volume: MemoryVolume, plan: { at: number; lasting: boolean } | undefined) {
  let steps = 0;
  let armed = false;
  const store = await openMemoryStore({
    volume,
    beforeStorageStep: () => {
      if (!armed) return;
      steps++;
      if (plan !== undefined && (steps === plan.at || (plan.lasting && steps > plan.at)))
        throw Object.assign(new Error('injected fault'), { code: 'EIO' });
    },
  });
  return { store, arm: () => (armed = true), disarm: () => (armed = false), steps: () => steps };
}

async function runOnce(name: string, plan: { at: number; lasting: boolean } | undefined) {
  const volume = await seeded();
  const faulty = await faultyStore(volume, plan);
  const s = new TidemarkMastraStore({ store: faulty.store });
  await s.memory.listMessagesById({ messageIds: ['m1', 'm2'] }); // a long-lived object with hints
  if (OPERATIONS[name]!.warm === true) await warmUp(s);
  faulty.arm();
  const outcome = await OPERATIONS[name]!.call(s).then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  faulty.disarm();
  return { volume, s, outcome, steps: faulty.steps() };
}

const fresh = async (volume: MemoryVolume) =>
  new TidemarkMastraStore({ store: await openMemoryStore({ volume }) });
/** Answers compared without the times the call itself stamps. */
const stable = (value: unknown) =>
  JSON.parse(JSON.stringify(value ?? null, (k, v) => (k === 'updatedAt' ? undefined : v)));

describe.each(Object.keys(OPERATIONS))('%s under a storage fault', (name) => {
  it('rejects with a typed error or succeeds, and applies the whole call or none of it', async () => {
    const before = await observe(await fresh(await seeded()));
    const clean = await runOnce(name, undefined);
    expect(clean.outcome.ok).toBe(true);
    const after = await observe(await fresh(clean.volume));
    let failures = 0;
    for (let at = 1; at <= clean.steps; at++) {
      for (const lasting of [false, true]) {
        const { volume, s, outcome } = await runOnce(name, { at, lasting });
        const where = `step ${at}${lasting ? ' and on' : ''}`;
        if (outcome.ok)
          expect(stable(outcome.value), where).toEqual(stable(clean.outcome.ok && clean.outcome.value));
        else {
          failures++;
          expect(isTidemarkError(outcome.error, 'IO'), `${where}: ${String(outcome.error)}`).toBe(true);
        }
        const seen = await observe(await fresh(volume));
        if (outcome.ok) expect(seen, where).toEqual(after);
        else expect([before, after], where).toContainEqual(seen);
        expect(await observe(s), `${where}: the long-lived object`).toEqual(seen);
        if (!outcome.ok && OPERATIONS[name]!.retried === true) {
          await OPERATIONS[name]!.call(s); // what Mastra's caller does after an error: applied once
          expect(await observe(await fresh(volume)), `${where}: retried`).toEqual(after);
        }
        await s.memory.updateResource({ resourceId: 'probe', workingMemory: where });
        const probe = await (await fresh(volume)).memory.getResourceById({ resourceId: 'probe' });
        expect(probe?.workingMemory, `${where}: the next write`).toBe(where);
      }
    }
    expect(failures).toBeGreaterThan(0);
  });
});
