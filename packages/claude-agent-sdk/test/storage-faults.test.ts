// A storage fault reaches the SDK as an error, never as a missing session or an empty listing; and
// a writer killed between two writes leaves whole batches only, which a replay does not repeat.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isTidemarkError, type SessionStore, TidemarkError } from '@tidemark/core';
import { openJsonlStore } from '@tidemark/jsonl';
import { openMemoryStore } from '@tidemark/memory';
import { afterAll, describe, expect, it } from 'vitest';
import { TidemarkSessionStore } from '../src/index.js';
import { runAndKill } from './crash-child.js';

const batch = (k: number) =>
  [0, 1, 2].map((i) => ({ type: 'user', uuid: `${k}-${i}`, message: { content: `line ${k}.${i}` } }));
const KEY = { projectKey: 'proj', sessionId: 'crash' };

describe('a storage fault', () => {
  it('rejects append, load and the listings with IO, and leaves what was stored', async () => {
    let failing = false;
    const store = await openMemoryStore({
      beforeStorageStep: () => {
        if (failing) throw Object.assign(new Error('disk gone'), { code: 'EIO' });
      },
    });
    const s = new TidemarkSessionStore({ store });
    await s.append(KEY, batch(0));
    failing = true;
    const calls: Array<() => Promise<unknown>> = [
      () => s.append(KEY, batch(1)),
      () => s.load(KEY),
      () => s.listSessions('proj'),
      () => s.listSessionSummaries('proj'),
      () => s.listSubkeys(KEY),
      () => s.delete(KEY),
    ];
    for (const call of calls) {
      const error = await call().then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(isTidemarkError(error, 'IO'), `expected IO, got ${String(error)}`).toBe(true);
    }
    failing = false;
    expect(await s.load(KEY)).toEqual(batch(0));
  });

  // Guards the listing repair: attrs behind the log are read from the log's last event.
  it('keeps an append whose summary update failed, and lists its state from the log', async () => {
    const inner = await openMemoryStore();
    let failUpdates = false;
    const store: SessionStore = {
      create: (init) => inner.create(init),
      append: (id, events) => inner.append(id, events),
      load: (id, options) => inner.load(id, options),
      read: (id, range) => inner.read(id, range),
      list: (query) => inner.list(query),
      has: (id) => inner.has(id),
      delete: (id, options) => inner.delete(id, options),
      close: () => inner.close(),
      update: async (id, patch) => {
        if (failUpdates) throw new TidemarkError('IO', 'summary write failed', { errno: 'EIO' });
        return inner.update(id, patch);
      },
    };
    const s = new TidemarkSessionStore({ store });
    await s.append(KEY, [{ type: 'user', uuid: 'u0', message: { content: 'first' } }]);
    const [before] = await s.listSessionSummaries('proj');
    failUpdates = true;
    await s.append(KEY, [{ type: 'custom-title', customTitle: 'Renamed' }]);
    const reader = new TidemarkSessionStore({ store });
    const [after] = await reader.listSessionSummaries('proj');
    expect(after?.data).toMatchObject({ customTitle: 'Renamed' });
    expect(after?.mtime).toBeGreaterThan(before?.mtime ?? 0);
    expect((await reader.listSessions('proj'))[0]?.mtime).toBe(after?.mtime);
  });

  it('rejects bad keys and entries with INVALID naming the field', async () => {
    const s = new TidemarkSessionStore({ store: await openMemoryStore() });
    await expect(s.append({ projectKey: '', sessionId: 's' }, [])).rejects.toMatchObject({
      code: 'INVALID',
      message: expect.stringMatching(/append: projectKey: must be a non-empty string/),
    });
    await expect(s.load({ ...KEY, subpath: '' })).rejects.toMatchObject({
      message: expect.stringMatching(/subpath/),
    });
    await expect(s.append(KEY, [{ uuid: 'x' } as never])).rejects.toMatchObject({
      message: expect.stringMatching(/entries\[0\]\.type: must be a string/),
    });
    await expect(s.append(KEY, [{ type: 'x', n: 10n } as never])).rejects.toMatchObject({
      message: expect.stringMatching(/entries\[0\]\.n: BigInt/),
    });
    expect(await s.load(KEY)).toBeNull();
  });
});

describe('a writer killed with SIGKILL', () => {
  const root = mkdtempSync(join(tmpdir(), 'tidemark-claude-kill-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const script = fileURLToPath(new URL('./fixtures/append-writer.mjs', import.meta.url));

  it('leaves whole batches only, and an SDK-style replay of every batch adds each entry once', async () => {
    let from = 0;
    for (let round = 0; round < 3; round++) {
      const acked = await runAndKill(script, [root, String(from)], from + 3, 40);
      const store = await openJsonlStore({ root });
      const s = new TidemarkSessionStore({ store });
      const uuids = ((await s.load(KEY)) ?? []).map((e) => e.uuid);
      expect(uuids.length % 3).toBe(0); // never part of a batch
      const done = uuids.length / 3;
      expect(done - 1).toBeGreaterThanOrEqual(acked); // nothing acknowledged is lost
      for (let k = 0; k < done + 2; k++) await s.append(KEY, batch(k));
      const expected = Array.from({ length: done + 2 }, (_, k) => batch(k)).flat();
      expect(await s.load(KEY)).toEqual(expected);
      expect((await s.listSessions('proj')).map((l) => l.sessionId)).toEqual(['crash']);
      from = done + 2;
      await store.close();
    }
  });
});
