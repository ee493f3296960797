import { type SessionStore, TidemarkError } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import { expect } from 'vitest';
import { Keyring, type Redactor } from '../src/index.js';

/** Two fixed keys: `k2` current, `k1` older. */
export const K1 = Buffer.alloc(32, 1).toString('base64');
export const K2 = Buffer.alloc(32, 2).toString('base64');
export const keyring = Keyring.from({ current: 'k2', keys: { k2: K2, k1: K1 } });
export const oldKeyring = Keyring.from({ current: 'k1', keys: { k1: K1 } });

export const T = '2026-12-02T12:00:00.000Z';

/** An event of `type` with `data` at `seq`. */
export function ev(seq: number, data: unknown = { n: seq }, type = 'tool/call') {
  return { seq, type, time: T, data } as { seq: number; type: string; time: string; data: never };
}

/** A fresh memory store (the inner store of most tests). */
export function memory() {
  return openMemoryStore();
}

/** The TidemarkError `promise` rejects with (fails the test when it resolves or throws anything else). */
export async function rejection(promise: Promise<unknown>): Promise<TidemarkError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(TidemarkError);
    return error as TidemarkError;
  }
  throw new Error('expected a rejection');
}

/** A tiny redactor, so that the wiring is tested apart from the patterns (tested in test/redact). */
export const tiny: Redactor = {
  redactText(text) {
    const parts = text.split('SECRET');
    const n = parts.length - 1;
    return {
      text: parts.join('[redacted:tiny]'),
      counts: (n > 0 ? { tiny: n } : {}) as Record<string, number>,
    };
  },
};

/** The inner store, with its `read` calls counted (what a fallback or a mid-batch read costs). */
export function counted(inner: SessionStore): { store: SessionStore; reads: () => number } {
  let reads = 0;
  const store = new Proxy(inner, {
    get(target, key) {
      const value = Reflect.get(target, key, target) as unknown;
      if (typeof value !== 'function') return value;
      if (key === 'read') {
        return (...args: unknown[]) => {
          reads++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return (value as (...a: unknown[]) => unknown).bind(target);
    },
  });
  return { store, reads: () => reads };
}
