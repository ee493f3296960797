// Two processes over one shared store (one JSONL root, one SQLite file, one PostgreSQL schema),
// each with its own long-lived TidemarkSessionStore, as the workers of a deployment keep them:
// this process is host A, a child process is host B. The store is the truth and each adapter's
// cache only a hint, so whatever one host appends, deletes or rewrites, the other's next call
// behaves as in a process that has just started (contract §9, issue 22).
//
// JSONL: a session's writer lock is held by the process that wrote it last until that process
// goes idle; `handOver()` waits the second the contract gives for that before the other host writes.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionKey, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { isTidemarkError, type SessionStore } from '@tidemark/core';
import { type Host, openStoreAt, type SharedStore, sharedBackends, startHost } from '@tidemark/test-hosts';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TidemarkSessionStore } from '../src/index.js';
import { claudeTranscript, SESSION_ID } from './fixtures/transcript.js';

const HOST = new URL('./fixtures/claude-host.mjs', import.meta.url);
const TIMEOUT = 120_000;
const KEY: SessionKey = { projectKey: 'proj', sessionId: 'shared' };
const SUB: SessionKey = { ...KEY, subpath: 'subagents/agent-1' };
const line = (uuid: string, text: string): SessionStoreEntry => ({
  type: 'user',
  uuid,
  timestamp: '2026-12-01T10:00:00.000Z',
  message: { role: 'user', content: text },
});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const home = mkdtempSync(join(tmpdir(), 'tidemark-claude-hosts-'));
afterAll(() => rmSync(home, { recursive: true, force: true }));

