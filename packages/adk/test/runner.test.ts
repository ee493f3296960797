// A real ADK LlmAgent through ADK's Runner, on a scripted model (offline), each turn in a process
// of its own over one store: what the first process stored (the conversation, the tool's state
// writes, the output key) is what the second process's model is shown, and what a third reader
// finds in the store.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { SessionStore } from '@tidemark/core';
import { openJsonlStore } from '@tidemark/jsonl';
import { openSqliteStore } from '@tidemark/sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { TidemarkSessionService } from '../src/index.js';

const TURN = fileURLToPath(new URL('./fixtures/agent-turn.mjs', import.meta.url));
const run = promisify(execFile);
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

interface Turn {
  answer: string;
  seen: string[][];
}

async function turn(backend: string, location: string, message: string): Promise<Turn> {
  const { stdout } = await run(process.execPath, [TURN, backend, location, message], { timeout: 60_000 });
  return JSON.parse(stdout.trim().split('\n').pop()!) as Turn;
}

const cases: Array<{
  backend: string;
  open: (location: string) => Promise<SessionStore>;
  location: (dir: string) => string;
}> = [
  { backend: 'jsonl', open: (root) => openJsonlStore({ root }), location: (dir) => dir },
  {
    backend: 'sqlite',
    open: (path) => openSqliteStore({ path }),
    location: (dir) => join(dir, 'sessions.db'),
  },
];

describe.each(cases)('an ADK agent on $backend', ({ backend, open, location: where }) => {
  it('keeps its history and state across a process restart', { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), `tidemark-adk-runner-${backend}-`));
    dirs.push(dir);
    const location = where(dir);

    const first = await turn(backend, location, 'Hello, my name is Ada.');
    expect(first.answer).toBe('Noted.');
    // The second process starts cold: all it knows comes from the store.
    const second = await turn(backend, location, 'What is my name?');
    expect(second.answer).toBe('Your name is Ada.');
    expect(second.seen[0]).toEqual([
      'user: Hello, my name is Ada.',
      'model: call remember',
      'user: result remember',
      'model: Noted.',
      'user: What is my name?',
    ]);

    const store = await open(location);
    try {
      const service = new TidemarkSessionService({ store });
      const session = await service.getSession({ appName: 'demo', userId: 'ada', sessionId: 'chat-1' });
      expect(session?.state).toEqual({ remembered: 1, last_answer: 'Your name is Ada.', 'user:name': 'Ada' });
      const texts = session!.events.map((e) =>
        (e.content?.parts ?? [])
          .map((p) => p.text ?? (p.functionCall ? 'call' : p.functionResponse ? 'result' : ''))
          .join(''),
      );
      expect(texts).toEqual([
        'Hello, my name is Ada.',
        'call',
        'result',
        'Noted.',
        'What is my name?',
        'Your name is Ada.',
      ]);
      for (const event of session!.events)
        expect(Object.keys(event.actions.stateDelta).some((k) => k.startsWith('temp:'))).toBe(false);
      // Another session of the same user sees the user: state the tool wrote in the first process.
      const other = await service.createSession({ appName: 'demo', userId: 'ada', sessionId: 'chat-2' });
      expect(other.state).toEqual({ 'user:name': 'Ada' });
    } finally {
      await store.close();
    }
  });
});
