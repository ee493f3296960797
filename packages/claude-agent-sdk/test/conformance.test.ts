// The 13 behaviours of the Claude Agent SDK's session-store conformance suite
// (examples/session-stores/shared/conformance.ts in claude-agent-sdk-typescript), restated in our
// words, on every backend; plus uuid idempotency and summaries, which the SDK asks of stores.
import type { SessionKey, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import type { SessionStore } from '@tidemark/core';
import { testBackends } from '@tidemark/test-hosts';
import { afterAll, describe, expect, it } from 'vitest';
import { TidemarkSessionStore } from '../src/index.js';

const KEY: SessionKey = { projectKey: 'proj', sessionId: 'sess' };
const sub = (subpath: string): SessionKey => ({ ...KEY, subpath });
const entry = (type: string, extra: Record<string, unknown> = {}): SessionStoreEntry => ({ type, ...extra });

for (const backend of await testBackends('claude')) {
  describe(`TidemarkSessionStore on ${backend.name}`, () => {
    const stores: SessionStore[] = [];
    afterAll(async () => {
      for (const store of stores) await store.close();
      await backend.cleanup();
    });
    async function fresh(): Promise<TidemarkSessionStore> {
      const store = await backend.open();
      stores.push(store);
      return new TidemarkSessionStore({ store });
    }

    it('returns appended entries as they were, in order', async () => {
      const s = await fresh();
      const entries = [entry('a', { n: 1, nested: { x: [1, 2] } }), entry('b', { n: 2 })];
      await s.append(KEY, entries);
      expect(await s.load(KEY)).toEqual(entries);
    });

    it('loads a key that was never written as null, main or subpath', async () => {
      const s = await fresh();
      expect(await s.load(KEY)).toBeNull();
      expect(await s.load(sub('subagents/a'))).toBeNull();
    });

    it('keeps the order of several appends', async () => {
      const s = await fresh();
      await s.append(KEY, [entry('a')]);
      await s.append(KEY, [entry('b'), entry('c')]);
      await s.append(KEY, [entry('d')]);
      expect(await s.load(KEY)).toEqual([entry('a'), entry('b'), entry('c'), entry('d')]);
    });

    it('treats an empty append as nothing: a new key stays null', async () => {
      const s = await fresh();
      await s.append(KEY, []);
      expect(await s.load(KEY)).toBeNull();
      await s.append(KEY, [entry('a')]);
      await s.append(KEY, []);
      expect(await s.load(KEY)).toEqual([entry('a')]);
    });

    it('keeps a subpath apart from the main transcript', async () => {
      const s = await fresh();
      await s.append(KEY, [entry('main')]);
      await s.append(sub('subagents/x'), [entry('sub')]);
      expect(await s.load(KEY)).toEqual([entry('main')]);
      expect(await s.load(sub('subagents/x'))).toEqual([entry('sub')]);
    });

    it('keeps projects apart for the same session id', async () => {
      const s = await fresh();
      await s.append({ projectKey: 'A', sessionId: 's' }, [entry('a')]);
      await s.append({ projectKey: 'B', sessionId: 's' }, [entry('b')]);
      expect(await s.load({ projectKey: 'A', sessionId: 's' })).toEqual([entry('a')]);
      expect(await s.load({ projectKey: 'B', sessionId: 's' })).toEqual([entry('b')]);
    });

    it("lists a project's sessions with millisecond mtimes, and nothing for an unknown project", async () => {
      const s = await fresh();
      await s.append({ projectKey: 'P', sessionId: 's1' }, [entry('a')]);
      await s.append({ projectKey: 'P', sessionId: 's2' }, [entry('b')]);
      await s.append({ projectKey: 'Q', sessionId: 's3' }, [entry('c')]);
      const listed = await s.listSessions('P');
      expect(listed.map((l) => l.sessionId).sort()).toEqual(['s1', 's2']);
      expect(listed.every((l) => Number.isInteger(l.mtime) && l.mtime > 1e12)).toBe(true);
      expect(await s.listSessions('never-seen')).toEqual([]);
    });

    it('does not list a session that only has a subagent transcript', async () => {
      const s = await fresh();
      await s.append({ projectKey: 'P', sessionId: 's1', subpath: 'subagents/x' }, [entry('sub')]);
      expect((await s.listSessions('P')).map((l) => l.sessionId)).not.toContain('s1');
    });

    it('deletes a main transcript so that it loads as null; deleting the unknown is fine', async () => {
      const s = await fresh();
      await s.append(KEY, [entry('a')]);
      await s.delete(KEY);
      expect(await s.load(KEY)).toBeNull();
      await s.delete({ projectKey: 'x', sessionId: 'never' });
    });

    it('deletes the subagent transcripts with the main one, and nothing of other sessions', async () => {
      const s = await fresh();
      await s.append(KEY, [entry('main')]);
      await s.append(sub('subagents/a'), [entry('sa')]);
      await s.append(sub('subagents/b'), [entry('sb')]);
      await s.append({ projectKey: 'proj', sessionId: 'other' }, [entry('o')]);
      await s.append({ projectKey: 'proj2', sessionId: 'sess' }, [entry('p2')]);
      await s.delete(KEY);
      expect(await s.load(KEY)).toBeNull();
      expect(await s.load(sub('subagents/a'))).toBeNull();
      expect(await s.load(sub('subagents/b'))).toBeNull();
      expect(await s.load({ projectKey: 'proj', sessionId: 'other' })).toEqual([entry('o')]);
      expect(await s.load({ projectKey: 'proj2', sessionId: 'sess' })).toEqual([entry('p2')]);
      expect(await s.listSubkeys(KEY)).toEqual([]);
    });

    it('deletes one subagent transcript alone', async () => {
      const s = await fresh();
      await s.append(KEY, [entry('main')]);
      await s.append(sub('subagents/a'), [entry('sa')]);
      await s.append(sub('subagents/b'), [entry('sb')]);
      await s.delete(sub('subagents/a'));
      expect(await s.load(KEY)).toEqual([entry('main')]);
      expect(await s.load(sub('subagents/a'))).toBeNull();
      expect(await s.load(sub('subagents/b'))).toEqual([entry('sb')]);
    });

    it("lists a session's subpaths and no other session's", async () => {
      const s = await fresh();
      await s.append(sub('subagents/a'), [entry('sa')]);
      await s.append(sub('subagents/b'), [entry('sb')]);
      await s.append({ projectKey: 'proj', sessionId: 'other', subpath: 'subagents/c' }, [entry('sc')]);
      expect((await s.listSubkeys(KEY)).sort()).toEqual(['subagents/a', 'subagents/b']);
    });

    it('lists no subkeys for a main transcript alone or an unknown session', async () => {
      const s = await fresh();
      await s.append(KEY, [entry('main')]);
      expect(await s.listSubkeys(KEY)).toEqual([]);
      expect(await s.listSubkeys({ projectKey: 'x', sessionId: 'never' })).toEqual([]);
    });

    it('skips entries whose uuid the transcript already holds, and appends uuid-less entries again', async () => {
      const s = await fresh();
      const batch = [
        entry('user', { uuid: 'u1' }),
        entry('assistant', { uuid: 'u2' }),
        entry('tag', { tag: 'x' }),
      ];
      await s.append(KEY, batch);
      await s.append(KEY, batch); // an SDK retry of a batch that had landed
      await s.append(sub('subagents/a'), [entry('user', { uuid: 'u1' })]); // uuids are per transcript
      expect(await s.load(KEY)).toEqual([...batch, entry('tag', { tag: 'x' })]);
      expect(await s.load(sub('subagents/a'))).toEqual([entry('user', { uuid: 'u1' })]);
    });

    it('keeps summaries folded by the SDK, listed per project, after a reopen of the adapter', async () => {
      const store = await backend.open();
      stores.push(store);
      const key = { projectKey: 'P', sessionId: 'summarized' };
      const s = new TidemarkSessionStore({ store });
      await s.append(key, [
        entry('user', {
          uuid: 'u1',
          timestamp: '2026-11-30T10:00:00.000Z',
          cwd: '/work',
          message: { role: 'user', content: 'fix the build' },
        }),
      ]);
      await s.append(key, [entry('custom-title', { customTitle: 'Build fix' })]);
      const summaries = await new TidemarkSessionStore({ store }).listSessionSummaries('P');
      expect(summaries).toHaveLength(1);
      expect(summaries[0]?.sessionId).toBe('summarized');
      expect(summaries[0]?.data).toMatchObject({ cwd: '/work', customTitle: 'Build fix' });
      const [listed] = await s.listSessions('P');
      expect(listed?.mtime).toBe(summaries[0]?.mtime);
    });
  });
}
