// Bad input is rejected with INVALID naming what was wrong, before anything is stored, and a
// rejected transaction leaves its operation id free. Restates the input checks of the SDK's
// MemorySession tests; the store is the memory backend (storage plays no part in these checks).
import type { AgentInputItem, SessionHistoryTransactionArgs } from '@openai/agents-core';
import { isTidemarkError, type SessionStore } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import { beforeEach, describe, expect, it } from 'vitest';
import { TidemarkSession } from '../src/index.js';

const user = (text: string): AgentInputItem => ({ role: 'user', content: [{ type: 'input_text', text }] });
const withProviderData = (text: string, providerData: unknown): AgentInputItem =>
  ({ ...user(text), providerData }) as AgentInputItem;

async function invalid(promise: Promise<unknown>, message: RegExp): Promise<Error> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(isTidemarkError(error, 'INVALID'), `expected INVALID, got ${String(error)}`).toBe(true);
  expect((error as Error).message).toMatch(message);
  return error as Error;
}

let store: SessionStore;
let session: TidemarkSession;
beforeEach(async () => {
  store = await openMemoryStore();
  session = new TidemarkSession({ store, sessionId: 'checks' });
  await session.addItems([user('start')]);
});

const append = (operationId: string, items: unknown) =>
  session.applyHistoryTransaction({
    operationId,
    transaction: { type: 'append_items', items: items as AgentInputItem[] },
  });

describe('applyHistoryTransaction input', () => {
  it('rejects a blank operation id, an unknown type, a missing transaction and a non-item', async () => {
    await invalid(
      session.applyHistoryTransaction({
        operationId: '   ',
        transaction: { type: 'append_items', items: [] },
      }),
      /operationId must be a non-empty string/,
    );
    await invalid(
      session.applyHistoryTransaction({ operationId: 'op', transaction: { type: 'unknown' } as never }),
      /type must be append_items or replace_suffix/,
    );
    await invalid(
      session.applyHistoryTransaction({ operationId: 'op', transaction: null as never }),
      /transaction must be an object/,
    );
    await invalid(append('op', [42]), /transaction\.items\[0\]: an item must be an object/);
    await invalid(
      append('op', [{ role: 'nobody' }]),
      /transaction\.items\[0\]: not a valid session history item/,
    );
    await invalid(session.applyHistoryTransaction(null as never), /arguments must be an object/);
    expect(await session.getItems()).toEqual([user('start')]);
  });

  it('rejects values that cannot be stored exactly: Date, cycles, BigInt, sparse arrays, symbols, typed arrays', async () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    const cases: [unknown[], RegExp][] = [
      [
        [withProviderData('d', { timestamp: new Date(0) })],
        /items\[0\]\.providerData\.timestamp: Date is not supported/,
      ],
      [[withProviderData('c', cycle)], /providerData\.self: circular reference/],
      [[withProviderData('b', { value: 42n })], /providerData\.value: bigint is not supported/],
      [new Array(1), /transaction\.items: sparse array/],
      [
        [withProviderData('s', { secret: Symbol('api-key-secret') })],
        /providerData\.secret: symbol is not supported/,
      ],
      [[withProviderData('u', { values: new Uint16Array([300]) })], /Uint16Array is not supported/],
      [new Proxy([user('proxied')], {}), /Proxy is not supported/],
    ];
    for (const [items, message] of cases) {
      const error = await invalid(append('op-rejected', items), message);
      expect(error.message).not.toContain('api-key-secret');
    }
    // None of the rejections recorded the operation id.
    await append('op-rejected', [user('accepted')]);
    expect(await session.getItems()).toEqual([user('start'), user('accepted')]);
  });

  it('rejects non-enumerable and accessor properties', async () => {
    const hidden = user('hidden');
    Object.defineProperty(hidden, 'providerData', { enumerable: false, value: { hidden: true } });
    await invalid(append('op-hidden', [hidden]), /providerData: non-enumerable property/);
    const accessor = user('accessor');
    Object.defineProperty(accessor, 'providerData', { enumerable: true, get: () => ({}) });
    await invalid(append('op-hidden', [accessor]), /providerData: accessor property/);
    await append('op-hidden', [user('retry')]);
    expect(await session.getItems()).toEqual([user('start'), user('retry')]);
  });

  it('rejects unexpected transaction fields', async () => {
    await invalid(
      session.applyHistoryTransaction({
        operationId: 'op-fields',
        transaction: { type: 'append_items', items: [user('x')], metadata: { attempt: 1 } } as never,
      }),
      /append_items transaction must have exactly the fields type, items/,
    );
    await invalid(
      session.applyHistoryTransaction({
        operationId: 'op-fields',
        transaction: { type: 'replace_suffix', expectedSuffix: [], replacement: [], extra: 1 } as never,
      }),
      /replace_suffix transaction must have exactly the fields type, expectedSuffix, replacement/,
    );
    await append('op-fields', [user('retry')]);
    expect(await session.getItems()).toEqual([user('start'), user('retry')]);
  });

  it('reads the arguments once, and a throwing getter is INVALID without its message', async () => {
    let reads = 0;
    const args = { transaction: { type: 'append_items' as const, items: [user('once')] } };
    Object.defineProperty(args, 'operationId', {
      enumerable: true,
      get: () => {
        reads++;
        return reads === 1 ? 'op-once' : 'changed';
      },
    });
    await session.applyHistoryTransaction(args as SessionHistoryTransactionArgs);
    expect(reads).toBe(1);
    const throwing = {};
    Object.defineProperty(throwing, 'operationId', {
      get: () => {
        throw new Error('api-key-secret');
      },
    });
    const error = await invalid(
      session.applyHistoryTransaction(throwing as never),
      /arguments could not be read/,
    );
    expect(error.message).not.toContain('api-key-secret');
  });
});

