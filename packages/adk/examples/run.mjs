// A real ADK LlmAgent through Runner, offline on the scripted model of the tests, its session kept
// in JSONL: one turn, the store closed and opened again (as after a restart), a second turn that
// the model answers from the history and the user: state the first turn stored.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Runner } from '@google/adk';
import { TidemarkSessionService } from '@tidemark/adk';
import { openJsonlStore } from '@tidemark/jsonl';
import { buildAgent } from '../test/fixtures/agent.mjs';

const root = mkdtempSync(join(tmpdir(), 'tidemark-adk-example-'));
const key = { appName: 'demo', userId: 'ada', sessionId: 'chat-1' };

async function turn(text) {
  const store = await openJsonlStore({ root });
  const sessionService = new TidemarkSessionService({ store });
  if ((await sessionService.getSession(key)) === undefined) await sessionService.createSession(key);
  const runner = new Runner({ appName: key.appName, agent: buildAgent().agent, sessionService });
  let answer = '';
  for await (const event of runner.runAsync({
    userId: key.userId,
    sessionId: key.sessionId,
    newMessage: { role: 'user', parts: [{ text }] },
  }))
    if (event.author === 'assistant' && event.content?.parts?.[0]?.text) answer = event.content.parts[0].text;
  const stored = await sessionService.getSession(key);
  await store.close();
  return { answer, events: stored.events.length, state: stored.state };
}

try {
  console.log('first process:', await turn('Hello, my name is Ada.'));
  console.log('after a restart:', await turn('What is my name?'));
} finally {
  rmSync(root, { recursive: true, force: true });
}
