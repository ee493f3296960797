// Writes confirmed by the append itself (`append(…, { after })`). The service keeps nothing between
// calls, so each write is still planned on what the same call read (the end of the session's log,
// the newest shared state); on a store that checks `after`, the append also names the last event
// that read found, so a log deleted and written again to the same length between the read and the
// append (which the seq check lets through) refuses the batch (CONFLICT, nothing written) and the
// call reads and plans again. A store without the check is not handed `after` and keeps its reads.
// On memory and on two store instances over one JSONL root, SQLite file and PostgreSQL schema, with
// the rewrite made by the other instance in that window.
import { createEvent, createEventActions, type Event, type Session } from '@google/adk';
import { checksAppendAfter, type SessionStore } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import {
  countingStore as counting,
  openTwoInstances,
  sharedBackends,
  withInterleaving,
} from '@tidemark/test-hosts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appStateLog, sessionLog, TidemarkSessionService } from '../src/index.js';
import { ADK_EVENT, SNAPSHOT_EVERY } from '../src/records.js';

const key = (sessionId: string) => ({ appName: 'app', userId: 'u', sessionId });
const event = (id: string, stateDelta: Record<string, unknown> = {}, timestamp = 1000): Event =>
  createEvent({ id, timestamp, actions: createEventActions({ stateDelta }) });

/**
 * `inner` counted and checking `after`, as host B sees it: after `arm(meanwhile)`, `meanwhile` runs
 * once, right after B's next read or load has finished (another host acting between B's read and
 * its append).
 */
function watched(inner: SessionStore) {
  const counted = counting(inner, true);
  const { store, arm } = withInterleaving(counted.store, { passAfter: true });
  return { store, calls: counted.calls, arm };
}

/** Per appendEvent: calls made by `count` appendEvents on a warm session, divided out. */
async function perAppend(capable: boolean, stateDelta: (i: number) => Record<string, unknown>) {
  const inner = await openMemoryStore();
  const { store, calls, reset } = counting(inner, capable);
  const service = new TidemarkSessionService({ store });
  const session = await service.createSession(key('chat'));
  await service.appendEvent({ session, event: event('e0', stateDelta(0)) });
  reset();
  const count = 4;
  for (let i = 1; i <= count; i++)
    await service.appendEvent({ session, event: event(`e${i}`, stateDelta(i)) });
  const ids = (await new TidemarkSessionService({ store: inner }).getSession(key('chat')))?.events.map(
    (e) => e.id,
  );
  expect(ids).toEqual(['e0', 'e1', 'e2', 'e3', 'e4']);
  return Object.fromEntries(Object.entries(calls).map(([k, v]) => [k, v / count]));
}

describe('call counts per appendEvent', () => {
  it('checked: one read of the log’s end and one append naming the closing event it read', async () => {
    expect(checksAppendAfter(await openMemoryStore())).toBe(true);
    expect(await perAppend(true, () => ({}))).toEqual({
      reads: 1,
      loads: 0,
      appends: 1,
      afters: 1,
      updates: 0,
      conflicts: 0,
    });
  });

  it('checked, with app: and user: keys: a read and an append naming the event read, per log', async () => {
    expect(await perAppend(true, (i) => ({ 'app:n': i, 'user:n': i, own: i }))).toEqual({
      reads: 3,
      loads: 0,
      appends: 3,
      afters: 3,
      updates: 0,
      conflicts: 0,
    });
  });

  it('a store that does not check after: the same reads, and no after', async () => {
    const { store } = counting(await openMemoryStore(), false);
    expect(checksAppendAfter(store)).toBe(false);
    expect(await perAppend(false, () => ({}))).toEqual({
      reads: 1,
      loads: 0,
      appends: 1,
      afters: 0,
      updates: 0,
      conflicts: 0,
    });
    expect(await perAppend(false, (i) => ({ 'app:n': i, 'user:n': i }))).toEqual({
      reads: 3,
      loads: 0,
      appends: 3,
      afters: 0,
      updates: 0,
      conflicts: 0,
    });
  });
});

/** Two store instances over one store (or one memory store twice). */
interface Pair {
  name: string;
  open(): Promise<{ storeA: SessionStore; storeB: SessionStore; cleanup(): Promise<void> }>;
}

const pairs: Pair[] = [
  {
    name: 'one memory store',
    open: async () => {
      const store = await openMemoryStore();
      return { storeA: store, storeB: store, cleanup: () => store.close() };
    },
  },
  ...(await sharedBackends()).map(
    (backend): Pair => ({
      name: `two ${backend.name} store instances`,
      open: async () => {
        const { storeA, storeB, close } = await openTwoInstances(backend);
        return { storeA, storeB, cleanup: close };
      },
    }),
  ),
];

