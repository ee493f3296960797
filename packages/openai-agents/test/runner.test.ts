// The real Runner of @openai/agents-core, driven offline by its ScriptedModel, persisting through
// TidemarkSession on every backend: a plain run, a streamed run, a tool call that waits for human
// approval and is resumed, and an output guardrail whose blocked output the runner records with a
// history transaction.
import {
  Agent,
  type AgentInputItem,
  OutputGuardrailTripwireTriggered,
  Runner,
  type SessionHistoryTransactionArgs,
  tool,
  Usage,
} from '@openai/agents-core';
import { assistantMessage, functionCall, modelResponse, ScriptedModel } from '@openai/agents-core/testing';
import type { SessionStore } from '@tidemark/core';
import { testBackends } from '@tidemark/test-hosts';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { TidemarkSession } from '../src/index.js';

const runner = new Runner({ tracingDisabled: true });

const shape = (items: AgentInputItem[]) =>
  items.map((item) => ('role' in item ? `${item.type ?? 'message'}:${item.role}` : item.type));

class CountingSession extends TidemarkSession {
  transactions: SessionHistoryTransactionArgs[] = [];
  override async applyHistoryTransaction(args: SessionHistoryTransactionArgs): Promise<void> {
    this.transactions.push(structuredClone(args));
    await super.applyHistoryTransaction(args);
  }
}

for (const backend of await testBackends('oa')) {
  describe(`Runner with TidemarkSession on ${backend.name}`, () => {
    const stores: SessionStore[] = [];
    afterAll(async () => {
      for (const store of stores) await store.close();
      await backend.cleanup();
    });
    async function openStore(): Promise<SessionStore> {
      const store = await backend.open();
      stores.push(store);
      return store;
    }

    it('a plain run stores the turn, and the next run sends it back to the model', async () => {
      const store = await openStore();
      const model = new ScriptedModel([[assistantMessage('Hi, Ada.')], [assistantMessage('You are Ada.')]]);
      const agent = new Agent({ name: 'greeter', model });
      await runner.run(agent, 'My name is Ada.', {
        session: new TidemarkSession({ store, sessionId: 'plain' }),
      });
      const later = new TidemarkSession({ store, sessionId: 'plain' });
      const result = await runner.run(agent, 'What is my name?', { session: later });
      expect(result.finalOutput).toBe('You are Ada.');
      expect(JSON.stringify(model.lastCall?.request.input)).toContain('Hi, Ada.');
      expect(shape(await later.getItems())).toEqual([
        'message:user',
        'message:assistant',
        'message:user',
        'message:assistant',
      ]);
    });

    it('a streamed run stores the same turn once the stream completes', async () => {
      const store = await openStore();
      const agent = new Agent({
        name: 'streamer',
        model: new ScriptedModel([[assistantMessage('streamed answer')]]),
      });
      const session = new TidemarkSession({ store, sessionId: 'streamed' });
      const result = await runner.run(agent, 'stream please', { session, stream: true });
      for await (const _event of result.toTextStream()) {
        // drain
      }
      await result.completed;
      expect(result.finalOutput).toBe('streamed answer');
      const items = await session.getItems();
      expect(shape(items)).toEqual(['message:user', 'message:assistant']);
      expect(JSON.stringify(items)).toContain('streamed answer');
    });

    it('a tool call waiting for approval is resumed from the stored state and completes once', async () => {
      const store = await openStore();
      let executed = 0;
      const refund = tool({
        name: 'refund',
        description: 'Refunds an order.',
        parameters: z.object({ order: z.string() }),
        needsApproval: true,
        execute: async ({ order }) => {
          executed++;
          return `refunded ${order}`;
        },
      });
      const model = new ScriptedModel([
        modelResponse({
          output: [functionCall('refund', { order: 'A-1' }, { callId: 'call-refund' })],
          usage: new Usage(),
        }),
        [assistantMessage('Refund done.')],
      ]);
      const agent = new Agent({ name: 'support', model, tools: [refund] });
      const first = await runner.run(agent, 'Refund order A-1', {
        session: new TidemarkSession({ store, sessionId: 'approval' }),
      });
      expect(first.interruptions).toHaveLength(1);
      expect(executed).toBe(0);
      const state = first.state;
      state.approve(first.interruptions[0]!);
      // Resumed with a new session object over the same stored history, as another process would.
      const session = new TidemarkSession({ store, sessionId: 'approval' });
      const resumed = await runner.run(agent, state, { session });
      expect(resumed.finalOutput).toBe('Refund done.');
      expect(executed).toBe(1);
      const items = await session.getItems();
      expect(shape(items)).toEqual([
        'message:user',
        'function_call',
        'function_call_result',
        'message:assistant',
      ]);
    });

    it('an output guardrail that trips records the blocked turn through a history transaction', async () => {
      const store = await openStore();
      let trip = true;
      const lookup = tool({
        name: 'lookup',
        description: 'Looks an account up.',
        parameters: z.object({}),
        execute: async () => 'account details',
      });
      const model = new ScriptedModel([
        modelResponse({
          output: [functionCall('lookup', {}, { callId: 'call-lookup' })],
          usage: new Usage(),
        }),
        [assistantMessage('Here is the secret answer.')],
        [assistantMessage('A safe answer.')],
      ]);
      const agent = new Agent({
        name: 'guarded',
        model,
        tools: [lookup],
        outputGuardrails: [
          { name: 'no secrets', execute: async () => ({ outputInfo: null, tripwireTriggered: trip }) },
        ],
      });
      const session = new CountingSession({ store, sessionId: 'guarded' });
      await expect(runner.run(agent, 'Look me up', { session })).rejects.toBeInstanceOf(
        OutputGuardrailTripwireTriggered,
      );
      expect(session.transactions.length).toBeGreaterThan(0);
      const stored = await session.getItems();
      expect(JSON.stringify(stored)).not.toContain('secret answer');
      expect(shape(stored)).toContain('function_call_result');
      // Replaying the recorded transactions changes nothing: each was applied exactly once.
      for (const args of [...session.transactions]) await session.applyHistoryTransaction(args);
      expect(await session.getItems()).toEqual(stored);

      trip = false;
      const next = await runner.run(agent, 'Try again', { session });
      expect(next.finalOutput).toBe('A safe answer.');
      expect(JSON.stringify(await session.getItems())).toContain('A safe answer.');
    });
  });
}
