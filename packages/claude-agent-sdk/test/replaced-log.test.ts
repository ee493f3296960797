// A write planned on a log that another host deletes and rewrites to the same length before the
// write lands: the append's seq check passes, so only the link of the batch to the closing event
// before it tells. Deterministic: a store wrapper lets host A delete and rewrite the session right
// after host B's read, before B appends.
import type { SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import type { SessionStore } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import { expect, it } from 'vitest';
import { TidemarkSessionStore } from '../src/index.js';

const KEY = { projectKey: 'proj', sessionId: 'shared' };
const line = (uuid: string, text: string): SessionStoreEntry => ({
  type: 'user',
  uuid,
  message: { role: 'user', content: text },
});

/** `inner` as host B sees it: `meanwhile` runs once, after B's next read or load. */
function withInterleaving(inner: SessionStore): {
  store: SessionStore;
  arm(meanwhile: () => Promise<void>): void;
} {
  let pending: (() => Promise<void>) | undefined;
  const runPending = async () => {
    const run = pending;
    pending = undefined;
    await run?.();
  };
  const store: SessionStore = {
    create: (init) => inner.create(init),
    append: (id, events) => inner.append(id, events),
    load: async (id, options) => {
      try {
        return await inner.load(id, options);
      } finally {
        await runPending();
      }
    },
    read: (id, range) =>
      (async function* () {
        try {
          yield* inner.read(id, range);
        } finally {
          await runPending();
        }
      })(),
    list: (query) => inner.list(query),
    has: (id) => inner.has(id),
    update: (id, patch) => inner.update(id, patch),
    delete: (id, options) => inner.delete(id, options),
    close: () => inner.close(),
  };
  return { store, arm: (meanwhile) => (pending = meanwhile) };
}

it('stores what the rewritten log lacks, after it, and every reader skips the stray batch', async () => {
  const inner = await openMemoryStore();
  const a = new TidemarkSessionStore({ store: inner });
  const b = withInterleaving(inner);
  const storeB = new TidemarkSessionStore({ store: b.store });
  await a.append(KEY, [line('u1', 'first version')]);
  expect(await storeB.load(KEY)).toEqual([line('u1', 'first version')]);
  b.arm(async () => {
    await a.delete(KEY);
    await a.append(KEY, [line('u2', 'second version')]); // as many events as before
  });
  // Planned on [u1]: only u3 is new there. It lands on [u2], is found out, and planned again.
  await storeB.append(KEY, [line('u1', 'first version'), line('u3', 'more')]);
  const expected = [line('u2', 'second version'), line('u1', 'first version'), line('u3', 'more')];
  expect(await a.load(KEY)).toEqual(expected);
  expect(await storeB.load(KEY)).toEqual(expected);
  expect(await new TidemarkSessionStore({ store: inner }).load(KEY)).toEqual(expected);
  const [summary] = await new TidemarkSessionStore({ store: inner }).listSessionSummaries('proj');
  expect(summary?.data).toMatchObject({ firstPrompt: 'second version' });
  const events = (await inner.load((await inner.list()).sessions[0]!.id)).events;
  expect(events.filter((e) => e.type === 'claude/append')).toHaveLength(3); // one of them stray
});