describe.each(pairs)(
  'deleted and written again to the same length between B’s read and its append, on $name',
  (pair) => {
    let storeA: SessionStore;
    let storeB: SessionStore;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ storeA, storeB, cleanup } = await pair.open());
    });
    afterAll(() => cleanup?.());

    /** Host A's service, host B's over the watched store, and B's object of the session A wrote. */
    async function hosts(sessionId: string, events: Event[]) {
      const a = new TidemarkSessionService({ store: storeA });
      const b = watched(storeB);
      const serviceB = new TidemarkSessionService({ store: b.store });
      const session = await a.createSession({ ...key(sessionId), state: { era: 'old' } });
      for (const e of events) await a.appendEvent({ session, event: e });
      const sessionB = (await serviceB.getSession(key(sessionId)))!;
      return { a, b, serviceB, sessionB };
    }

    /** A deletes the session and writes it again with `events` (as many as before). */
    const rewrite = (a: TidemarkSessionService, sessionId: string, events: Event[]) => async () => {
      await a.deleteSession(key(sessionId));
      const session = await a.createSession({ ...key(sessionId), state: { era: 'new' } });
      for (const e of events) await a.appendEvent({ session, event: e });
    };

    const stored = async (sessionId: string) =>
      (await storeA.load(sessionLog('app', 'u', sessionId).id)).events;

    it('refuses the event planned on the old log, and appends it once after the new one’s', async () => {
      const { a, b, serviceB, sessionB } = await hosts('plain', [event('old-1')]);
      b.arm(rewrite(a, 'plain', [event('new-1')]));
      await serviceB.appendEvent({ session: sessionB, event: event('b1', { from: 'b' }) });
      expect(b.calls.conflicts).toBe(1);
      const seen = (await a.getSession(key('plain')))!;
      expect(seen.events.map((e) => e.id)).toEqual(['new-1', 'b1']);
      expect(seen.state).toEqual({ era: 'new', from: 'b' });
      expect((await stored('plain')).filter((e) => e.type === ADK_EVENT.event)).toHaveLength(2);
    });

    it('writes no replacement planned on the old log: the event B replaced there is new in the new one', async () => {
      const { a, b, serviceB, sessionB } = await hosts('replace', [event('x'), event('y')]);
      b.arm(rewrite(a, 'replace', [event('p'), event('q')]));
      // B's object holds y, the old log's last event: B plans a replacement of it at its seq.
      await serviceB.appendEvent({ session: sessionB, event: event('y', { by: 'b' }) });
      expect(b.calls.conflicts).toBe(1);
      expect((await a.getSession(key('replace')))!.events.map((e) => e.id)).toEqual(['p', 'q', 'y']);
      const records = (await stored('replace')).filter((e) => e.type === ADK_EVENT.event);
      expect(records.map((e) => (e.data as { replaces?: number }).replaces)).toEqual([
        undefined,
        undefined,
        undefined,
      ]);
    });

    it('writes no snapshot planned on the old log: every snapshot follows the batch it was built on', async () => {
      const n = SNAPSHOT_EVERY - 1;
      const era = (name: string) =>
        Array.from({ length: n }, (_, i) => event(`${name}-${i}`, { [`${name}-${i}`]: i }));
      const { a, b, serviceB, sessionB } = await hosts('snapshot', era('old'));
      // After B's second read: B has read the log's end and the old state its snapshot is built from.
      b.arm(async () => b.arm(rewrite(a, 'snapshot', era('new'))));
      // B's batch carries the session's first snapshot, built on the old log's state.
      await serviceB.appendEvent({ session: sessionB, event: event('b1', { by: 'b' }) });
      expect(b.calls.conflicts).toBe(1);
      const whole = (await a.getSession(key('snapshot')))!;
      const expected: Record<string, unknown> = { era: 'new', by: 'b' };
      for (let i = 0; i < n; i++) expected[`new-${i}`] = i;
      expect(whole.state).toEqual(expected);
      const log = await stored('snapshot');
      const snapshots = log.filter((e) => e.type === ADK_EVENT.snapshot);
      expect(snapshots).toHaveLength(1);
      for (const snapshot of snapshots) {
        const before = log.find((e) => e.seq === snapshot.seq - 2)!;
        expect(before.type).toBe(ADK_EVENT.end);
        expect((snapshot.data as { basedOn: string }).basedOn).toBe((before.data as { nonce: string }).nonce);
        expect(Object.keys((snapshot.data as { state: object }).state).some((k) => k.startsWith('old'))).toBe(
          false,
        );
      }
      const tail = (await new TidemarkSessionService({ store: storeA }).getSession({
        ...key('snapshot'),
        config: { numRecentEvents: 2 },
      }))!;
      expect(tail.state).toEqual(expected);
    });

    it('merges shared state onto the rewritten state, never onto the one read before', async () => {
      const appName = `shared-${pair.name.replace(/\W+/g, '-')}`;
      const a = new TidemarkSessionService({ store: storeA });
      const b = watched(storeB);
      const serviceB = new TidemarkSessionService({ store: b.store });
      await a.createSession({ appName, userId: 'u', sessionId: 'first', state: { 'app:old': 1 } });
      const sessionB: Session = await serviceB.createSession({ appName, userId: 'u', sessionId: 'b' });
      b.arm(async () => {
        // Another host replaces the app's state log with one of the same length (one state).
        await storeA.delete(appStateLog(appName).id);
        await a.createSession({ appName, userId: 'u', sessionId: 'second', state: { 'app:new': 2 } });
      });
      await serviceB.appendEvent({ session: sessionB, event: event('b1', { 'app:b': 3 }) });
      expect(b.calls.conflicts).toBe(1);
      const seen = (await a.getSession({ appName, userId: 'u', sessionId: 'b' }))!;
      expect(seen.state).toEqual({ 'app:new': 2, 'app:b': 3 });
      expect((await storeA.load(appStateLog(appName).id)).events).toHaveLength(2);
    });
  },
);
