// getItems(limit) reads the end of the log only; whatever mix of adds, pops, suffix replacements
// and rewrites the history went through, it must answer exactly what the whole fold answers, on a
// new object (a cold process) and for every limit. Logs written before closing events held counts
// are still read right (by a fold).
import type { AgentInputItem } from '@openai/agents-core';
import type { JsonValue } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import { expect, it } from 'vitest';
import { TidemarkSession } from '../src/index.js';

const user = (text: string): AgentInputItem => ({ role: 'user', content: [{ type: 'input_text', text }] });

/** A small deterministic random sequence. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

it('answers every limit as the whole fold does, after random adds, pops, replacements and rewrites', async () => {
  const store = await openMemoryStore();
  const writer = new TidemarkSession({ store, sessionId: 'mixed' });
  const next = random(7);
  for (let step = 0; step < 300; step++) {
    const roll = next();
    const items = await writer.getItems();
    if (roll < 0.5) {
      await writer.addItems(
        Array.from({ length: 1 + Math.floor(next() * 4) }, (_, i) => user(`s${step}-${i}`)),
      );
    } else if (roll < 0.75) {
      await writer.popItem();
    } else if (roll < 0.9) {
      const cut = Math.min(items.length, Math.floor(next() * 5));
      await writer.applyHistoryTransaction({
        operationId: `op-${step}`,
        transaction: {
          type: 'replace_suffix',
          expectedSuffix: items.slice(items.length - cut),
          replacement: Array.from({ length: Math.floor(next() * 3) }, (_, i) => user(`r${step}-${i}`)),
        },
      });
    } else {
      await writer.applyHistoryTransaction({
        operationId: `op-${step}`,
        transaction: { type: 'append_items', items: [user(`t${step}`)] },
      });
    }
    if (step % 25 === 24) {
      const all = await writer.getItems();
      const cold = new TidemarkSession({ store, sessionId: 'mixed' });
      for (const limit of [1, 2, 3, 5, 8, 13, 40, all.length, all.length + 3]) {
        expect(await cold.getItems(limit), `step ${step}, limit ${limit}`).toEqual(all.slice(-limit));
      }
      expect(await cold.popItem()).toEqual(all.at(-1));
      await cold.addItems([all.at(-1)!]);
    }
  }
});

it('reads a log written before closing events held counts', async () => {
  const store = await openMemoryStore();
  await store.create({ id: 'old' });
  const time = new Date().toISOString();
  const item = (seq: number, text: string) => ({
    seq,
    type: 'openai/item',
    time,
    data: user(text) as JsonValue,
  });
  await store.append('old', [
    item(0, 'a'),
    item(1, 'b'),
    { seq: 2, type: 'turn/end', time, data: { op: 'add' } },
  ]);
  await store.append('old', [
    { seq: 3, type: 'openai/truncate', time, data: { count: 1 } },
    { seq: 4, type: 'turn/end', time, data: { op: 'pop' } },
  ]);
  const session = new TidemarkSession({ store, sessionId: 'old' });
  expect(await session.getItems(5)).toEqual([user('a')]);
  await session.addItems([user('c')]);
  expect(await session.getItems(1)).toEqual([user('c')]);
  expect(await session.popItem()).toEqual(user('c'));
  expect(await new TidemarkSession({ store, sessionId: 'old' }).getItems(2)).toEqual([user('a')]);
});
