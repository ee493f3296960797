// The behaviours ADK's own session service tests check (core/test/sessions/ in google/adk-js: the
// in-memory service, the database service and the state write order), restated in our words and
// run against ADK's InMemorySessionService (the control) and TidemarkSessionService on every
// backend. The cases the control fails are listed in CONTROL_FAILS, each with why; for the control
// they run as expected failures, so a change in ADK's behaviour shows up here.
import {
  type BaseSessionService,
  createEvent,
  createEventActions,
  InMemorySessionService,
  State,
} from '@google/adk';
import { isTidemarkError } from '@tidemark/core';
import { testBackends } from '@tidemark/test-hosts';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { TidemarkSessionService } from '../src/index.js';

interface Target {
  name: string;
  open(): Promise<BaseSessionService>;
  cleanup(): Promise<void>;
  control: boolean;
}

/** Cases ADK's InMemorySessionService fails, and why. */
const CONTROL_FAILS: Record<string, string> = {
  'rejects a second session with the same id':
    'the in-memory service overwrites the stored session (the database service rejects it)',
  'rejects an event for a session that is not stored':
    'the in-memory service logs a warning and returns the event as if appended',
  'shares app: and user: keys of the initial state':
    'the in-memory service keeps them in that session only; only appendEvent writes shared state',
  'returns only events strictly after afterTimestamp':
    'the in-memory service includes an event whose timestamp equals afterTimestamp',
};

const targets: Target[] = [
  {
    name: 'InMemorySessionService (control)',
    open: async () => new InMemorySessionService(),
    cleanup: async () => undefined,
    control: true,
  },
  ...(await testBackends('adk')).map((backend) => ({
    name: `TidemarkSessionService on ${backend.name}`,
    open: async () => new TidemarkSessionService({ store: await backend.open() }),
    cleanup: backend.cleanup,
    control: false,
  })),
];

const delta = (stateDelta: Record<string, unknown>, timestamp = Date.now()) =>
  createEvent({ timestamp, actions: createEventActions({ stateDelta }) });

