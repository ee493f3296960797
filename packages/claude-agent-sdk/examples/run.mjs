// Drives the Claude Agent SDK's own session functions offline (no CLI, no API key) over a JSONL
// tidemark store: imports a Claude Code transcript from disk with importSessionToStore, lists it,
// reads its messages, tags it and deletes it, all through TidemarkSessionStore.
//   pnpm --filter @tidemark/claude-agent-sdk build && pnpm --filter @tidemark/claude-agent-sdk example
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  deleteSession,
  getSessionMessages,
  importSessionToStore,
  listSessions,
  tagSession,
} from '@anthropic-ai/claude-agent-sdk';
import { TidemarkSessionStore } from '@tidemark/claude-agent-sdk';
import { openJsonlStore } from '@tidemark/jsonl';

const home = mkdtempSync(join(tmpdir(), 'tidemark-claude-example-'));
const project = join(home, 'my-project');
const sessionId = '0b7c6e1a-2d3f-4a5b-8c9d-0e1f2a3b4c5d';
// A Claude Code transcript as the CLI keeps it under $CLAUDE_CONFIG_DIR/projects/<project>/.
process.env.CLAUDE_CONFIG_DIR = join(home, 'claude');
const projectDir = join(process.env.CLAUDE_CONFIG_DIR, 'projects', project.replace(/[^A-Za-z0-9]/g, '-'));
mkdirSync(projectDir, { recursive: true });
mkdirSync(project);
const line = (type, n, parent, message) => ({
  type,
  uuid: `00000000-0000-4000-8000-00000000000${n}`,
  parentUuid: parent === null ? null : `00000000-0000-4000-8000-00000000000${parent}`,
  sessionId,
  cwd: project,
  timestamp: new Date(Date.UTC(2026, 10, 30, 9, 0, n)).toISOString(),
  message,
});
const transcript = [
  line('user', 1, null, { role: 'user', content: 'Rename the config loader' }),
  line('assistant', 2, 1, { role: 'assistant', type: 'message', content: [{ type: 'text', text: 'Done.' }] }),
];
writeFileSync(
  join(projectDir, `${sessionId}.jsonl`),
  `${transcript.map((l) => JSON.stringify(l)).join('\n')}\n`,
);

const store = await openJsonlStore({ root: join(home, 'store') });
const sessionStore = new TidemarkSessionStore({ store });
await importSessionToStore(sessionId, sessionStore, { dir: project });
await tagSession(sessionId, 'refactor', { dir: project, sessionStore });
const [listed] = await listSessions({ dir: project, sessionStore });
console.log(`listed: ${listed.sessionId} "${listed.summary}" tag=${listed.tag}`);
const messages = await getSessionMessages(sessionId, { dir: project, sessionStore });
console.log(`messages: ${messages.map((m) => m.type).join(', ')}`);
await deleteSession(sessionId, { dir: project, sessionStore });
console.log(`after delete: ${(await listSessions({ dir: project, sessionStore })).length} sessions`);
await store.close();
rmSync(home, { recursive: true, force: true });
