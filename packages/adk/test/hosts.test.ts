// Two processes over one shared store (one JSONL root, one SQLite file, one PostgreSQL schema),
// each with its own long-lived TidemarkSessionService and the session objects it fetched: this
// process is host A, a child process is host B. Whatever one host appends, deletes or rewrites,
// the other's next call sees, as a process that has just started would; racing writers land whole
// or get a typed, retryable CONFLICT; no acknowledged event is lost, duplicated or reordered, and
// no acknowledged shared key is lost to a racing write (contract §9).
//
// JSONL: a session's writer lock is held by the process that wrote it last until that process
// goes idle; `handOver()` waits for that before the other host writes the same session.
import { createEvent, createEventActions, type Session } from '@google/adk';
import { isTidemarkError, type SessionStore } from '@tidemark/core';
import { type Host, openStoreAt, type SharedStore, sharedBackends, startHost } from '@tidemark/test-hosts';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TidemarkSessionService } from '../src/index.js';

const HOST = new URL('./fixtures/service-host.mjs', import.meta.url);
const TIMEOUT = 180_000;
const key = (sessionId: string, userId = 'u') => ({ appName: 'app', userId, sessionId });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const ids = (session: { events: Array<{ id: string }> } | undefined) =>
  session?.events.map((e) => e.id) ?? [];
const event = (id: string, timestamp: number, stateDelta: Record<string, unknown> = {}) =>
  createEvent({ id, timestamp, actions: createEventActions({ stateDelta }) });

