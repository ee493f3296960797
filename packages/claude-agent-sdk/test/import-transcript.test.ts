// The SDK's own importSessionToStore copies a Claude Code transcript from disk into the store, and
// the SDK's listSessions and getSessionMessages read it back through the store: no model, no CLI.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getSessionMessages, importSessionToStore, listSessions } from '@anthropic-ai/claude-agent-sdk';
import { openJsonlStore } from '@tidemark/jsonl';
import { afterAll, expect, it } from 'vitest';
import { TidemarkSessionStore } from '../src/index.js';
import { claudeTranscript, SESSION_ID } from './fixtures/transcript.js';

const home = mkdtempSync(join(tmpdir(), 'tidemark-claude-import-'));
afterAll(() => rmSync(home, { recursive: true, force: true }));

it('imports a Claude Code transcript with a subagent, idempotently, and the SDK reads it back', async () => {
  const project = join(home, 'work', 'demo');
  mkdirSync(project, { recursive: true });
  const configDir = join(home, 'claude');
  const projectDir = join(configDir, 'projects', project.replace(/[^A-Za-z0-9]/g, '-'));
  mkdirSync(join(projectDir, SESSION_ID, 'subagents'), { recursive: true });
  const { main, subagent } = claudeTranscript(project);
  writeFileSync(
    join(projectDir, `${SESSION_ID}.jsonl`),
    `${main.map((e) => JSON.stringify(e)).join('\n')}\n`,
  );
  writeFileSync(
    join(projectDir, SESSION_ID, 'subagents', 'agent-a1.jsonl'),
    `${subagent.map((e) => JSON.stringify(e)).join('\n')}\n`,
  );
  process.env.CLAUDE_CONFIG_DIR = configDir;

  const store = await openJsonlStore({ root: join(home, 'store') });
  const sessionStore = new TidemarkSessionStore({ store });
  await importSessionToStore(SESSION_ID, sessionStore, { dir: project, batchSize: 2 });
  await importSessionToStore(SESSION_ID, sessionStore, { dir: project, batchSize: 3 }); // a replay

  const [listed] = await listSessions({ dir: project, sessionStore });
  expect(listed?.sessionId).toBe(SESSION_ID);
  expect(listed?.summary).toBe('Fix the flaky test');
  const messages = await getSessionMessages(SESSION_ID, { dir: project, sessionStore });
  expect(messages.map((m) => m.uuid)).toEqual(main.map((e) => e.uuid));
  await expectStoredOnce(store);
  await store.close();
});

/** Reads the store's only session under the project key the SDK chose. */
async function expectStoredOnce(store: Awaited<ReturnType<typeof openJsonlStore>>): Promise<void> {
  const page = await store.list();
  expect(page.sessions).toHaveLength(1);
  const key = page.sessions[0]!.cwd ?? '';
  const reopened = new TidemarkSessionStore({ store });
  const loaded = await reopened.load({ projectKey: key, sessionId: SESSION_ID });
  // Every line once, in file order, although both imports sent all of them.
  expect(loaded?.map((e) => e.uuid)).toEqual(claudeTranscript('').main.map((e) => e.uuid));
  expect(await reopened.listSubkeys({ projectKey: key, sessionId: SESSION_ID })).toEqual([
    'subagents/agent-a1',
  ]);
}
