// The adapter's workload for the fault harness: what Mastra's Agent and workflow engine ask of
// storage over a conversation (a thread, turns of messages, working memory updates, a workflow run
// with its step results), with a ledger of what the store acknowledged and what was in doubt; and
// the checks run after a fault is lifted: nothing acknowledged missing or older, nothing never
// attempted present, and the store takes the next turn.
import type { MastraDBMessage } from '@mastra/core/memory';
import { isTidemarkError, type SessionStore } from '@tidemark/core';
import { TidemarkMastraStore } from '../src/index.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
export const THREAD = {
  id: 'thread-h',
  resourceId: 'user-h',
  title: 'harness',
  createdAt: new Date(T0),
  updatedAt: new Date(T0),
};
const RUN = { workflowName: 'wf-h', runId: 'run-h' };
const TURNS = 4;

const message = (turn: number, role: 'user' | 'assistant'): MastraDBMessage => ({
  id: `t${turn}-${role}`,
  threadId: THREAD.id,
  resourceId: THREAD.resourceId,
  role,
  type: 'text',
  createdAt: new Date(T0 + turn * 10 + (role === 'user' ? 0 : 1)),
  content: { format: 2, parts: [{ type: 'text', text: `${role} ${turn}` }], content: `${role} ${turn}` },
});

/** What the store acknowledged, and what was sent but not acknowledged (in doubt). */
export class Ledger {
  threadAcked = false;
  ackedMessages = new Set<string>();
  attemptedMessages = new Set<string>();
  /** Working memory values in the order they were written; the index of the last acknowledged. */
  memoryValues: string[] = [];
  memoryAcked = -1;
  snapshotAcked = false;
  ackedSteps = new Set<string>();
  attemptedSteps = new Set<string>();

  snapshot(): Ledger {
    const copy = new Ledger();
    Object.assign(copy, {
      ...this,
      ackedMessages: new Set(this.ackedMessages),
      attemptedMessages: new Set(this.attemptedMessages),
      memoryValues: [...this.memoryValues],
      ackedSteps: new Set(this.ackedSteps),
      attemptedSteps: new Set(this.attemptedSteps),
    });
    return copy;
  }
}

/** Runs the workload; stops at the first rejection, which must be a TidemarkError. */
export async function runWorkload(
  store: SessionStore,
  ledger: Ledger,
): Promise<{ rejected?: unknown; violations: string[] }> {
  const { memory, workflows } = new TidemarkMastraStore({ store });
  const step = async (what: string, call: () => Promise<unknown>, acked: () => void) => {
    await call();
    acked();
    return what;
  };
  try {
    await step(
      'saveThread',
      () => memory.saveThread({ thread: THREAD }),
      () => (ledger.threadAcked = true),
    );
    const snapshot = { runId: RUN.runId, status: 'running', context: { input: { n: 1 } } };
    await step(
      'persist',
      () => workflows.persistWorkflowSnapshot({ ...RUN, snapshot: snapshot as never }),
      () => (ledger.snapshotAcked = true),
    );
    for (let turn = 0; turn < TURNS; turn++) {
      const messages = [message(turn, 'user'), message(turn, 'assistant')];
      for (const m of messages) ledger.attemptedMessages.add(m.id);
      await step(
        'saveMessages',
        () => memory.saveMessages({ messages }),
        () => {
          for (const m of messages) ledger.ackedMessages.add(m.id);
        },
      );
      if (turn % 2 === 1) {
        const value = `# notes after turn ${turn}`;
        ledger.memoryValues.push(value);
        const index = ledger.memoryValues.length - 1;
        await step(
          'updateResource',
          () => memory.updateResource({ resourceId: THREAD.resourceId, workingMemory: value }),
          () => (ledger.memoryAcked = index),
        );
      }
      const stepId = `step-${turn}`;
      ledger.attemptedSteps.add(stepId);
      await step(
        'updateWorkflowResults',
        () =>
          workflows.updateWorkflowResults({
            ...RUN,
            stepId,
            result: { status: 'success', output: turn } as never,
            requestContext: {},
          }),
        () => ledger.ackedSteps.add(stepId),
      );
    }
    return { violations: [] };
  } catch (error) {
    return {
      rejected: error,
      violations: isTidemarkError(error) ? [] : [`untyped rejection: ${String(error)}`],
    };
  }
}

/** Checks what `store` holds against the ledger as it stood when the fault was lifted. */
export async function checkStore(store: SessionStore, ledger: Ledger, where: string): Promise<string[]> {
  const v: string[] = [];
  const { memory, workflows } = new TidemarkMastraStore({ store });
  const thread = await memory.getThreadById({ threadId: THREAD.id });
  if (ledger.threadAcked && thread === null) v.push(`${where}: an acknowledged thread is missing`);
  const { messages } = await memory.listMessages({ threadId: THREAD.id, perPage: false });
  const ids = messages.map((m) => m.id);
  for (const id of ledger.ackedMessages)
    if (!ids.includes(id)) v.push(`${where}: acknowledged message ${id} is missing`);
  for (const id of ids)
    if (!ledger.attemptedMessages.has(id)) v.push(`${where}: message ${id} was never saved`);
  if (new Set(ids).size !== ids.length) v.push(`${where}: a message is stored twice`);
  const rank = (id: string) => Number(id.slice(1, id.indexOf('-'))) * 2 + (id.endsWith('assistant') ? 1 : 0);
  const sorted = [...ids].sort((a, b) => rank(a) - rank(b)); // the order they were created in
  if (ids.join() !== sorted.join()) v.push(`${where}: messages out of order: ${ids.join()}`);
  const workingMemory = (await memory.getResourceById({ resourceId: THREAD.resourceId }))?.workingMemory;
  const at = workingMemory === undefined ? -1 : ledger.memoryValues.indexOf(workingMemory);
  if (at < ledger.memoryAcked)
    v.push(`${where}: working memory ${JSON.stringify(workingMemory)} is older than the acknowledged one`);
  if (workingMemory !== undefined && at === -1)
    v.push(`${where}: working memory ${JSON.stringify(workingMemory)} was never written`);
  const snapshot = await workflows.loadWorkflowSnapshot(RUN);
  if (ledger.snapshotAcked && snapshot === null) v.push(`${where}: the acknowledged snapshot is missing`);
  const steps = Object.keys(snapshot?.context ?? {}).filter((k) => k !== 'input');
  for (const s of ledger.ackedSteps)
    if (!steps.includes(s)) v.push(`${where}: acknowledged step result ${s} is missing`);
  for (const s of steps)
    if (!ledger.attemptedSteps.has(s)) v.push(`${where}: step result ${s} was never written`);
  return v;
}

/** The store takes the next turn after the fault: a thread, a message and a working memory. */
export async function continueWork(store: SessionStore, where: string): Promise<string[]> {
  const { memory } = new TidemarkMastraStore({ store });
  try {
    await memory.saveThread({ thread: THREAD });
    const next = { ...message(99, 'user'), id: 'next' };
    await memory.saveMessages({ messages: [next] });
    await memory.updateResource({ resourceId: THREAD.resourceId, workingMemory: 'after' });
    const { messages } = await memory.listMessages({
      threadId: THREAD.id,
      perPage: 1,
      orderBy: { field: 'createdAt', direction: 'DESC' },
    });
    if (messages[0]?.id !== 'next') return [`${where}: the next message is not the last one`];
    return [];
  } catch (error) {
    return [`${where}: the store refused the next turn: ${String(error)}`];
  }
}
