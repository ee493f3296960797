// A storage fault reaches the framework as an error, never as an empty history; and a writer
// killed between two writes leaves every transaction whole or absent, and a retry applies none
// of them twice.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, type AgentInputItem, Runner } from '@openai/agents-core';
import { assistantMessage, ScriptedModel } from '@openai/agents-core/testing';
import { isTidemarkError, TidemarkError } from '@tidemark/core';
import { openJsonlStore } from '@tidemark/jsonl';
import { openMemoryStore } from '@tidemark/memory';
import { afterAll, describe, expect, it } from 'vitest';
import { TidemarkSession } from '../src/index.js';
import { runAndKill } from './crash-child.js';

const user = (text: string): AgentInputItem => ({ role: 'user', content: [{ type: 'input_text', text }] });
const textOf = (item: AgentInputItem) => JSON.stringify((item as { content: unknown }).content);

describe('a storage fault', () => {
  it('rejects the run and the read with the IO error instead of showing an empty history', async () => {
    let failing = false;
    const store = await openMemoryStore({
      beforeStorageStep: () => {
        if (failing) throw Object.assign(new Error('disk gone'), { code: 'EIO' });
      },
    });
    const session = new TidemarkSession({ store, sessionId: 'faulty' });
    await session.addItems([user('kept')]);
    failing = true;
    const runner = new Runner({ tracingDisabled: true });
    const agent = new Agent({ name: 'a', model: new ScriptedModel([[assistantMessage('never stored')]]) });
    const runError = await runner.run(agent, 'hello', { session }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isTidemarkError(runError, 'IO')).toBe(true);
    await expect(session.getItems()).rejects.toBeInstanceOf(TidemarkError);
    await expect(session.popItem()).rejects.toMatchObject({ code: 'IO' });
    failing = false;
    expect(await session.getItems()).toEqual([user('kept')]);
  });
});

describe('a writer killed with SIGKILL', () => {
  const root = mkdtempSync(join(tmpdir(), 'tidemark-oa-kill-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const script = fileURLToPath(new URL('./fixtures/transaction-writer.mjs', import.meta.url));

  it('leaves whole transactions only, and replaying every operation applies each once', async () => {
    let from = 0;
    for (let round = 0; round < 3; round++) {
      const acked = await runAndKill(script, [root, String(from)], from + 3, 40);
      const store = await openJsonlStore({ root });
      const session = new TidemarkSession({ store, sessionId: 'crash' });
      const texts = (await session.getItems()).map(textOf);
      expect(texts.length % 2).toBe(0); // never half a transaction
      const done = texts.length / 2;
      expect(done - 1).toBeGreaterThanOrEqual(acked); // nothing acknowledged is lost
      // The child retries from `from`: replay every operation up to two past the last one stored.
      for (let k = 0; k < done + 2; k++) {
        await session.applyHistoryTransaction({
          operationId: `op-${k}`,
          transaction: { type: 'append_items', items: [user(`${k}-a`), user(`${k}-b`)] },
        });
      }
      const expected = Array.from({ length: done + 2 }, (_, k) => [`${k}-a`, `${k}-b`]).flat();
      expect((await session.getItems()).map(textOf)).toEqual(expected.map((t) => textOf(user(t))));
      from = done + 2;
      await store.close();
    }
  });
});
