// The write path over a real backend under injected storage faults: SessionWriter on the JSONL
// store, over memfs wrapped by the harness's FaultyFs. For every storage operation N of the
// workload, operation N fails once (EIO, then ENOSPC); the invariants of contract §7 must hold.
import { isTidemarkError, type SessionStore, SessionWriter } from '@tidemark/core';
import { FaultyFs, memfsFileSystem } from '@tidemark/faults';
import { openJsonlStore } from '@tidemark/jsonl';
import { describe, expect, inject, it } from 'vitest';

const unavailable = inject('unavailable');
const ROOT = '/store';
const EVENTS = 12;

interface Outcome {
  acknowledged: number;
  errors: number;
}

/** Pushes EVENTS events in three flushes; a failed flush is retried after the fault is lifted. */
/**
 * Lets the application "wait" past the JSONL backend's 10 s fresh-lock window by ageing lock files:
 * a compound fault (the lock's own rollback failing) can leave an empty lock that is reported as a
 * retryable CONFLICT until it is old enough to be cleared.
 */
function ageLocks(faulty: FaultyFs): void {
  const volume = (faulty.inner as ReturnType<typeof memfsFileSystem>).volume;
  const old = new Date(Date.now() - 60_000);
  for (const path of Object.keys(volume.toJSON()))
    if (path.endsWith('.lock')) volume.utimesSync(path, old, old);
}

async function workload(faulty: FaultyFs): Promise<{ outcome: Outcome; store: SessionStore }> {
  const outcome: Outcome = { acknowledged: 0, errors: 0 };
  /** Runs a call; on a fault (which must be typed) lifts it and runs the call again. */
  const retried = async <T>(call: () => Promise<T>): Promise<T> => {
    try {
      return await call();
    } catch (error) {
      expect(isTidemarkError(error)).toBe(true);
      outcome.errors++;
      faulty.lift();
      return call();
    }
  };
  let store = await retried(() => openJsonlStore({ root: ROOT, fs: faulty.fs }));
  await retried(() => store.create({ id: 's1', cwd: '/p' }));
  let writer = new SessionWriter(store, 's1', { maxBatchEvents: 3, maxDelayMs: 1000 });
  for (let i = 0; i < EVENTS; i++) {
    await writer.push({
      type: i % 4 === 3 ? 'turn/end' : 'user/message',
      time: '2026-01-01T00:00:00.000Z',
      data: { i },
    });
    if (i % 4 !== 3) continue;
    try {
      await writer.flush();
    } catch (error) {
      outcome.errors++;
      expect(isTidemarkError(error)).toBe(true);
      // no false absence once something was acknowledged
      // (while the fault persists, has() may itself fail: with a typed error, never `false`)
      if (outcome.acknowledged > 0) {
        const present = await store.has('s1').catch((e: unknown) => {
          expect(isTidemarkError(e)).toBe(true);
          return 'error';
        });
        expect(present).not.toBe(false);
      }
      faulty.lift();
      try {
        await writer.flush();
      } catch (again) {
        // The backend may fail-stop after a failed sync (it never retries an fsync on the same
        // descriptor): reopen, as an application would, and continue from the durable state.
        expect(isTidemarkError(again)).toBe(true);
        if (isTidemarkError(again, 'CONFLICT')) {
          expect(again.retryable).toBe(true);
          ageLocks(faulty);
        }
        await store.close().catch(() => undefined);
        store = await openJsonlStore({ root: ROOT, fs: faulty.fs });
        const loaded = await store.load('s1').catch(() => undefined);
        const next = loaded?.events.length ?? 0;
        if (loaded === undefined) await store.create({ id: 's1', cwd: '/p' });
        writer = new SessionWriter(store, 's1', { maxBatchEvents: 3, maxDelayMs: 1000, nextSeq: next });
        for (let j = next; j <= i; j++) {
          await writer.push({
            type: j % 4 === 3 ? 'turn/end' : 'user/message',
            time: '2026-01-01T00:00:00.000Z',
            data: { i: j },
          });
        }
        await writer.flush();
      }
    }
    outcome.acknowledged = writer.durableSeq;
  }
  await writer.close();
  return { outcome, store };
}

describe.skipIf(unavailable.jsonl !== undefined || unavailable.faults !== undefined)(
  'SessionWriter on JSONL under faults',
  () => {
    it('keeps every acknowledged event, exactly once, for a fault at every operation (once and persistent)', async () => {
      const clean = new FaultyFs(memfsFileSystem());
      const { store: cleanStore } = await workload(clean);
      await cleanStore.close();
      const operations = clean.trace.length;
      expect(operations).toBeGreaterThan(10);
      let injected = 0;
      let runsWithErrors = 0;
      const variants = [
        { errno: 'EIO', mode: 'once' },
        { errno: 'ENOSPC', mode: 'once' },
        // every operation from N on fails until lifted: the store's own rollback fails too
        { errno: 'EIO', mode: 'persistent' },
      ] as const;
      for (const { errno, mode } of variants) {
        for (let at = 1; at <= operations; at++) {
          const inner = memfsFileSystem();
          const faulty = new FaultyFs(inner, { plans: [{ at, errno, mode }] });
          const { outcome, store } = await workload(faulty);
          injected += faulty.injected;
          if (outcome.errors > 0) runsWithErrors++;
          await store.close();
          // reopen over the same volume, fault lifted: everything acknowledged, once, in order
          const reopened = await openJsonlStore({ root: ROOT, fs: inner });
          const loaded = await reopened.load('s1');
          expect(outcome.acknowledged).toBe(EVENTS);
          expect(loaded.events.map((e) => (e.data as { i: number }).i)).toEqual([...Array(EVENTS).keys()]);
          expect(loaded.events.map((e) => e.seq)).toEqual([...Array(EVENTS).keys()]);
          // still writable
          await reopened.append('s1', [
            { seq: EVENTS, type: 'probe', time: '2026-01-01T00:00:00.000Z', data: null },
          ]);
          await reopened.close();
        }
      }
      // Faults on best-effort steps (closing a handle, removing a temp file) may be absorbed by the
      // store; the invariants above hold either way. Most faults must reach the caller.
      expect(injected).toBeGreaterThan(operations);
      expect(runsWithErrors).toBeGreaterThan(operations);
      console.log(
        `writer/jsonl sweep: ${operations} operations x 3 variants, ${injected} injected, ${runsWithErrors} runs saw a typed error`,
      );
    });
  },
);
