// rekeyStore: every session re-sealed under the current key, each all or nothing; a run stopped
// before any of its steps is finished by the next run, a session changed meanwhile is left alone,
// one that does not open fails alone, and nothing is ever lost.
import type { SessionStore } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import { describe, expect, it } from 'vitest';
import { Keyring } from '../src/keyring.js';
import { loadStored, materialize, type SessionImage, sealImage } from '../src/rekey/image.js';
import { type RekeyStep, rekeyStore } from '../src/rekey/index.js';
import { expectWhole, KEY1, KEY2, plainSession, ring1, ring2, ring21, writeSealed } from './rekey-helpers.js';

async function fixture(
  count: number,
): Promise<{ main: SessionStore; staging: SessionStore; plains: SessionImage[] }> {
  const main = await openMemoryStore();
  const staging = await openMemoryStore();
  const plains = Array.from({ length: count }, (_, i) => plainSession(i));
  for (const plain of plains) await writeSealed(main, ring1, plain);
  return { main, staging, plains };
}

class Stop extends Error {}

describe('rekeyStore', () => {
  it('re-seals every session under the current key, verified, and then k1 can be retired', async () => {
    const { main, staging, plains } = await fixture(8);
    const progress: string[] = [];
    const report = await rekeyStore({
      store: main,
      staging,
      keyring: ring21,
      onProgress: (p) =>
        progress.push(`${p.done}/${p.total}${p.outcome === undefined ? '' : ` ${p.outcome}`}`),
    });
    expect(report).toMatchObject({
      currentKeyId: 'k2',
      sessions: 8,
      alreadyCurrent: [],
      changed: [],
      failed: [],
      problems: [],
      stagingLeft: [],
      keysInUse: { k2: 8 },
      retirable: ['k1'],
      complete: true,
    });
    expect(report.resealed).toEqual(plains.map((p) => p.id));
    expect(progress[0]).toBe('0/8');
    expect(progress.at(-1)).toBe('8/8 resealed');
    // Everything opens with k2 alone: k1 is no longer needed.
    for (const plain of plains)
      expect(await expectWhole(plain, { main, staging }, ring2)).toEqual({ main: 'k2' });
    const again = await rekeyStore({ store: main, staging, keyring: ring21 });
    expect(again.alreadyCurrent).toHaveLength(8);
    expect(again.resealed).toEqual([]);
    expect(again.complete).toBe(true);
  });

  it.each<RekeyStep>(['stage', 'delete', 'restore', 'unstage'])(
    'finishes in the next run what a run stopped before its %s step left',
    async (stopAt) => {
      const { main, staging, plains } = await fixture(4);
      const victim = plains[2]!.id;
      const first = await rekeyStore({
        store: main,
        staging,
        keyring: ring21,
        onStep: (id, step) => {
          if (id === victim && step === stopAt) throw new Stop(`stopped before ${step}`);
        },
      });
      expect(first.failed.map((f) => f.id)).toEqual([victim]);
      expect(first.complete).toBe(false);
      expect(first.retirable).toEqual([]);
      for (const plain of plains) await expectWhole(plain, { main, staging }, ring21);
      const where = await expectWhole(plains[2]!, { main, staging }, ring21);
      if (stopAt === 'restore') expect(where).toEqual({ staging: 'k2' });
      const second = await rekeyStore({ store: main, staging, keyring: ring21 });
      expect(second.complete).toBe(true);
      expect(second.resealed).toEqual([victim]);
      expect(second.resumed).toEqual(stopAt === 'stage' ? [] : [victim]);
      for (const plain of plains)
        expect(await expectWhole(plain, { main, staging }, ring2)).toEqual({ main: 'k2' });
    },
  );

  it('leaves a session that changed while it was re-sealed as it is, and re-seals it on the next run', async () => {
    const { main, staging, plains } = await fixture(3);
    const victim = plains[1]!;
    const appended = {
      seq: victim.events.length,
      type: 'turn/end',
      time: '2026-02-01T00:00:00.000Z',
      data: null,
    };
    const first = await rekeyStore({
      store: main,
      staging,
      keyring: ring21,
      onStep: async (id, step) => {
        // Another writer appends (under k1, as an agent with the old keyring would) just before the delete.
        if (id === victim.id && step === 'delete')
          await main.append(id, [sealImage(ring1, { ...victim, events: [appended] }).events[0]!]);
      },
    });
    expect(first.changed).toEqual([victim.id]);
    expect(first.complete).toBe(false);
    expect(first.stagingLeft).toEqual([]);
    const grown = { ...victim, events: [...victim.events, appended] };
    expect(await expectWhole(grown, { main, staging }, ring21)).toEqual({ main: 'k1' });
    const second = await rekeyStore({ store: main, staging, keyring: ring21 });
    expect(second.resealed).toEqual([victim.id]);
    expect(await expectWhole(grown, { main, staging }, ring2)).toEqual({ main: 'k2' });
  });

  it('fails a session that does not open (tampered, plaintext, unknown key) alone, and writes nothing for it', async () => {
    const { main, staging, plains } = await fixture(2);
    const stranger = Keyring.parse(`k9:${Buffer.alloc(32, 9).toString('base64')}`);
    await writeSealed(main, stranger, plainSession(7, 'unknown-key'));
    await materialize(main, plainSession(8, 'plaintext'));
    const report = await rekeyStore({ store: main, staging, keyring: ring21 });
    expect(report.failed.map((f) => [f.id, f.code])).toEqual([
      ['plaintext', 'CORRUPT'],
      ['unknown-key', 'CORRUPT'],
    ]);
    expect(report.failed[1]!.message).toMatch(/k9/);
    expect(report.resealed).toEqual(plains.map((p) => p.id));
    expect(report.complete).toBe(false);
    expect(report.retirable).toEqual([]);
    expect((await staging.list()).sessions).toEqual([]);
    expect(await loadStored(main, 'plaintext')).toBeDefined();
    expect(await loadStored(main, 'unknown-key')).toBeDefined();
  });

  it('keeps both copies when the staged one is not an older version of the main one', async () => {
    const { main, staging } = await fixture(0);
    const plain = plainSession(3, 'diverged');
    await writeSealed(main, ring1, plain);
    const other = { ...plain, events: plain.events.map((e) => ({ ...e, data: { other: e.seq } })) };
    await materialize(staging, sealImage(Keyring.parse(`k2:${KEY2},k1:${KEY1}`), other));
    const report = await rekeyStore({ store: main, staging, keyring: ring21 });
    expect(report.failed).toMatchObject([{ id: 'diverged', code: 'CONFLICT' }]);
    expect(report.stagingLeft).toEqual(['diverged']);
    expect(await expectWhole(plain, { main, staging: await openMemoryStore() }, ring21)).toEqual({
      main: 'k1',
    });
    expect(await expectWhole(other, { main: await openMemoryStore(), staging }, ring21)).toEqual({
      staging: 'k2',
    });
  });

  it('drops a stale staged copy whose events the main store has moved past', async () => {
    const { main, staging } = await fixture(0);
    const plain = plainSession(4, 'moved-on');
    await writeSealed(main, ring1, plain);
    const older = { ...plain, events: plain.events.slice(0, 1) };
    await materialize(staging, sealImage(ring21, older));
    const report = await rekeyStore({ store: main, staging, keyring: ring21 });
    expect(report).toMatchObject({ resealed: ['moved-on'], stagingLeft: [], complete: true });
    expect(await expectWhole(plain, { main, staging }, ring2)).toEqual({ main: 'k2' });
  });
});
