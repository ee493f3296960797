// The domains tidemark does not hold: composed from another Mastra store as Mastra's composite
// storage does, or refused with a typed error naming the domain, never answered with `undefined`
// (which Mastra reads as "not configured" and skips without a word).
import { InMemoryStore } from '@mastra/core/storage';
import { isTidemarkError } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import { describe, expect, it } from 'vitest';
import { TidemarkMastraStore, UnsupportedDomainError } from '../src/index.js';

describe('domains', () => {
  it('answers memory and workflows from tidemark', async () => {
    const storage = new TidemarkMastraStore({ store: await openMemoryStore() });
    expect(await storage.getStore('memory')).toBe(storage.memory);
    expect(await storage.getStore('workflows')).toBe(storage.workflows);
  });

  it.each(['scores', 'observability', 'agents', 'threadState'] as const)(
    'refuses %s when no store supplies it, naming the domain',
    async (domain) => {
      const storage = new TidemarkMastraStore({ store: await openMemoryStore() });
      const error = await storage.getStore(domain).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(UnsupportedDomainError);
      expect(isTidemarkError(error, 'INVALID')).toBe(true);
      expect((error as UnsupportedDomainError).domain).toBe(domain);
      expect(String((error as Error).message)).toContain(domain);
    },
  );

  it('takes a named domain from another Mastra store, and the rest from a default store', async () => {
    const other = new InMemoryStore();
    const scores = (await other.getStore('scores'))!;
    const named = new TidemarkMastraStore({ store: await openMemoryStore(), domains: { scores } });
    expect(await named.getStore('scores')).toBe(scores);
    await expect(named.getStore('observability')).rejects.toBeInstanceOf(UnsupportedDomainError);
    const withDefault = new TidemarkMastraStore({ store: await openMemoryStore(), default: other });
    expect(await withDefault.getStore('observability')).toBe(await other.getStore('observability'));
    expect(await withDefault.getStore('memory')).toBe(withDefault.memory); // tidemark still holds memory
  });

  it('refuses to let another store supply memory or workflows, and a name that is no domain', async () => {
    const store = await openMemoryStore();
    const other = new InMemoryStore();
    expect(
      () => new TidemarkMastraStore({ store, domains: { memory: other.stores.memory } as never }),
    ).toThrow(/memory/);
    expect(() => new TidemarkMastraStore({ store, domains: { nonsense: {} } as never })).toThrow(/nonsense/);
    expect(() => new TidemarkMastraStore({} as never)).toThrow(/store is required/);
  });
});