describe.each(await sharedBackends())('two hosts over one $name store', (backend) => {
  let shared: SharedStore;
  let store: SessionStore;
  let a: TidemarkSessionStore;
  let b: Host;
  // JSONL hands a session's lock over once its writer has been idle for up to a second.
  const handOver = () => (backend.name === 'jsonl' ? sleep(1200) : Promise.resolve());

  beforeEach(async () => {
    shared = await backend.create();
    store = await openStoreAt(shared.address);
    a = new TidemarkSessionStore({ store });
    b = await startHost(shared.address, HOST);
  }, TIMEOUT);
  afterEach(async () => {
    await b.close();
    await store.close();
    await shared.cleanup();
  }, TIMEOUT);

  it('reads on B what A appended after B cached the session', { timeout: TIMEOUT }, async () => {
    await a.append(KEY, [line('u1', 'one')]);
    expect(await b.call('load', KEY)).toEqual([line('u1', 'one')]);
    await a.append(KEY, [line('u2', 'two')]);
    await a.append(SUB, [line('s1', 'sub')]);
    expect(await b.call('load', KEY)).toEqual([line('u1', 'one'), line('u2', 'two')]);
    expect(await b.call('listSubkeys', KEY)).toEqual(['subagents/agent-1']);
    await handOver();
    await b.call('append', KEY, [line('u3', 'three')]);
    expect(await a.load(KEY)).toEqual([line('u1', 'one'), line('u2', 'two'), line('u3', 'three')]);
  });

  it('stores an append on B after A deleted the session B had cached', { timeout: TIMEOUT }, async () => {
    await a.append(KEY, [line('u1', 'one')]);
    expect(await b.call('load', KEY)).toEqual([line('u1', 'one')]);
    await a.delete(KEY);
    await handOver();
    await b.call('append', KEY, [line('u1', 'one')]);
    expect(await b.call('load', KEY)).toEqual([line('u1', 'one')]);
    expect(await a.load(KEY)).toEqual([line('u1', 'one')]);
    expect((await a.listSessions('proj')).map((l) => l.sessionId)).toEqual(['shared']);
  });

  it('stores a subagent transcript on B again after A dropped it', { timeout: TIMEOUT }, async () => {
    await a.append(KEY, [line('u1', 'main')]);
    await a.append(SUB, [line('s1', 'sub')]);
    expect(await b.call('load', SUB)).toEqual([line('s1', 'sub')]);
    await a.delete(SUB);
    await handOver();
    await b.call('append', SUB, [line('s1', 'sub')]);
    expect(await b.call('load', SUB)).toEqual([line('s1', 'sub')]);
    expect(await a.load(SUB)).toEqual([line('s1', 'sub')]);
    expect(await a.listSubkeys(KEY)).toEqual(['subagents/agent-1']);
  });

  it('plans on the rewritten session, not the cached one, after A deleted and rewrote it to the same length', {
    timeout: TIMEOUT,
  }, async () => {
    await a.append(KEY, [line('u1', 'first version')]);
    expect(await b.call('load', KEY)).toEqual([line('u1', 'first version')]);
    await a.delete(KEY);
    await a.append(KEY, [line('u2', 'second version')]); // as many events as before
    await handOver();
    // u1 is in B's cache, not in the store: it must be stored; u3 lands after u2.
    await b.call('append', KEY, [line('u1', 'first version'), line('u3', 'more')]);
    const expected = [line('u2', 'second version'), line('u1', 'first version'), line('u3', 'more')];
    expect(await a.load(KEY)).toEqual(expected);
    expect(await b.call('load', KEY)).toEqual(expected);
    const summaries = await b.call<Array<{ data: { firstPrompt?: string } }>>('listSessionSummaries', 'proj');
    expect(summaries.map((s) => s.data.firstPrompt)).toEqual(['second version']);
  });

  it('imports a transcript again on B after A deleted it (importSessionToStore)', {
    timeout: TIMEOUT,
  }, async () => {
    const project = join(home, `${backend.name}-project`);
    const configDir = join(home, `${backend.name}-claude`);
    const projectDir = join(configDir, 'projects', project.replace(/[^A-Za-z0-9]/g, '-'));
    mkdirSync(project, { recursive: true });
    mkdirSync(join(projectDir, SESSION_ID, 'subagents'), { recursive: true });
    const { main, subagent } = claudeTranscript(project);
    const jsonl = (lines: object[]) => `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;
    writeFileSync(join(projectDir, `${SESSION_ID}.jsonl`), jsonl(main));
    writeFileSync(join(projectDir, SESSION_ID, 'subagents', 'agent-a1.jsonl'), jsonl(subagent));
    await b.call('importSession', SESSION_ID, project, configDir);
    const projectKey = (await store.list()).sessions[0]?.cwd ?? '';
    const key = { projectKey, sessionId: SESSION_ID };
    expect((await a.load(key))?.map((e) => e.uuid)).toEqual(main.map((e) => e.uuid));
    await handOver();
    await a.delete(key);
    expect(await a.load(key)).toBeNull();
    await handOver();
    await b.call('importSession', SESSION_ID, project, configDir);
    expect((await a.load(key))?.map((e) => e.uuid)).toEqual(main.map((e) => e.uuid));
    expect(await a.load({ ...key, subpath: 'subagents/agent-a1' })).toHaveLength(1);
  });

  it('lets racing first appends to new sessions both land, each entry once', {
    timeout: TIMEOUT,
  }, async () => {
    for (let i = 0; i < 10; i++) {
      const key = { projectKey: 'proj', sessionId: `new-${i}` };
      const outcomes = await Promise.allSettled([
        a.append(key, [line(`a${i}`, 'from A')]),
        b.call('append', key, [line(`b${i}`, 'from B')]),
      ]);
      const landed = expectRaceOutcomes(outcomes, backend.name);
      const stored = ((await a.load(key)) ?? []).map((e) => e.uuid).sort();
      expect(stored).toEqual(landed.map((from) => `${from}${i}`).sort());
    }
  });

  it('keeps every acknowledged entry of two racing writers once and in order, over many rounds', {
    timeout: TIMEOUT,
  }, async () => {
    const acked: Record<'a' | 'b', string[]> = { a: [], b: [] };
    for (let round = 0; round < 20; round++) {
      const outcomes = await Promise.allSettled([
        a.append(KEY, [line(`a${round}`, 'A')]),
        b.call('append', KEY, [line(`b${round}`, 'B')]),
      ]);
      for (const from of expectRaceOutcomes(outcomes, backend.name)) acked[from].push(`${from}${round}`);
    }
    const stored = ((await a.load(KEY)) ?? []).map((e) => e.uuid ?? '');
    expect(await b.call('load', KEY)).toEqual(await a.load(KEY));
    // Exactly the acknowledged entries, each once, in the order each host wrote them: a refused
    // append leaves nothing behind.
    expect(stored.filter((u) => u.startsWith('a'))).toEqual(acked.a);
    expect(stored.filter((u) => u.startsWith('b'))).toEqual(acked.b);
    if (backend.name !== 'jsonl') expect(acked.a.length + acked.b.length).toBe(40);
  });
});

/**
 * The hosts that landed a racing write. A loser may only be refused with a typed, retryable
 * CONFLICT (on JSONL, while the other process holds the session's lock).
 */
function expectRaceOutcomes(outcomes: PromiseSettledResult<unknown>[], backend: string): Array<'a' | 'b'> {
  const landed: Array<'a' | 'b'> = [];
  outcomes.forEach((outcome, i) => {
    if (outcome.status === 'fulfilled') landed.push(i === 0 ? 'a' : 'b');
    else {
      expect(isTidemarkError(outcome.reason, 'CONFLICT'), String(outcome.reason)).toBe(true);
      expect(backend).toBe('jsonl');
    }
  });
  expect(landed.length).toBeGreaterThan(0);
  return landed;
}