describe.each(targets)('$name', (target) => {
  let service: BaseSessionService;
  beforeEach(async () => {
    service = await target.open();
  });
  afterAll(() => target.cleanup());
  const test = (name: string, body: () => Promise<void>) =>
    target.control && name in CONTROL_FAILS
      ? it.fails(`${name} (fails: ${CONTROL_FAILS[name]})`, body)
      : it(name, body);

  describe('createSession', () => {
    test('returns the new session with its key, state and no events', async () => {
      const session = await service.createSession({ appName: 'app', userId: 'u', state: { key: 'value' } });
      expect(typeof session.id).toBe('string');
      expect(session.id.length).toBeGreaterThan(0);
      expect(session).toMatchObject({ appName: 'app', userId: 'u', state: { key: 'value' }, events: [] });
      expect(typeof session.lastUpdateTime).toBe('number');
    });

    test('keeps a session id the caller chose', async () => {
      const session = await service.createSession({ appName: 'app', userId: 'u', sessionId: 'chosen-id' });
      expect(session.id).toBe('chosen-id');
      expect((await service.getSession({ appName: 'app', userId: 'u', sessionId: 'chosen-id' }))?.id).toBe(
        'chosen-id',
      );
    });

    test('drops temp: keys of the initial state', async () => {
      const session = await service.createSession({
        appName: 'app',
        userId: 'u',
        state: { kept: 1, 'temp:gone': 2 },
      });
      expect(session.state).toEqual({ kept: 1 });
      const stored = await service.getSession({ appName: 'app', userId: 'u', sessionId: session.id });
      expect(stored?.state).toEqual({ kept: 1 });
    });

    test('gives a new session the app and user state other sessions wrote', async () => {
      const first = await service.createSession({ appName: 'app', userId: 'u' });
      await service.appendEvent({ session: first, event: delta({ 'app:a': 'A', 'user:b': 'B' }) });
      const second = await service.createSession({ appName: 'app', userId: 'u' });
      expect(second.state).toEqual({ 'app:a': 'A', 'user:b': 'B' });
      const otherUser = await service.createSession({ appName: 'app', userId: 'v' });
      expect(otherUser.state).toEqual({ 'app:a': 'A' });
    });

    test('shares app: and user: keys of the initial state', async () => {
      await service.createSession({
        appName: 'app',
        userId: 'u1',
        sessionId: 's1',
        state: { 'app:mode': 'dark', 'user:pref': 'A' },
      });
      const s2 = await service.createSession({ appName: 'app', userId: 'u1', sessionId: 's2' });
      expect(s2.state).toMatchObject({ 'app:mode': 'dark', 'user:pref': 'A' });
      const s3 = await service.createSession({ appName: 'app', userId: 'u2', sessionId: 's3' });
      expect(s3.state['app:mode']).toBe('dark');
      expect(s3.state['user:pref']).toBeUndefined();
    });

    test('rejects a second session with the same id', async () => {
      await service.createSession({ appName: 'app', userId: 'u', sessionId: 'twice', state: { v: 1 } });
      const again = service.createSession({
        appName: 'app',
        userId: 'u',
        sessionId: 'twice',
        state: { v: 2 },
      });
      await expect(again).rejects.toThrow(/already exists/);
      expect((await service.getSession({ appName: 'app', userId: 'u', sessionId: 'twice' }))?.state).toEqual({
        v: 1,
      });
    });
  });

  describe('getSession', () => {
    test('answers undefined for a session that is not stored', async () => {
      expect(await service.getSession({ appName: 'app', userId: 'u', sessionId: 'nobody' })).toBeUndefined();
    });

    test('keeps sessions of different apps and users apart', async () => {
      await service.createSession({ appName: 'app', userId: 'u', sessionId: 's', state: { who: 'u' } });
      expect(await service.getSession({ appName: 'app', userId: 'v', sessionId: 's' })).toBeUndefined();
      expect(await service.getSession({ appName: 'other', userId: 'u', sessionId: 's' })).toBeUndefined();
    });

    test('returns the last numRecentEvents events', async () => {
      const session = await service.createSession({ appName: 'app', userId: 'u' });
      for (let i = 0; i < 5; i++)
        await service.appendEvent({ session, event: createEvent({ timestamp: i }) });
      const got = await service.getSession({
        appName: 'app',
        userId: 'u',
        sessionId: session.id,
        config: { numRecentEvents: 2 },
      });
      expect(got?.events.map((e) => e.timestamp)).toEqual([3, 4]);
    });

    test('returns the events after afterTimestamp', async () => {
      const session = await service.createSession({ appName: 'app', userId: 'u' });
      for (let i = 0; i < 5; i++)
        await service.appendEvent({ session, event: createEvent({ timestamp: i * 1000 }) });
      const got = await service.getSession({
        appName: 'app',
        userId: 'u',
        sessionId: session.id,
        config: { afterTimestamp: 2500 },
      });
      expect(got?.events.map((e) => e.timestamp)).toEqual([3000, 4000]);
    });

    test('returns only events strictly after afterTimestamp', async () => {
      const session = await service.createSession({ appName: 'app', userId: 'u' });
      const now = Date.now();
      const events = [
        createEvent({ timestamp: now - 1000 }),
        createEvent({ timestamp: now }),
        createEvent({ timestamp: now + 1000 }),
      ];
      for (const event of events) await service.appendEvent({ session, event });
      const key = { appName: 'app', userId: 'u', sessionId: session.id };
      const recent = await service.getSession({ ...key, config: { numRecentEvents: 2 } });
      expect(recent?.events.map((e) => e.id)).toEqual([events[1]!.id, events[2]!.id]);
      const after = await service.getSession({ ...key, config: { afterTimestamp: now - 100 } });
      expect(after?.events.map((e) => e.id)).toEqual([events[1]!.id, events[2]!.id]);
      const strictly = await service.getSession({ ...key, config: { afterTimestamp: now } });
      expect(strictly?.events.map((e) => e.id)).toEqual([events[2]!.id]);
    });

    test('returns events in the order they were appended, not by timestamp', async () => {
      const session = await service.createSession({ appName: 'app', userId: 'u' });
      for (const timestamp of [3000, 1000, 2000, 2000])
        await service.appendEvent({ session, event: createEvent({ timestamp }) });
      const key = { appName: 'app', userId: 'u', sessionId: session.id };
      expect((await service.getSession(key))?.events.map((e) => e.timestamp)).toEqual([
        3000, 1000, 2000, 2000,
      ]);
      const recent = await service.getSession({ ...key, config: { numRecentEvents: 3 } });
      expect(recent?.events.map((e) => e.timestamp)).toEqual([1000, 2000, 2000]);
      expect(recent?.lastUpdateTime).toBe(2000);
    });

    test('keeps sub-second timestamps and their order', async () => {
      const session = await service.createSession({ appName: 'app', userId: 'u' });
      const second = Math.floor(Date.now() / 1000) * 1000;
      const stamps = [second + 200, second + 400, second + 600];
      for (const [i, timestamp] of stamps.entries())
        await service.appendEvent({ session, event: createEvent({ invocationId: `inv-${i}`, timestamp }) });
      const key = { appName: 'app', userId: 'u', sessionId: session.id };
      expect((await service.getSession(key))?.events.map((e) => e.timestamp)).toEqual(stamps);
      const after = await service.getSession({ ...key, config: { afterTimestamp: second + 300 } });
      expect(after?.events.map((e) => e.timestamp)).toEqual(stamps.slice(1));
    });

    test('merges the current app state into the session it returns', async () => {
      const session = await service.createSession({ appName: 'app', userId: 'u' });
      await service.appendEvent({ session, event: delta({ 'app:key': 'new' }) });
      const got = await service.getSession({ appName: 'app', userId: 'u', sessionId: session.id });
      expect(got?.state).toEqual({ 'app:key': 'new' });
    });
  });

  describe('listSessions', () => {
    const appName = 'app';
    const userId = 'u';
    const make = async (ids: string[], stamps?: number[]) => {
      for (const [i, sessionId] of ids.entries()) {
        const session = await service.createSession({ appName, userId, sessionId });
        if (stamps !== undefined)
          await service.appendEvent({ session, event: createEvent({ timestamp: stamps[i]! }) });
      }
    };

    test('answers an empty page when there are no sessions', async () => {
      expect(await service.listSessions({ appName, userId })).toEqual({
        sessions: [],
        page: 1,
        limit: 0,
        totalItems: 0,
        totalPages: 0,
      });
      expect(await service.listSessions({ appName, userId, limit: 10 })).toEqual({
        sessions: [],
        page: 1,
        limit: 10,
        totalItems: 0,
        totalPages: 0,
      });
    });

    test('lists sessions without their events, all on page 1 without paging', async () => {
      await make(['s1', 's2']);
      const response = await service.listSessions({ appName, userId });
      expect(response.sessions.map((s) => s.id).sort()).toEqual(['s1', 's2']);
      for (const s of response.sessions) expect(s.events).toEqual([]);
      expect(response).toMatchObject({ page: 1, limit: 2, totalItems: 2, totalPages: 1 });
    });

    test('lists only the sessions of the user and app asked for', async () => {
      await service.createSession({ appName: 'app1', userId: 'u1', sessionId: 's1' });
      await service.createSession({ appName: 'app1', userId: 'u2', sessionId: 's2' });
      await service.createSession({ appName: 'app2', userId: 'u1', sessionId: 's3' });
      expect(
        (await service.listSessions({ appName: 'app1', userId: 'u1' })).sessions.map((s) => s.id),
      ).toEqual(['s1']);
      expect((await service.listSessions({ appName: 'app1' })).sessions.map((s) => s.id).sort()).toEqual([
        's1',
        's2',
      ]);
    });

    test('orders by last update time, oldest or newest first', async () => {
      await make(['s1', 's2', 's3'], [3000, 1000, 2000]);
      expect(
        (await service.listSessions({ appName, userId, order: 'asc' })).sessions.map((s) => s.id),
      ).toEqual(['s2', 's3', 's1']);
      expect(
        (await service.listSessions({ appName, userId, order: 'desc' })).sessions.map((s) => s.id),
      ).toEqual(['s1', 's3', 's2']);
    });

    test('breaks ties by id in both orders', async () => {
      await make(['s1', 's2'], [1000, 1000]);
      expect(
        (await service.listSessions({ appName, userId, order: 'asc' })).sessions.map((s) => s.id),
      ).toEqual(['s1', 's2']);
      expect(
        (await service.listSessions({ appName, userId, order: 'desc' })).sessions.map((s) => s.id),
      ).toEqual(['s1', 's2']);
    });

    test('pages by limit, offset and page, page before offset', async () => {
      await make(['s1', 's2', 's3', 's4', 's5'], [1000, 2000, 3000, 4000, 5000]);
      const limited = await service.listSessions({ appName, userId, limit: 3, order: 'asc' });
      expect(limited).toMatchObject({ limit: 3, totalItems: 5, totalPages: 2 });
      expect(limited.sessions).toHaveLength(3);
      const offset = await service.listSessions({ appName, userId, limit: 2, offset: 1, order: 'asc' });
      expect(offset.sessions.map((s) => s.id)).toEqual(['s2', 's3']);
      const page = await service.listSessions({
        appName,
        userId,
        page: 2,
        limit: 2,
        offset: 0,
        order: 'asc',
      });
      expect(page.sessions.map((s) => s.id)).toEqual(['s3', 's4']);
      expect(page).toMatchObject({ page: 2, limit: 2, totalItems: 5, totalPages: 3 });
    });

    test('answers an empty page past the end, and limit 0 with no pages', async () => {
      await make(['s1']);
      expect(await service.listSessions({ appName, userId, limit: 2, offset: 10 })).toMatchObject({
        sessions: [],
        totalItems: 1,
        totalPages: 1,
      });
      expect(await service.listSessions({ appName, userId, limit: 0 })).toMatchObject({
        sessions: [],
        totalItems: 1,
        totalPages: 0,
      });
    });

    test('sorts without a limit and answers one page', async () => {
      await make(['s1', 's2'], [2000, 1000]);
      const response = await service.listSessions({ appName, userId, order: 'desc' });
      expect(response.sessions.map((s) => s.id)).toEqual(['s1', 's2']);
      expect(response).toMatchObject({ page: 1, limit: 2, totalItems: 2, totalPages: 1 });
    });
  });

  describe('deleteSession', () => {
    test('deletes a stored session', async () => {
      const session = await service.createSession({ appName: 'app', userId: 'u' });
      await service.deleteSession({ appName: 'app', userId: 'u', sessionId: session.id });
      expect(
        await service.getSession({ appName: 'app', userId: 'u', sessionId: session.id }),
      ).toBeUndefined();
      expect((await service.listSessions({ appName: 'app', userId: 'u' })).sessions).toEqual([]);
    });

    test('does nothing for a session that is not stored', async () => {
      await expect(
        service.deleteSession({ appName: 'app', userId: 'u', sessionId: 'nobody' }),
      ).resolves.toBeUndefined();
    });
  });

  describe('appendEvent', () => {
    test('stores the event and moves lastUpdateTime to its timestamp', async () => {
      const session = await service.createSession({ appName: 'app', userId: 'u' });
      const event = createEvent({ timestamp: Date.now() + 1000 });
      await service.appendEvent({ session, event });
      expect(session.lastUpdateTime).toBe(event.timestamp);
      const got = await service.getSession({ appName: 'app', userId: 'u', sessionId: session.id });
      expect(got?.events).toEqual([event]);
      expect(got?.lastUpdateTime).toBe(event.timestamp);
    });

    test('applies the state delta to the session object and the stored session', async () => {
      const session = await service.createSession({ appName: 'app', userId: 'u', state: { count: 0 } });
      await service.appendEvent({ session, event: delta({ count: 1, 'app:global': 'value' }) });
      expect(session.state).toMatchObject({ count: 1, 'app:global': 'value' });
      const got = await service.getSession({ appName: 'app', userId: 'u', sessionId: session.id });
      expect(got?.state).toEqual({ count: 1, 'app:global': 'value' });
      expect(got?.events).toHaveLength(1);
    });

    test('shares app state with every user and user state with the same user only', async () => {
      await service.createSession({ appName: 'app', userId: 'u1', sessionId: 's1' });
      const s2 = await service.createSession({ appName: 'app', userId: 'u1', sessionId: 's2' });
      await service.appendEvent({ session: s2, event: delta({ 'app:config': 'light', 'user:pref': 'B' }) });
      expect((await service.getSession({ appName: 'app', userId: 'u1', sessionId: 's1' }))?.state).toEqual({
        'app:config': 'light',
        'user:pref': 'B',
      });
      const s3 = await service.createSession({ appName: 'app', userId: 'u2', sessionId: 's3' });
      expect(s3.state).toEqual({ 'app:config': 'light' });
    });

    test('strips temp: keys from the stored event and the state', async () => {
      const session = await service.createSession({ appName: 'app', userId: 'u' });
      const returned = await service.appendEvent({
        session,
        event: delta({ keep: 'me', 'temp:hide': 'me' }),
      });
      expect(returned.actions.stateDelta).toEqual({ keep: 'me' });
      const got = await service.getSession({ appName: 'app', userId: 'u', sessionId: session.id });
      expect(got?.events[0]?.actions.stateDelta).toEqual({ keep: 'me' });
      expect(got?.state).toEqual({ keep: 'me' });
    });

    test('does not store a partial event', async () => {
      const session = await service.createSession({ appName: 'app', userId: 'u' });
      const partial = createEvent({ partial: true, actions: createEventActions({ stateDelta: { x: 1 } }) });
      expect(await service.appendEvent({ session, event: partial })).toBe(partial);
      const got = await service.getSession({ appName: 'app', userId: 'u', sessionId: session.id });
      expect(got?.events).toEqual([]);
      expect(got?.state).toEqual({});
    });

    test('replaces an event appended again with the same id, in its place', async () => {
      const session = await service.createSession({ appName: 'app', userId: 'u' });
      const first = createEvent({ timestamp: 1, invocationId: 'v1' });
      await service.appendEvent({ session, event: first });
      await service.appendEvent({ session, event: createEvent({ timestamp: 2 }) });
      const again = {
        ...first,
        invocationId: 'v2',
        actions: createEventActions({ stateDelta: { seen: 2 } }),
      };
      await service.appendEvent({ session, event: again });
      expect(session.events.map((e) => e.invocationId)).toEqual(['v2', '']);
      const got = await service.getSession({ appName: 'app', userId: 'u', sessionId: session.id });
      expect(got?.events.map((e) => e.invocationId)).toEqual(['v2', '']);
      expect(got?.state).toEqual({ seen: 2 });
    });

    test('rejects an event for a session that is not stored', async () => {
      const ghost = { id: 'missing', appName: 'app', userId: 'u', state: {}, events: [], lastUpdateTime: 0 };
      await expect(service.appendEvent({ session: ghost, event: createEvent() })).rejects.toThrow(/not/);
    });

    test('does not roll a key back when an older write commits after a newer one', async () => {
      const session = await service.createSession({ appName: 'app', userId: 'u' });
      const early: Record<string, unknown> = {};
      new State(session.state, early).set('key', 'early');
      const late: Record<string, unknown> = {};
      new State(session.state, late).set('key', 'late');
      await service.appendEvent({
        session,
        event: createEvent({ actions: createEventActions({ stateDelta: early }) }),
      });
      expect(session.state.key).toBe('late');
      await service.appendEvent({
        session,
        event: createEvent({ actions: createEventActions({ stateDelta: late }) }),
      });
      expect(session.state.key).toBe('late');
      expect(
        (await service.getSession({ appName: 'app', userId: 'u', sessionId: session.id }))?.state.key,
      ).toBe('late');
    });
  });

  describe('keys named like prototype properties', () => {
    const parse = (json: string) => JSON.parse(json) as Record<string, unknown>;

    test('stores an app and a user named __proto__ without touching Object.prototype', async () => {
      await service.createSession({ appName: '__proto__', userId: 'polluted', sessionId: 'sid', state: {} });
      const session = await service.createSession({ appName: 'app1', userId: '__proto__', sessionId: 's1' });
      await service.appendEvent({
        session,
        event: delta({ 'user:httpOptions': { baseUrl: 'https://evil.test' }, 'app:pwned': 1 }),
      });
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(({} as Record<string, unknown>).httpOptions).toBeUndefined();
      expect(({} as Record<string, unknown>).pwned).toBeUndefined();
      expect(
        (await service.getSession({ appName: '__proto__', userId: 'polluted', sessionId: 'sid' }))?.id,
      ).toBe('sid');
      expect((await service.listSessions({ appName: 'polluted', userId: 'polluted' })).sessions).toEqual([]);
    });

    test('keeps a __proto__ state key as data, never as a prototype', async () => {
      const session = await service.createSession({
        appName: 'app1',
        userId: 'u1',
        sessionId: 's1',
        state: parse('{"__proto__": {"isAdmin": true}}'),
      });
      expect(new State(session.state).get('isAdmin')).toBeUndefined();
      expect(Object.getOwnPropertyDescriptor(session.state, '__proto__')?.value).toEqual({ isAdmin: true });
      await service.appendEvent({ session, event: delta({ 'user:__proto__': { baseUrl: 'x' } }) });
      const sibling = await service.createSession({ appName: 'app1', userId: 'u1', sessionId: 's2' });
      expect(sibling.state['user:__proto__']).toEqual({ baseUrl: 'x' });
      const stored = await service.getSession({ appName: 'app1', userId: 'u1', sessionId: 's1' });
      expect(new State(stored!.state).get('isAdmin')).toBeUndefined();
      expect(Object.getOwnPropertyDescriptor(stored?.state, '__proto__')?.value).toEqual({ isAdmin: true });
    });
  });
});

describe('TidemarkSessionService errors', async () => {
  const [memory] = await testBackends('adk');
  test2('rejects a duplicate session with ALREADY_EXISTS and a missing one with NOT_FOUND', async () => {
    const service = new TidemarkSessionService({ store: await memory!.open() });
    await service.createSession({ appName: 'a', userId: 'u', sessionId: 's' });
    await expect(service.createSession({ appName: 'a', userId: 'u', sessionId: 's' })).rejects.toSatisfy(
      (e) => isTidemarkError(e, 'ALREADY_EXISTS'),
    );
    const ghost = { id: 'ghost', appName: 'a', userId: 'u', state: {}, events: [], lastUpdateTime: 0 };
    await expect(service.appendEvent({ session: ghost, event: createEvent() })).rejects.toSatisfy((e) =>
      isTidemarkError(e, 'NOT_FOUND'),
    );
  });
});

function test2(name: string, body: () => Promise<void>) {
  it(name, body);
}
