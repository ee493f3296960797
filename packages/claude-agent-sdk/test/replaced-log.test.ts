// A write planned on a log that another host deletes and rewrites to the same length before the
// write lands: the append's seq check passes, so only the link of the batch to the closing event
// before it tells. Deterministic: a store wrapper lets host A delete and rewrite the session right
// after host B's read, before B appends.
import type { SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { openMemoryStore } from '@tidemark/memory';
import { withInterleaving } from '@tidemark/test-hosts';
import { expect, it } from 'vitest';
import { TidemarkSessionStore } from '../src/index.js';

const KEY = { projectKey: 'proj', sessionId: 'shared' };
const line = (uuid: string, text: string): SessionStoreEntry => ({
  type: 'user',
  uuid,
  message: { role: 'user', content: text },
});

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

it('on the append-after path, a batch planned on the old log is refused by the append and planned again: no stray batch', async () => {
  const inner = await openMemoryStore();
  const a = new TidemarkSessionStore({ store: inner });
  const b = withInterleaving(inner, { passAfter: true });
  const storeB = new TidemarkSessionStore({ store: b.store });
  await a.append(KEY, [line('u1', 'first version')]);
  expect(await storeB.load(KEY)).toEqual([line('u1', 'first version')]);
  // A warm append on this path reads nothing first: the rewrite runs right before it.
  b.arm(async () => {
    await a.delete(KEY);
    await a.append(KEY, [line('u2', 'second version')]);
  });
  await storeB.append(KEY, [line('u1', 'first version'), line('u3', 'more')]);
  const expected = [line('u2', 'second version'), line('u1', 'first version'), line('u3', 'more')];
  expect(await a.load(KEY)).toEqual(expected);
  expect(await storeB.load(KEY)).toEqual(expected);
  const events = (await inner.load((await inner.list()).sessions[0]!.id)).events;
  expect(events.filter((e) => e.type === 'claude/append')).toHaveLength(2); // u2's, then B's
});
