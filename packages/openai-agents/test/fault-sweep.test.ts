// Every session operation meets a failing store at each of its storage steps, the fault lasting
// one step or every step from there on. A long-lived session object runs the operation. Then,
// with the fault lifted: the call either succeeded with the right answer or rejected with a
// TidemarkError (never a false empty history, a short list or an undefined pop); the history is
// as before the call or as after it, never in between; the long-lived object and a new one agree;
// a retried transaction applies once; and the store accepts the next write.
import type { AgentInputItem, SessionHistoryTransactionArgs } from '@openai/agents-core';
import { isTidemarkError } from '@tidemark/core';
import { MemoryVolume, openMemoryStore } from '@tidemark/memory';
import { describe, expect, it } from 'vitest';
import { TidemarkSession } from '../src/index.js';

const user = (text: string): AgentInputItem => ({ role: 'user', content: [{ type: 'input_text', text }] });
const SESSION = 'faulty';

const appendOp: SessionHistoryTransactionArgs = {
  operationId: 'op-1',
  transaction: { type: 'append_items', items: [user('t1')] },
};
const replaceOp: SessionHistoryTransactionArgs = {
  operationId: 'op-2',
  transaction: { type: 'replace_suffix', expectedSuffix: [user('t0')], replacement: [user('accepted')] },
};
const replayedOp: SessionHistoryTransactionArgs = {
  operationId: 'op-0',
  transaction: { type: 'append_items', items: [user('t0')] },
};

interface Operation {
  call: (s: TidemarkSession) => Promise<unknown>;
  /** Idempotent: the caller may retry it after a failure, and it applies once. */
  retried?: boolean;
}
const OPERATIONS: Record<string, Operation> = {
  addItems: { call: (s) => s.addItems([user('added')]) },
  'getItems()': { call: (s) => s.getItems() },
  'getItems(2)': { call: (s) => s.getItems(2) },
  popItem: { call: (s) => s.popItem() },
  clearSession: { call: (s) => s.clearSession(), retried: true },
  'an append transaction': { call: (s) => s.applyHistoryTransaction(appendOp), retried: true },
  'a suffix replacement': { call: (s) => s.applyHistoryTransaction(replaceOp), retried: true },
  'a transaction applied before': { call: (s) => s.applyHistoryTransaction(replayedOp), retried: true },
  applyHistoryMutations: {
    call: (s) =>
      s.applyHistoryMutations({
        mutations: [
          {
            type: 'replace_function_call',
            callId: 'call-1',
            replacement: { type: 'function_call', callId: 'call-1', name: 'f', arguments: '{"v":2}' },
          },
        ],
      }),
    retried: true,
  },
};

/** What a new session object sees of the store. */
async function observe(s: TidemarkSession): Promise<unknown> {
  return { all: await s.getItems(), last2: await s.getItems(2) };
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

/** A fresh volume holding a history with a function call, a pop, and a recorded transaction. */
async function seeded(): Promise<MemoryVolume> {
  const volume = new MemoryVolume();
  const s = new TidemarkSession({ store: await openMemoryStore({ volume }), sessionId: SESSION });
  await s.addItems([
    user('start'),
    { type: 'function_call', callId: 'call-1', name: 'f', arguments: '{"v":1}' },
    user('popped'),
  ]);
  await s.popItem();
  await s.applyHistoryTransaction(replayedOp);
  return volume;
}

async function run(name: string, plan: { at: number; lasting: boolean } | undefined) {
  const volume = await seeded();
  const faulty = await faultyStore(volume, plan);
  const s = new TidemarkSession({ store: faulty.store, sessionId: SESSION });
  await s.getItems(); // a long-lived object that has read the session
  faulty.arm();
  const outcome = await OPERATIONS[name]!.call(s).then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  faulty.disarm();
  return { volume, s, outcome, steps: faulty.steps() };
}

const fresh = async (volume: MemoryVolume) =>
  new TidemarkSession({ store: await openMemoryStore({ volume }), sessionId: SESSION });

describe.each(Object.keys(OPERATIONS))('%s under a storage fault', (name) => {
  it('rejects with a typed error or succeeds, and applies the whole operation or none of it', async () => {
    const before = await observe(await fresh(await seeded()));
    const clean = await run(name, undefined);
    expect(clean.outcome.ok).toBe(true);
    const after = await observe(await fresh(clean.volume));
    let failures = 0;
    for (let at = 1; at <= clean.steps; at++) {
      for (const lasting of [false, true]) {
        const { volume, s, outcome } = await run(name, { at, lasting });
        const where = `step ${at}${lasting ? ' and on' : ''}`;
        if (outcome.ok) expect(outcome.value, where).toEqual(clean.outcome.ok && clean.outcome.value);
        else {
          failures++;
          expect(isTidemarkError(outcome.error, 'IO'), `${where}: ${String(outcome.error)}`).toBe(true);
        }
        const seen = await observe(await fresh(volume));
        if (outcome.ok) expect(seen, where).toEqual(after);
        else expect([before, after], where).toContainEqual(seen);
        expect(await observe(s), `${where}: the long-lived object`).toEqual(seen);
        if (!outcome.ok && OPERATIONS[name]!.retried === true) {
          await OPERATIONS[name]!.call(s); // what the SDK does after an error: applied once
          expect(await observe(await fresh(volume)), `${where}: retried`).toEqual(after);
        }
        await s.addItems([user('probe')]);
        expect((await (await fresh(volume)).getItems(1))[0], where).toEqual(user('probe'));
      }
    }
    expect(failures).toBeGreaterThan(0);
  });
});
