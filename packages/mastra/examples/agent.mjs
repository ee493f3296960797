// A Mastra Agent with Memory on a JSONL store, offline: the AI SDK's test model plays the model.
// The first run tells the agent a name (the model stores it in working memory with Mastra's
// updateWorkingMemory tool); the store is closed and reopened, as by a new process, and the second
// run is shown the whole conversation and the working memory.
//
//   pnpm --filter @tidemark/mastra... build && pnpm --filter @tidemark/mastra example
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from '@mastra/core/agent';
import { Memory } from '@mastra/memory';
import { openJsonlStore } from '@tidemark/jsonl';
import { MockLanguageModelV3 } from 'ai/test';
import { TidemarkMastraStore } from '../dist/index.js';

const usage = { inputTokens: { total: 1, noCache: 1 }, outputTokens: { total: 1, text: 1 } };
const text = (value) => ({
  content: [{ type: 'text', text: value }],
  finishReason: { unified: 'stop', raw: 'stop' },
  usage,
  warnings: [],
});

/** A model that remembers a name with the working-memory tool, then answers from what it is shown. */
function scriptedModel() {
  return new MockLanguageModelV3({
    doGenerate: async ({ prompt }) => {
      const shown = JSON.stringify(prompt);
      const last = prompt.at(-1);
      if (last.role === 'user' && JSON.stringify(last.content).includes('My name is')) {
        return {
          content: [
            {
              type: 'tool-call',
              toolCallId: 'call-1',
              toolName: 'updateWorkingMemory',
              input: JSON.stringify({ memory: '# User\n- name: Ada' }),
            },
          ],
          finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
          usage,
          warnings: [],
        };
      }
      if (last.role === 'tool') return text('Nice to meet you, Ada.');
      return text(shown.includes('name: Ada') ? 'Your name is Ada.' : 'I do not know your name.');
    },
  });
}

async function turn(root, message) {
  const store = await openJsonlStore({ root });
  try {
    const memory = new Memory({
      storage: new TidemarkMastraStore({ store }),
      options: { workingMemory: { enabled: true } },
    });
    const agent = new Agent({
      id: 'helper',
      name: 'helper',
      instructions: 'Be brief.',
      model: scriptedModel(),
      memory,
    });
    const reply = await agent.generate(message, { memory: { thread: 'chat-1', resource: 'user-42' } });
    const { messages } = await memory.recall({ threadId: 'chat-1', resourceId: 'user-42' });
    return { reply: reply.text, stored: messages.length };
  } finally {
    await store.close();
  }
}

const root = mkdtempSync(join(tmpdir(), 'tidemark-mastra-example-'));
try {
  const first = await turn(root, 'My name is Ada.');
  console.log(`first run: ${first.reply}`);
  const second = await turn(root, 'What is my name?');
  console.log(`second run: ${second.reply}`);
  console.log(`stored messages: ${second.stored}`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
