// Arbitrary bytes in the database file (contract §5): every call answers truthfully or rejects with a
// typed error; nothing crashes untyped or hangs. Seeded, so a failure replays.
import { closeSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { isTidemarkError } from '@tidemark/core';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../src/index.js';
import { events, removeTempDirs, tempDir, verifyFile } from './helpers.js';

afterEach(removeTempDirs);

/** A small deterministic PRNG (mulberry32). */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Outcome = { ok: true; value: unknown } | { ok: false; code: string };

async function outcome(call: () => Promise<unknown>): Promise<Outcome> {
  try {
    return { ok: true, value: await call() };
  } catch (error) {
    expect(isTidemarkError(error), `untyped error: ${String(error)}`).toBe(true);
    return { ok: false, code: (error as { code: string }).code };
  }
}

describe('damaged bytes in the database file', () => {
  it('every call succeeds truthfully or rejects with a typed error', async () => {
    const dir = tempDir();
    const pristine = join(dir, 'pristine.db');
    const seed = await openSqliteStore({ path: pristine });
    for (const id of ['a', 'b', 'c']) {
      await seed.create({ id, cwd: '/w', title: `title ${id}` });
      await seed.append(id, events(0, 60, 5, id));
    }
    await seed.close();
    const original = readFileSync(pristine);
    const rng = random(20261129);
    const codes = new Map<string, number>();
    for (let round = 0; round < 40; round++) {
      const path = join(dir, `fuzz-${round}.db`);
      writeFileSync(path, original, { mode: 0o600 });
      const fd = openSync(path, 'r+');
      const flips = 1 + Math.floor(rng() * 64);
      // Leave the first 100 bytes alone in most rounds: the header alone is covered elsewhere.
      const start = round % 8 === 0 ? 0 : 100;
      for (let i = 0; i < flips; i++) {
        const offset = start + Math.floor(rng() * (original.length - start));
        writeSync(fd, Buffer.from([Math.floor(rng() * 256)]), 0, 1, offset);
      }
      closeSync(fd);

      const opened = await outcome(() => openSqliteStore({ path }));
      const count = (o: Outcome) => {
        const key = o.ok ? 'ok' : o.code;
        codes.set(key, (codes.get(key) ?? 0) + 1);
      };
      count(opened);
      if (!opened.ok) continue;
      const store = opened.value as Awaited<ReturnType<typeof openSqliteStore>>;
      for (const id of ['a', 'b', 'c']) {
        const loaded = await outcome(() => store.load(id));
        count(loaded);
        if (loaded.ok) {
          // A load that answers must answer with the whole, unchanged history.
          expect((loaded.value as { events: unknown[] }).events).toEqual(events(0, 60, 5, id));
        } else {
          expect(['CORRUPT', 'IO']).toContain(loaded.code);
        }
        count(
          await outcome(async () => {
            let n = 0;
            for await (const _ of store.read(id)) n++;
            return n;
          }),
        );
        const has = await outcome(() => store.has(id));
        count(has);
        // No false absence: an existing session is never reported missing.
        if (has.ok) expect(has.value).toBe(true);
      }
      const listed = await outcome(() => store.list());
      count(listed);
      if (listed.ok) {
        const page = listed.value as { sessions: { id: string }[]; problems: { id: string }[] };
        expect([...page.sessions.map((x) => x.id), ...page.problems.map((x) => x.id)].sort()).toEqual([
          'a',
          'b',
          'c',
        ]);
      }
      count(await outcome(() => store.append('a', events(60, 1, 1, 'a'))));
      await outcome(() => store.close());
      await verifyFile(path).catch((error: unknown) => expect(isTidemarkError(error)).toBe(true));
    }
    // The rounds did reach damage, not only harmless bytes.
    expect(codes.get('CORRUPT') ?? 0).toBeGreaterThan(0);
  });
});
