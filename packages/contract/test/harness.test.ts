import { type SessionStore, TidemarkError } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import {
  type CheckContext,
  type ContractCheck,
  type ContractDriver,
  ContractViolation,
  contractCheck,
  contractChecks,
  expectCode,
  modelBasedCheck,
  resolveOptions,
  runContractCheck,
} from '../src/index.js';
import { memoryDriver } from './fixtures/memory-driver.js';

describe('expectCode', () => {
  it('returns the error when the code (and message part) match', async () => {
    const error = await expectCode(
      Promise.reject(new TidemarkError('CONFLICT', 'seq 3 taken')),
      'CONFLICT',
      'x',
      'seq 3',
    );
    expect(error.code).toBe('CONFLICT');
  });

  it('fails when the action succeeds, names the wrong code, is untyped, or misses the message part', async () => {
    await expect(expectCode(Promise.resolve({ nextSeq: 1 }), 'CONFLICT', 'append')).rejects.toThrow(
      /expected CONFLICT, but it succeeded/,
    );
    await expect(
      expectCode(Promise.reject(new TidemarkError('IO', 'disk')), 'NOT_FOUND', 'load'),
    ).rejects.toThrow(/expected NOT_FOUND, got IO/);
    await expect(expectCode(Promise.reject(new Error('ENOENT')), 'NOT_FOUND', 'load')).rejects.toThrow(
      /untyped Error: ENOENT/,
    );
    await expect(
      expectCode(Promise.reject(new TidemarkError('INVALID', 'bad')), 'INVALID', 'append', 'events[2]'),
    ).rejects.toThrow(ContractViolation);
  });

  it('accepts a function, so a synchronous throw is caught as well', async () => {
    const error = await expectCode(
      () => {
        throw new TidemarkError('CLOSED', 'closed');
      },
      'CLOSED',
      'sync',
    );
    expect(error.code).toBe('CLOSED');
  });
});

describe('runContractCheck', () => {
  // Guards the next check: a failing check must not leave handles or locks behind.
  it('closes the stores a failing check left open and always calls cleanup', async () => {
    const base = memoryDriver();
    let cleanups = 0;
    let closes = 0;
    const driver: ContractDriver = {
      ...base,
      async open(options) {
        const store = await base.open(options);
        const close = store.close.bind(store);
        store.close = async () => {
          closes++;
          await close();
        };
        return store;
      },
      async cleanup() {
        cleanups++;
      },
    };
    const failing: ContractCheck = {
      group: 'test',
      name: 'opens two stores then fails',
      async run(ctx: CheckContext) {
        await ctx.open();
        await ctx.open();
        throw new ContractViolation('deliberate');
      },
    };
    await expect(runContractCheck(failing, driver)).rejects.toThrow('deliberate');
    expect(closes).toBe(2);
    expect(cleanups).toBe(1);
  });

  // Guards close(): a backend whose close fails with IO must not pass because the kit swallowed it.
  it('reports a close() that fails with anything but CLOSED', async () => {
    const base = memoryDriver();
    const driver: ContractDriver = {
      ...base,
      async open(options) {
        const store = await base.open(options);
        store.close = async () => {
          throw new TidemarkError('IO', 'EIO on close');
        };
        return store;
      },
    };
    const check = {
      group: 'test',
      name: 'opens a store',
      run: async (ctx: { open: () => Promise<unknown> }) => void (await ctx.open()),
    };
    await expect(runContractCheck(check, driver)).rejects.toThrow(/close\(\) failed/);
  });
});

/**
 * `inner` as a store written before capabilities existed: no `capabilities`, and append ignores its
 * options (so a test that passed it an after would see stale writes land).
 */
function withoutCapabilities(inner: SessionStore): SessionStore {
  return new Proxy(inner, {
    get(target, key) {
      if (key === 'capabilities') return undefined;
      if (key === 'append')
        return (id: string, events: Parameters<SessionStore['append']>[1]) => target.append(id, events);
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

describe('checks of a capability the store does not claim', () => {
  const afterChecks = contractChecks.filter((check) => /append after|with after/.test(check.name));

  it('there are checks of append after, in the append and two instances suites', () => {
    expect(new Set(afterChecks.map((check) => check.group))).toEqual(new Set(['append', 'two instances']));
    expect(afterChecks.length).toBeGreaterThanOrEqual(5);
  });

  // Guards third-party stores written before capabilities: their contract run must not fail
  // on an option they were never asked to check, and must say why a check did not run.
  it('resolve with the reason instead of failing, and still clean up', async () => {
    const base = memoryDriver('no capabilities', withoutCapabilities);
    let cleanups = 0;
    const driver: ContractDriver = {
      ...base,
      async cleanup() {
        cleanups++;
      },
    };
    for (const check of afterChecks) {
      expect(await runContractCheck(check, driver), check.name).toMatch(
        /no capabilities do(es)? not check append\(…, \{ after \}\).*capabilities\.appendAfter/,
      );
    }
    expect(cleanups).toBe(afterChecks.length);
  });

  it('a correct store with the capability runs them: they resolve with nothing', async () => {
    for (const check of afterChecks) expect(await runContractCheck(check, memoryDriver())).toBeUndefined();
  });

  it('the model-based test passes no after to a store without the capability', async () => {
    // This store ignores after: had the model passed a stale one, the answers would differ.
    const driver = memoryDriver('no capabilities', withoutCapabilities);
    expect(await runContractCheck(modelBasedCheck(60), driver)).toBeUndefined();
  });
});

describe('the check list', () => {
  it('has unique names, so that contractCheck(name) is unambiguous', () => {
    const names = contractChecks.map((check) => check.name);
    expect(new Set(names).size).toBe(names.length);
    expect(contractCheck(names[0]!)).toBe(contractChecks[0]);
    expect(() => contractCheck('no such check')).toThrow(/no contract check named/);
  });

  it('fills option defaults', () => {
    expect(resolveOptions()).toEqual({ modelRuns: 50, timeout: 30_000, seed: undefined });
    expect(resolveOptions({ modelRuns: 5, seed: 7 })).toEqual({ modelRuns: 5, timeout: 30_000, seed: 7 });
  });
});
