import { TidemarkError } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import {
  type CheckContext,
  type ContractCheck,
  type ContractDriver,
  ContractViolation,
  contractCheck,
  contractChecks,
  expectCode,
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