describe.each(await sharedBackends())('two hosts over one $name store', (backend) => {
  let shared: SharedStore;
  let store: SessionStore;
  let service: TidemarkSessionService;
  let b: Host;
  const handOver = () => (backend.name === 'jsonl' ? sleep(1200) : Promise.resolve());

  beforeEach(async () => {
    shared = await backend.create();
    store = await openStoreAt(shared.address);
    service = new TidemarkSessionService({ store });
    b = await startHost(shared.address, HOST);
  }, TIMEOUT);
  afterEach(async () => {
    await b.close();
    await store.close();
    await shared.cleanup();
  }, TIMEOUT);

  it('appends on B after A, on a session object B fetched before A wrote', { timeout: TIMEOUT }, async () => {
    const session = await service.createSession({ ...key('chat'), state: { n: 0 } });
    await service.appendEvent({ session, event: event('a1', 1, { n: 1 }) });
    await b.call('hold', 'chat'); // B's object knows a1 only
    await service.appendEvent({ session, event: event('a2', 2, { n: 2, 'user:last': 'a2' }) });
    expect(ids(await b.call('get', 'chat'))).toEqual(['a1', 'a2']);
    await handOver();
    await b.call('append', 'chat', { id: 'b1', timestamp: 3, stateDelta: { m: 1 } });
    const seen = await service.getSession(key('chat'));
    expect(ids(seen)).toEqual(['a1', 'a2', 'b1']);
    expect(seen?.state).toEqual({ n: 2, m: 1, 'user:last': 'a2' });
    expect(ids(await b.call('get', 'chat', { numRecentEvents: 2 }))).toEqual(['a2', 'b1']);
  });

  it('appends on B to the new session after A deleted and rewrote it', { timeout: TIMEOUT }, async () => {
    const old = await service.createSession({ ...key('chat'), state: { era: 'old' } });
    await service.appendEvent({ session: old, event: event('old-1', 1, { kept: 'old' }) });
    await b.call('hold', 'chat'); // B's object is the old session
    await service.deleteSession(key('chat'));
    expect(await b.call('get', 'chat')).toBeUndefined();
    const fresh = await service.createSession({ ...key('chat'), state: { era: 'new' } });
    await service.appendEvent({ session: fresh, event: event('new-1', 2) });
    await handOver();
    // B's stale object names old-1; the store has never seen it in this session: appended anew.
    await b.call('append', 'chat', { id: 'b1', timestamp: 3, stateDelta: { from: 'b' } });
    const seen = await service.getSession(key('chat'));
    expect(ids(seen)).toEqual(['new-1', 'b1']);
    expect(seen?.state).toEqual({ era: 'new', from: 'b' });
    await handOver();
    await service.deleteSession(key('chat'));
    await expect(b.call('append', 'chat', { id: 'b2', timestamp: 4 })).rejects.toSatisfy((e) =>
      isTidemarkError(e, 'NOT_FOUND'),
    );
    expect(await service.getSession(key('chat'))).toBeUndefined();
  });

  it('keeps every acknowledged event of two racing writers once and in order', {
    timeout: TIMEOUT,
  }, async () => {
    const session: Session = await service.createSession(key('race'));
    const acked: Record<'a' | 'b', string[]> = { a: [], b: [] };
    for (let round = 0; round < 20; round++) {
      const outcomes = await Promise.allSettled([
        service.appendEvent({ session, event: event(`a${round}`, 1000 + round, { [`a${round}`]: round }) }),
        b.call('append', 'race', {
          id: `b${round}`,
          timestamp: 1000 + round,
          stateDelta: { [`b${round}`]: round },
        }),
      ]);
      for (const from of landed(outcomes, backend.name)) acked[from].push(`${from}${round}`);
    }
    const stored = ids(await service.getSession(key('race')));
    expect(ids(await b.call('get', 'race'))).toEqual(stored);
    expect(stored.filter((id) => id.startsWith('a'))).toEqual(acked.a);
    expect(stored.filter((id) => id.startsWith('b'))).toEqual(acked.b);
    expect(stored).toHaveLength(acked.a.length + acked.b.length);
    if (backend.name !== 'jsonl') expect(stored).toHaveLength(40);
    const state = (await service.getSession(key('race')))!.state;
    for (const id of stored) expect(state[id], id).toBe(Number(id.slice(1)));
    expect(ids(await service.getSession({ ...key('race'), config: { numRecentEvents: 5 } }))).toEqual(
      stored.slice(-5),
    );
  });

  it('keeps every acknowledged app: and user: key of two hosts writing shared state at once', {
    timeout: TIMEOUT,
  }, async () => {
    // Each host writes its own session; both write the app's and the user's shared state.
    const mine = await service.createSession(key('a-chat'));
    await b.call('create', 'b-chat');
    const acked: string[] = [];
    for (let round = 0; round < 15; round++) {
      const outcomes = await Promise.allSettled([
        service.appendEvent({
          session: mine,
          event: event(`a${round}`, round, { [`app:a${round}`]: round, [`user:a${round}`]: round }),
        }),
        b.call('append', 'b-chat', {
          id: `b${round}`,
          timestamp: round,
          stateDelta: { [`app:b${round}`]: round, [`user:b${round}`]: round },
        }),
      ]);
      outcomes.forEach((outcome, i) => {
        if (outcome.status === 'fulfilled') acked.push(`${i === 0 ? 'a' : 'b'}${round}`);
        else expect(isTidemarkError(outcome.reason), String(outcome.reason)).toBe(true);
      });
    }
    expect(acked).toHaveLength(30); // different sessions: no writer waits on the other's lock
    const state = (await b.call<{ state: Record<string, unknown> }>('create', 'late')).state;
    for (const id of acked) {
      expect(state[`app:${id}`], `app:${id}`).toBe(Number(id.slice(1)));
      expect(state[`user:${id}`], `user:${id}`).toBe(Number(id.slice(1)));
    }
  });

  it('lets one of two racing createSession calls with one id win', { timeout: TIMEOUT }, async () => {
    for (let i = 0; i < 8; i++) {
      const id = `new-${i}`;
      const outcomes = await Promise.allSettled([
        service.createSession({ ...key(id), state: { by: 'a' } }),
        b.call('create', id, { by: 'b' }),
      ]);
      const won = outcomes.filter((o) => o.status === 'fulfilled');
      expect(won).toHaveLength(1);
      for (const outcome of outcomes)
        if (outcome.status === 'rejected')
          expect(
            ['ALREADY_EXISTS', 'CONFLICT'].some((code) => isTidemarkError(outcome.reason, code as never)),
            String(outcome.reason),
          ).toBe(true);
      const stored = await service.getSession(key(id));
      expect(stored?.state).toEqual((won[0] as PromiseFulfilledResult<{ state: unknown }>).value.state);
    }
    const listed = await b.call<{ sessions: Array<{ id: string }> }>('list', 'u');
    expect(listed.sessions.map((s) => s.id).sort()).toEqual(Array.from({ length: 8 }, (_, i) => `new-${i}`));
  });
});

/** The hosts whose racing append landed; a loser may only be refused with a retryable CONFLICT (JSONL's lock). */
function landed(outcomes: PromiseSettledResult<unknown>[], backend: string): Array<'a' | 'b'> {
  const out: Array<'a' | 'b'> = [];
  outcomes.forEach((outcome, i) => {
    if (outcome.status === 'fulfilled') out.push(i === 0 ? 'a' : 'b');
    else {
      expect(isTidemarkError(outcome.reason, 'CONFLICT'), String(outcome.reason)).toBe(true);
      expect(backend).toBe('jsonl');
    }
  });
  expect(out.length).toBeGreaterThan(0);
  return out;
}
