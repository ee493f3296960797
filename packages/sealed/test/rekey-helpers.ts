// Fixtures of the rekey tests: keyrings, plaintext sessions of varied shapes written sealed into a
// raw store, and the check that a session is whole in one store under exactly one key.
import type { JsonValue, SessionEvent, SessionStore } from '@tidemark/core';
import { expect } from 'vitest';
import { Keyring } from '../src/keyring.js';
import {
  imageDigest,
  keyUse,
  loadStored,
  materialize,
  openImage,
  type SessionImage,
  sealImage,
} from '../src/rekey/image.js';

/** Fixed keys, so that failures replay. */
export const KEY1 = Buffer.alloc(32, 1).toString('base64');
export const KEY2 = Buffer.alloc(32, 2).toString('base64');
export const KEY3 = Buffer.alloc(32, 3).toString('base64');

export const ring1 = Keyring.parse(`k1:${KEY1}`);
/** k2 current, k1 to open. */
export const ring21 = Keyring.parse(`k2:${KEY2},k1:${KEY1}`);
export const ring2 = Keyring.parse(`k2:${KEY2}`);

const T0 = Date.parse('2026-01-01T00:00:00.000Z');

/** Session `i` in plaintext: sizes from 1 to ~40 events, some with a large payload, with cwd, tags, title, attrs. */
export function plainSession(i: number, id = `s-${String(i).padStart(3, '0')}`): SessionImage {
  const n = 1 + ((i * 7) % 40);
  const events: SessionEvent[] = [];
  for (let seq = 0; seq < n; seq++) {
    const type = seq === n - 1 ? 'turn/end' : seq % 3 === 0 ? 'user/message' : 'tool/result';
    const data: JsonValue =
      seq % 11 === 5
        ? { output: 'x'.repeat(20_000 + i * 100), n: seq }
        : { text: `session ${i} event ${seq}`, seq };
    events.push({ seq, type, time: new Date(T0 + i * 1000 + seq).toISOString(), data });
  }
  return {
    id,
    createdAt: new Date(T0 + i * 1000).toISOString(),
    ...(i % 2 === 0 && { cwd: `/work/p${i % 3}` }),
    ...(i % 3 === 0 && { tags: ['t', `n${i}`] }),
    ...(i % 4 !== 1 && { title: `title of ${i}` }),
    firstPrompt: `session ${i} event 0`,
    ...(i % 5 === 0 && { attrs: { model: 'm', i } }),
    events,
  };
}

/** Writes `plain` sealed under the keyring's current key into the raw store. */
export async function writeSealed(store: SessionStore, keyring: Keyring, plain: SessionImage): Promise<void> {
  await materialize(store, sealImage(keyring, plain));
}

/**
 * Where session `plain.id` is and under which key: every copy (main, staging) must hold all of
 * it, under exactly one key of `keyring`, equal to `plain`. Returns the copies found and their key.
 */
export async function expectWhole(
  plain: SessionImage,
  stores: { main: SessionStore; staging: SessionStore },
  keyring: Keyring,
): Promise<{ main?: string; staging?: string }> {
  const found: { main?: string; staging?: string } = {};
  for (const where of ['main', 'staging'] as const) {
    const stored = await loadStored(stores[where], plain.id);
    if (stored === undefined) continue;
    const use = keyUse(stored);
    expect(use.plaintext, `${plain.id} in ${where}: no plaintext value`).toBe(false);
    expect([...use.keys], `${plain.id} in ${where}: under exactly one key`).toHaveLength(1);
    expect(imageDigest(openImage(keyring, stored)), `${plain.id} in ${where}: all of it`).toBe(
      imageDigest(plain),
    );
    found[where] = [...use.keys][0]!;
  }
  expect(found.main ?? found.staging, `${plain.id}: in the main or the staging store`).toBeDefined();
  return found;
}
