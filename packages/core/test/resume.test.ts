import { describe, expect, it } from 'vitest';
import {
  type ClosingEvent,
  fork,
  isTidemarkError,
  resume,
  type SessionEvent,
  type SessionStore,
} from '../src/index.js';
import { faulty, openMemoryStore } from './store-wrappers.js';

const T = '2026-01-01T00:00:00.000Z';
const ev = (seq: number, type: string, data: SessionEvent['data'] = null): SessionEvent => ({
  seq,
  type,
  time: T,
  data,
});

/** A session with one finished turn and a second turn cut short with two unanswered tool calls. */
async function interruptedSession(store: SessionStore, id = 's1'): Promise<SessionEvent[]> {
  await store.create({ id, cwd: '/proj' });
  const events = [
    ev(0, 'turn/start'),
    ev(1, 'user/message', { text: 'list files' }),
    ev(2, 'turn/end'),
    ev(3, 'turn/start'),
    ev(4, 'user/message', { text: 'run tests' }),
    ev(5, 'tool/call', { callId: 'a', name: 'bash' }),
    ev(6, 'tool/call', { callId: 'b', name: 'read' }),
    ev(7, 'tool/result', { callId: 'b', ok: true }),
  ];
  await store.append(id, events);
  return events;
}

/** The hook an agent would use: an error result for each unanswered call, then turn/end. */
function closeWithErrors(tail: SessionEvent[]): ClosingEvent[] {
  const answered = new Set(
    tail.filter((e) => e.type === 'tool/result').map((e) => (e.data as { callId: string }).callId),
  );
  const unanswered = tail
    .filter((e) => e.type === 'tool/call')
    .map((e) => (e.data as { callId: string }).callId)
    .filter((callId) => !answered.has(callId));
  return [
    ...unanswered.map((callId) => ({ type: 'tool/result', data: { callId, error: 'interrupted' } })),
    { type: 'turn/end', data: { reason: 'interrupted' } },
  ];
}

