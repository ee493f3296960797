// Every adapter operation meets a failing store at each of its storage steps, the fault lasting
// one step or every step from there on. A long-lived adapter object (cache warm) runs the
// operation. Then, with the fault lifted: the call either succeeded with the right answer or
// rejected with a TidemarkError (never a false null, an empty or a short list); the session is
// as before the call or as after it, never in between; the long-lived object and a new one agree
// (the fault left nothing wrong in the cache); and the store accepts the next append.
import type { SessionKey, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { isTidemarkError } from '@tidemark/core';
import { MemoryVolume, openMemoryStore } from '@tidemark/memory';
import { describe, expect, it } from 'vitest';
import { TidemarkSessionStore } from '../src/index.js';

const KEY: SessionKey = { projectKey: 'proj', sessionId: 'faulty' };
const SUB: SessionKey = { ...KEY, subpath: 'subagents/a' };
const OTHER: SessionKey = { projectKey: 'proj', sessionId: 'other' };
const line = (uuid: string, text: string): SessionStoreEntry => ({
  type: 'user',
  uuid,
  message: { role: 'user', content: text },
});

type Operation = (s: TidemarkSessionStore) => Promise<unknown>;
const OPERATIONS: Record<string, Operation> = {
  'append to the main transcript': (s) => s.append(KEY, [line('u3', 'three')]),
  'append an entry already stored': (s) => s.append(KEY, [line('u1', 'one')]),
  'append to a subagent transcript': (s) => s.append(SUB, [line('s2', 'sub two')]),
  'first append of a new session': (s) =>
    s.append({ projectKey: 'proj', sessionId: 'new' }, [line('n1', 'new')]),
  load: (s) => s.load(KEY),
  'load a subagent transcript': (s) => s.load(SUB),
  'delete a session': (s) => s.delete(KEY),
  'delete a subagent transcript': (s) => s.delete(SUB),
  listSessions: async (s) => (await s.listSessions('proj')).map((l) => l.sessionId).sort(),
  listSessionSummaries: async (s) => (await s.listSessionSummaries('proj')).map((l) => l.sessionId).sort(),
  listSubkeys: (s) => s.listSubkeys(KEY),
};

/** What a new adapter object sees of the store. */
async function observe(s: TidemarkSessionStore): Promise<unknown> {
  return {
    main: await s.load(KEY),
    sub: await s.load(SUB),
    subkeys: await s.listSubkeys(KEY),
    other: await s.load(OTHER),
    listed: (await s.listSessionSummaries('proj'))
      .map((l) => [l.sessionId, l.data.firstPrompt ?? null])
      .sort(),
  };
}

/** A store over `volume` whose storage steps fail as `plan` says (counting from 1). */
async function faultyStore(volume: MemoryVolume, plan: { at: number; lasting: boolean } | undefined) {
  let steps = 0;
  let armed = false;
  const store = await openMemoryStore({
    volume,
    beforeStorageStep: () => {
      if (!armed) return;
      steps++;
      if (plan !== undefined && (steps === plan.at || (plan.lasting && steps > plan.at)))
        throw Object.assign(new Error('injected fault'), { code: 'EIO' });
    },
  });
  return { store, arm: () => (armed = true), disarm: () => (armed = false), steps: () => steps };
}

/** A fresh volume holding two sessions, one with a subagent transcript. */
async function seeded(): Promise<MemoryVolume> {
  const volume = new MemoryVolume();
  const s = new TidemarkSessionStore({ store: await openMemoryStore({ volume }) });
  await s.append(KEY, [line('u1', 'one'), line('u2', 'two')]);
  await s.append(SUB, [line('s1', 'sub one')]);
  await s.append(OTHER, [line('o1', 'other')]);
  return volume;
}

async function run(name: string, plan: { at: number; lasting: boolean } | undefined) {
  const volume = await seeded();
  const faulty = await faultyStore(volume, plan);
  const s = new TidemarkSessionStore({ store: faulty.store });
  await s.load(KEY); // a long-lived object: its cache is warm
  await s.load(SUB);
  faulty.arm();
  const outcome = await OPERATIONS[name]!(s).then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  faulty.disarm();
  return { volume, s, outcome, steps: faulty.steps() };
}

describe.each(Object.keys(OPERATIONS))('%s under a storage fault', (name) => {
  it('rejects with a typed error or succeeds, and applies the whole operation or none of it', async () => {
    const before = await observe(
      new TidemarkSessionStore({ store: await openMemoryStore({ volume: await seeded() }) }),
    );
    const clean = await run(name, undefined);
    expect(clean.outcome.ok).toBe(true);
    const after = await observe(
      new TidemarkSessionStore({ store: await openMemoryStore({ volume: clean.volume }) }),
    );
    let failures = 0;
    for (let at = 1; at <= clean.steps; at++) {
      for (const lasting of [false, true]) {
        const { volume, s, outcome } = await run(name, { at, lasting });
        const where = `step ${at}${lasting ? ' and on' : ''}`;
        if (outcome.ok) expect(outcome.value, where).toEqual(clean.outcome.ok && clean.outcome.value);
        else {
          failures++;
          expect(isTidemarkError(outcome.error, 'IO'), `${where}: ${String(outcome.error)}`).toBe(true);
        }
        const fresh = new TidemarkSessionStore({ store: await openMemoryStore({ volume }) });
        const seen = await observe(fresh);
        if (outcome.ok) expect(seen, where).toEqual(after);
        else expect([before, after], where).toContainEqual(seen);
        expect(await observe(s), `${where}: the long-lived object`).toEqual(seen);
        await s.append(KEY, [line('probe', 'still writable')]);
        expect((await fresh.load(KEY))?.at(-1), where).toEqual(line('probe', 'still writable'));
      }
    }
    expect(failures).toBeGreaterThan(0); // every operation reached storage and met the fault
  });
});
