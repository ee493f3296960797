import { openMemoryStore } from '@tidemark/memory';
import { Keyring } from '../src/index.js';

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
