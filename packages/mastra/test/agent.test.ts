// A real Mastra Agent with Memory and a scripted AI SDK test model (offline), over every store that
// another process can open: a conversation over several turns in one process, continued in a new
// process that is shown the same history and working memory; every message saved again is stored
// once.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { openStoreAt, type SharedStore, sharedBackends } from '@tidemark/test-hosts';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TidemarkMastraStore, threadSessionId } from '../src/index.js';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('./fixtures/agent-turns.mjs', import.meta.url));
const TIMEOUT = 120_000;

interface Outcome {
  lastPrompt: string;
  texts: string[];
  ids: string[];
  workingMemory: string | null;
  totalAfterResave: number;
}

async function talk(shared: SharedStore, ...turns: string[]): Promise<Outcome> {
  const { stdout } = await run(process.execPath, [SCRIPT, JSON.stringify(shared.address), ...turns], {
    timeout: TIMEOUT,
  });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as Outcome;
}

describe.each(await sharedBackends())('a Mastra Agent with Memory on $name', (backend) => {
  let shared: SharedStore;
  beforeEach(async () => {
    shared = await backend.create();
  }, TIMEOUT);
  afterEach(() => shared.cleanup(), TIMEOUT);

  it('continues in a new process with the same history and working memory', {
    timeout: TIMEOUT,
  }, async () => {
    const first = await talk(shared, 'hello', 'my name is Ada|# User\n- name: Ada', 'I like tea');
    expect(first.texts).toEqual([
      'hello',
      'answer to hello',
      'my name is Ada',
      'answer to my name is Ada',
      'I like tea',
      'answer to I like tea',
    ]);
    expect(first.workingMemory).toContain('name: Ada');
    const second = await talk(shared, 'what is my name?');
    // The new process's model is shown every earlier turn and the working memory.
    for (const text of ['hello', 'answer to my name is Ada', 'I like tea', 'answer to I like tea'])
      expect(second.lastPrompt).toContain(text);
    expect(second.lastPrompt).toContain('name: Ada');
    expect(second.texts).toEqual([...first.texts, 'what is my name?', 'answer to what is my name?']);
    expect(second.ids.slice(0, first.ids.length)).toEqual(first.ids);
    expect(second.workingMemory).toBe(first.workingMemory);
    // Saved again by both processes, each message is stored once.
    expect(new Set(second.ids).size).toBe(second.ids.length);
    expect(second.totalAfterResave).toBeGreaterThanOrEqual(second.ids.length);
    const store = await openStoreAt(shared.address);
    try {
      const memory = (await new TidemarkMastraStore({ store }).getStore('memory'))!;
      const all = await memory.listMessages({ threadId: 'conversation', perPage: false });
      expect(all.total).toBe(second.totalAfterResave);
      expect(new Set(all.messages.map((m) => m.id)).size).toBe(all.total);
      for (const id of second.ids) expect(all.messages.some((m) => m.id === id)).toBe(true);
      // A resave of stored messages writes nothing to the thread's log.
      const logLength = async () => (await store.load(threadSessionId('conversation'))).events.length;
      const before = await logLength();
      await memory.saveMessages({ messages: all.messages });
      expect(await logLength()).toBe(before);
    } finally {
      await store.close();
    }
  });
});
