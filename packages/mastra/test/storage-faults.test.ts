// A storage fault reaches the Agent and the workflow as an error: never a conversation that
// starts over with no history, an empty working memory, or a run that "has no snapshot".
import { Mastra } from '@mastra/core';
import { Agent } from '@mastra/core/agent';
import { createStep, createWorkflow } from '@mastra/core/workflows';
import { Memory } from '@mastra/memory';
import { isTidemarkError } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { TidemarkMastraStore } from '../src/index.js';

/**
 * The code of the TidemarkError in `error` or its chain of causes. Mastra's agent wraps a failed
 * step in a MastraError whose cause is the TidemarkError serialized (name, code, errno, ...).
 */
function tidemarkCode(error: unknown): string | undefined {
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < 10; depth++) {
    if (isTidemarkError(e)) return e.code;
    const { name, code } = e as { name?: unknown; code?: unknown };
    if (name === 'TidemarkError' && typeof code === 'string') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

async function failingStore() {
  let failing = false;
  const store = await openMemoryStore({
    beforeStorageStep: () => {
      if (failing) throw Object.assign(new Error('disk gone'), { code: 'EIO' });
    },
  });
  return { store, fail: (on: boolean) => (failing = on) };
}

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

describe('a storage fault', () => {
  it('fails the Agent turn with the IO error, and the history is whole once the fault is gone', async () => {
    const { store, fail } = await failingStore();
    const storage = new TidemarkMastraStore({ store });
    const prompts: string[] = [];
    const model = new MockLanguageModelV3({
      doGenerate: async (options) => {
        prompts.push(JSON.stringify(options.prompt));
        return {
          content: [{ type: 'text', text: 'ok' }],
          finishReason: { unified: 'stop', raw: 'stop' },
          usage,
          warnings: [],
        };
      },
    });
    const memory = new Memory({ storage, options: { lastMessages: 10 } });
    const agent = new Agent({ id: 'a', name: 'a', instructions: 'x', model, memory });
    const where = { memory: { thread: 't', resource: 'r' } };
    await agent.generate('remember the blue door', where);
    fail(true);
    const error = await agent.generate('what colour was the door?', where).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(tidemarkCode(error), String(error)).toBe('IO');
    expect(prompts).toHaveLength(1); // the model was never shown a history with the first turn missing
    await expect(memory.recall({ threadId: 't' })).rejects.toSatisfy(
      (e: unknown) => tidemarkCode(e) === 'IO',
    );
    fail(false);
    await agent.generate('what colour was the door?', where);
    expect(prompts.at(-1)).toContain('remember the blue door');
  });

  it('fails a workflow resume with the IO error instead of "no snapshot found", and it resumes after', async () => {
    const { store, fail } = await failingStore();
    const n = z.object({ n: z.number() });
    const wait = createStep({
      id: 'wait',
      inputSchema: n,
      outputSchema: n,
      resumeSchema: n,
      execute: async ({ inputData, resumeData, suspend }) =>
        resumeData ? { n: inputData.n + resumeData.n } : suspend({}),
    });
    const workflow = createWorkflow({ id: 'w', inputSchema: n, outputSchema: n }).then(wait).commit();
    const mastra = new Mastra({
      workflows: { w: workflow },
      storage: new TidemarkMastraStore({ store }),
      logger: false,
    });
    const started = await (await mastra.getWorkflow('w').createRun({ runId: 'r' })).start({
      inputData: { n: 1 },
    });
    expect(started.status).toBe('suspended');
    fail(true);
    const error = await (async () =>
      (await mastra.getWorkflow('w').createRun({ runId: 'r' })).resume({
        step: 'wait',
        resumeData: { n: 2 },
      }))().then(
      (result) => result,
      (e: unknown) => e,
    );
    const failure =
      (error as { status?: string; error?: unknown }).status === 'failed'
        ? (error as { error: unknown }).error
        : error;
    expect(tidemarkCode(failure), String(failure)).toBe('IO');
    fail(false);
    const resumed = await (await mastra.getWorkflow('w').createRun({ runId: 'r' })).resume({
      step: 'wait',
      resumeData: { n: 2 },
    });
    expect(resumed.status).toBe('success');
    expect(resumed.status === 'success' && resumed.result).toEqual({ n: 3 });
  });
});
