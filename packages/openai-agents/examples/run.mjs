// Runs a real OpenAI Agents Runner offline (ScriptedModel, no API key) with its history in a
// JSONL tidemark store, then resumes the conversation from the store in a second run.
//   pnpm --filter @tidemark/openai-agents build && pnpm --filter @tidemark/openai-agents example
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, Runner } from '@openai/agents-core';
import { assistantMessage, ScriptedModel } from '@openai/agents-core/testing';
import { openJsonlStore } from '@tidemark/jsonl';
import { TidemarkSession } from '@tidemark/openai-agents';

const root = process.argv[2] ?? mkdtempSync(join(tmpdir(), 'tidemark-openai-example-'));
const model = new ScriptedModel([[assistantMessage('Hello Ada!')], [assistantMessage('Your name is Ada.')]]);
const agent = new Agent({ name: 'assistant', instructions: 'Be brief.', model });
const runner = new Runner({ tracingDisabled: true });

let store = await openJsonlStore({ root });
await runner.run(agent, 'Hi, I am Ada.', { session: new TidemarkSession({ store, sessionId: 'ada' }) });
await store.close();

// A new process would do exactly this: open the store, name the session, run.
store = await openJsonlStore({ root });
const session = new TidemarkSession({ store, sessionId: 'ada' });
const result = await runner.run(agent, 'What is my name?', { session });
console.log(`answer: ${result.finalOutput}`);
console.log(`stored items: ${(await session.getItems()).length}`);
console.log(`log: ${root}`);
await store.close();