describe('values kept exactly', () => {
  it('copies bytes, even shared ones, and a retry with equal bytes is the same transaction', async () => {
    const shared = new Uint8Array(new SharedArrayBuffer(2));
    shared.set([3, 7]);
    await append('op-bytes', [withProviderData('binary', { bytes: shared })]);
    shared[0] = 9;
    await append('op-bytes', [withProviderData('binary', { bytes: new Uint8Array([3, 7]) })]);
    const stored = (await session.getItems()).at(-1) as unknown as { providerData: { bytes: Uint8Array } };
    expect(stored.providerData.bytes).toBeInstanceOf(Uint8Array);
    expect([...stored.providerData.bytes]).toEqual([3, 7]);
    expect(await session.getItems()).toHaveLength(2);
  });

  it('treats a null-prototype object like a plain one for retries and suffixes', async () => {
    const item = withProviderData('canonical', Object.assign(Object.create(null), { source: 'provider' }));
    await append('op-canonical', [item]);
    const [, roundTripped] = await session.getItems();
    await append('op-canonical', [roundTripped]);
    await session.applyHistoryTransaction({
      operationId: 'op-canonical-replace',
      transaction: { type: 'replace_suffix', expectedSuffix: [item], replacement: [user('replaced')] },
    });
    expect(await session.getItems()).toEqual([user('start'), user('replaced')]);
  });

  it('keeps undefined fields, NaN, -0, a `$tidemark` key and `__proto__` as given', async () => {
    const data = JSON.parse('{"__proto__": {"polluted": true}}') as Record<string, unknown>;
    Object.assign(data, {
      missing: undefined,
      nan: Number.NaN,
      negZero: -0,
      $tidemark: 'user data',
      list: [undefined],
    });
    await session.addItems([withProviderData('odd', data)]);
    const reopened = new TidemarkSession({ store, sessionId: 'checks' });
    const stored = (await reopened.getItems()).at(-1) as { providerData: Record<string, unknown> };
    expect(Object.hasOwn(stored.providerData, 'missing')).toBe(true);
    expect(stored.providerData.nan).toBeNaN();
    expect(Object.is(stored.providerData.negZero, -0)).toBe(true);
    expect(stored.providerData.$tidemark).toBe('user data');
    expect(stored.providerData.list).toEqual([undefined]);
    expect(Object.hasOwn(stored.providerData, '__proto__')).toBe(true);
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
  });
});

describe('other operations', () => {
  it('rejects bad items, limits, mutations and session ids with INVALID', async () => {
    await invalid(session.addItems('nope' as never), /addItems: items: must be an array/);
    await invalid(session.addItems([7 as never]), /addItems: items\[0\]: an item must be an object/);
    await invalid(session.getItems(1.5), /limit must be an integer/);
    await invalid(session.applyHistoryMutations({} as never), /mutations must be an array/);
    await invalid(
      session.applyHistoryMutations({ mutations: [{ type: 'drop' }] as never }),
      /mutations\[0\] is not a replace_function_call/,
    );
    expect(() => new TidemarkSession({ store, sessionId: '' })).toThrow(
      /sessionId: must be a non-empty string/,
    );
    expect(() => new TidemarkSession({ store, sessionId: 'é'.repeat(30) })).toThrow(/more than the 128/);
    expect(() => new TidemarkSession({ store, sessionId: '\ud800' })).toThrow(/lone UTF-16 surrogate/);
    expect(await session.getItems()).toEqual([user('start')]);
  });
});