describe('resume', () => {
  it('returns the history and a writer at the next seq (keep, no hook)', async () => {
    const store = await openMemoryStore();
    const events = await interruptedSession(store);
    const resumed = await resume(store, 's1');
    expect(resumed.history).toEqual(events);
    expect(resumed.interrupted).toBe(true);
    expect(resumed.closingEvents).toEqual([]);
    expect(resumed.meta.cwd).toBe('/proj');
    expect(resumed.writer.nextSeq).toBe(8);
    await resumed.writer.push({ type: 'turn/start', data: null });
    await resumed.writer.close();
    expect((await store.load('s1')).events).toHaveLength(9);
  });

  it('closes an interrupted turn durably through the hook before new work', async () => {
    const store = await openMemoryStore();
    await interruptedSession(store);
    const seen: SessionEvent[][] = [];
    const resumed = await resume(store, 's1', {
      closeInterruptedTurn: (tail) => {
        seen.push(tail);
        return closeWithErrors(tail);
      },
    });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.map((e) => e.seq)).toEqual([3, 4, 5, 6, 7]);
    expect(resumed.interrupted).toBe(true);
    expect(resumed.closingEvents.map((e) => [e.seq, e.type, e.data])).toEqual([
      [8, 'tool/result', { callId: 'a', error: 'interrupted' }],
      [9, 'turn/end', { reason: 'interrupted' }],
    ]);
    expect(resumed.history).toHaveLength(10);
    expect(resumed.summary.interrupted).toBe(false);
    expect(resumed.summary.committedSeq).toBe(9);
    expect(resumed.writer.nextSeq).toBe(10);
    // durable already, without any flush by the caller
    const loaded = await store.load('s1');
    expect(loaded.interrupted).toBe(false);
    expect(loaded.events.slice(8)).toEqual(resumed.closingEvents);
  });

  it('does not call the hook for a session that is not interrupted', async () => {
    const store = await openMemoryStore();
    await store.create({ id: 'done' });
    await store.append('done', [ev(0, 'turn/start'), ev(1, 'turn/end')]);
    let called = false;
    const resumed = await resume(store, 'done', {
      closeInterruptedTurn: () => {
        called = true;
        return [];
      },
    });
    expect(called).toBe(false);
    expect(resumed.interrupted).toBe(false);
    expect(resumed.writer.nextSeq).toBe(2);
  });

  it("with tail: 'cut' continues from the last boundary", async () => {
    const store = await openMemoryStore();
    await interruptedSession(store);
    const resumed = await resume(store, 's1', { tail: 'cut', closeInterruptedTurn: closeWithErrors });
    expect(resumed.interrupted).toBe(true);
    expect(resumed.recovered?.cutEvents).toBe(5);
    expect(resumed.history.map((e) => e.seq)).toEqual([0, 1, 2]);
    expect(resumed.closingEvents).toEqual([]);
    expect(resumed.writer.nextSeq).toBe(3);
    await resumed.writer.push({ type: 'turn/start', data: 'again' });
    await resumed.writer.close();
    const loaded = await store.load('s1');
    expect(loaded.events.map((e) => e.data)).toEqual([null, { text: 'list files' }, null, 'again']);
  });

  it('fails typed, with nothing half-written, when the closing append fails; a second resume works', async () => {
    const store = faulty(await openMemoryStore());
    await interruptedSession(store);
    store.failBefore.add(2); // append #1 built the session
    await expect(resume(store, 's1', { closeInterruptedTurn: closeWithErrors })).rejects.toMatchObject({
      code: 'IO',
    });
    expect(await store.has('s1')).toBe(true);
    expect((await store.load('s1')).events).toHaveLength(8);
    const again = await resume(store, 's1', { closeInterruptedTurn: closeWithErrors });
    expect(again.history).toHaveLength(10);
  });

  it('appends the closing events atomically: an invalid one means none is written', async () => {
    const store = await openMemoryStore();
    await interruptedSession(store);
    await expect(
      resume(store, 's1', {
        closeInterruptedTurn: (): ClosingEvent[] => [
          { type: 'tool/result', data: { callId: 'a', error: 'interrupted' } },
          { type: 'turn/end', data: { n: Number.NaN } },
        ],
      }),
    ).rejects.toMatchObject({ code: 'INVALID' });
    await new Promise((r) => setTimeout(r, 20)); // no background flush lands anything later
    const loaded = await store.load('s1');
    expect(loaded.events).toHaveLength(8);
    expect(loaded.interrupted).toBe(true);
  });

  it('reports NOT_FOUND only for an absent session', async () => {
    const store = await openMemoryStore();
    await expect(resume(store, 'nope')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('fork', () => {
  it('copies events 0..atSeq into a new session whose meta names its parent', async () => {
    const store = await openMemoryStore();
    const events = await interruptedSession(store);
    const forked = await fork(store, 's1', 2, { id: 'child' });
    expect(forked.meta.parent).toEqual({ id: 's1', seq: 2 });
    expect(forked.meta.cwd).toBe('/proj');
    expect(forked.writer.nextSeq).toBe(3);
    const child = await store.load('child');
    expect(child.meta.parent).toEqual({ id: 's1', seq: 2 });
    expect(child.summary.parent).toEqual({ id: 's1', seq: 2 });
    expect(child.events).toEqual(events.slice(0, 3));
    // the parent is untouched, the child continues independently
    await forked.writer.push({ type: 'user/message', data: { text: 'other path' } });
    await forked.writer.close();
    expect((await store.load('s1')).events).toEqual(events);
    expect((await store.load('child')).events).toHaveLength(4);
  });

  it('forks a fork (lineage chain), copying in several batches, with a new cwd', async () => {
    const store = faulty(await openMemoryStore());
    await interruptedSession(store);
    const first = await fork(store, 's1', 7, { copyBatchEvents: 3 });
    expect(store.batchSizes.slice(1)).toEqual([3, 3, 2]);
    const second = await fork(store, first.meta.id, 4, { id: 'grandchild', cwd: '/elsewhere' });
    const loaded = await store.load('grandchild');
    expect(loaded.meta.parent).toEqual({ id: first.meta.id, seq: 4 });
    expect(loaded.meta.cwd).toBe('/elsewhere');
    expect(loaded.events).toHaveLength(5);
    expect(second.history).toEqual(loaded.events);
  });

  it('rejects a seq the parent does not hold, and absent parents', async () => {
    const store = await openMemoryStore();
    await interruptedSession(store);
    await expect(fork(store, 's1', 8)).rejects.toMatchObject({ code: 'INVALID' });
    await expect(fork(store, 's1', -1)).rejects.toMatchObject({ code: 'INVALID' });
    await expect(fork(store, 'missing', 0)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(fork(store, 's1', 0, { id: 's1' })).rejects.toMatchObject({ code: 'ALREADY_EXISTS' });
  });
});

describe('resume closing hook results', () => {
  // Guards that a malformed hook result is a typed INVALID and writes nothing.
  it('a hook returning something that is not a { type, data } object is INVALID, not a TypeError', async () => {
    const store = await openMemoryStore();
    await store.create({ id: 's1' });
    await store.append('s1', [{ seq: 0, type: 'turn/start', time: T, data: null }]);
    for (const bad of [[null], [42], ['turn/end'], [1n], [[]]]) {
      const result = await resume(store, 's1', {
        closeInterruptedTurn: () => bad as unknown as ClosingEvent[],
      }).catch((error: unknown) => error);
      expect(isTidemarkError(result, 'INVALID')).toBe(true);
    }
    expect((await store.load('s1')).events).toHaveLength(1);
  });
});
