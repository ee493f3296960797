// Every session service operation meets a failing store at each of its storage steps, the fault
// lasting one step or every step from there on. A long-lived service runs the operation. Then,
// with the fault lifted: the call either succeeded with the right answer or rejected with a
// TidemarkError (never an undefined session, a short list or an event reported stored that is
// not); the store is as before the call or as after it (or, for a write of shared keys, at one of
// the documented points between: shared state written, the session's event not yet); a fresh
// service sees what the long-lived one sees; a retried write applies once; the store takes the
// next event.
import { createEvent, createEventActions, type Event, type Session } from '@google/adk';
import { isTidemarkError } from '@tidemark/core';
import { MemoryVolume, openMemoryStore } from '@tidemark/memory';
import { describe, expect, it } from 'vitest';
import { TidemarkSessionService } from '../src/index.js';
import { appStateLog, userStateLog } from '../src/keys.js';
import type { JsonObject } from '../src/records.js';
import { writeShared } from '../src/shared-state.js';

const APP = 'app';
const USER = 'u';
const key = (sessionId: string) => ({ appName: APP, userId: USER, sessionId });
const event = (id: string, timestamp: number, stateDelta: Record<string, unknown> = {}): Event =>
  createEvent({ id, timestamp, invocationId: `inv-${id}`, actions: createEventActions({ stateDelta }) });

interface Operation {
  call: (s: TidemarkSessionService, session: Session) => Promise<unknown>;
  /** A write: after a failure the caller retries it, and it applies once. */
  write?: boolean;
  /** Shared keys it writes before the session's batch: the states a crash between may leave. */
  shared?: { app?: Record<string, unknown>; user?: Record<string, unknown> };
}

const OPERATIONS: Record<string, Operation> = {
  createSession: { call: (s) => s.createSession({ ...key('new'), state: { x: 1 } }), write: true },
  'createSession with shared state': {
    call: (s) => s.createSession({ ...key('new'), state: { x: 1, 'app:theme': 'dark', 'user:lang': 'en' } }),
    write: true,
    shared: { app: { theme: 'dark' }, user: { lang: 'en' } },
  },
  getSession: { call: (s) => s.getSession(key('main')) },
  'getSession(numRecentEvents)': {
    call: (s) => s.getSession({ ...key('long'), config: { numRecentEvents: 3 } }),
  },
  'getSession(afterTimestamp)': {
    call: (s) => s.getSession({ ...key('main'), config: { afterTimestamp: 1002 } }),
  },
  'listSessions of a user': { call: (s) => s.listSessions({ appName: APP, userId: USER, order: 'desc' }) },
  'listSessions of an app': {
    call: (s) => s.listSessions({ appName: APP, limit: 2, page: 1, order: 'asc' }),
  },
  deleteSession: { call: (s) => s.deleteSession(key('side')), write: true },
  appendEvent: { call: (s, session) => s.appendEvent({ session, event: event('e-new', 2000) }), write: true },
  'appendEvent with state': {
    call: (s, session) => s.appendEvent({ session, event: event('e-new', 2000, { count: 9, 'temp:t': 1 }) }),
    write: true,
  },
  'appendEvent with shared state': {
    call: (s, session) =>
      s.appendEvent({
        session,
        event: event('e-new', 2000, { count: 9, 'app:theme': 'light', 'user:lang': 'fr' }),
      }),
    write: true,
    shared: { app: { theme: 'light' }, user: { lang: 'fr' } },
  },
  'appendEvent replacing an event': {
    call: (s, session) => s.appendEvent({ session, event: event('e1', 1001, { count: 5 }) }),
    write: true,
  },
  'appendEvent writing a snapshot': {
    call: async (s) => {
      const long = (await s.getSession({ ...key('long'), config: { numRecentEvents: 1 } }))!;
      return s.appendEvent({ session: long, event: event('l-new', 5000, { n: 'last' }) });
    },
    write: true,
  },
};

/** Plain JSON of a value (events lose ADK's symbol brand); times set by the clock become 'now'. */
const plain = (value: unknown): unknown =>
  value === undefined
    ? undefined
    : JSON.parse(JSON.stringify(value, (k, v) => (k === 'lastUpdateTime' && v > 1e12 ? 'now' : v)));

/** What a service sees of the store. */
async function observe(s: TidemarkSessionService): Promise<unknown> {
  return plain({
    main: await s.getSession(key('main')),
    mainTail: await s.getSession({ ...key('main'), config: { numRecentEvents: 2 } }),
    long: await s.getSession({ ...key('long'), config: { numRecentEvents: 3 } }),
    longWhole: await s.getSession(key('long')),
    side: await s.getSession(key('side')),
    added: await s.getSession(key('new')),
    list: await s.listSessions({ appName: APP, userId: USER, order: 'asc' }),
    other: (await s.listSessions({ appName: APP })).totalItems,
  });
}

/** A fresh volume: a session with shared and own state, a sibling, and a session one event short of a snapshot. */
async function seeded(): Promise<MemoryVolume> {
  const volume = new MemoryVolume();
  const s = new TidemarkSessionService({ store: await openMemoryStore({ volume }) });
  const main = await s.createSession({ ...key('main'), state: { count: 0 } });
  await s.appendEvent({ session: main, event: event('e1', 1001, { count: 1, 'app:theme': 'plain' }) });
  await s.appendEvent({ session: main, event: event('e2', 1002, { 'user:lang': 'de' }) });
  await s.appendEvent({ session: main, event: event('e3', 1003) });
  const side = await s.createSession(key('side'));
  await s.appendEvent({ session: side, event: event('s1', 1500) });
  const long = await s.createSession(key('long'));
  for (let i = 0; i < 31; i++)
    await s.appendEvent({ session: long, event: event(`l${i}`, 3000 + i, { n: i }) });
  return volume;
}

async function faultyService(volume: MemoryVolume, plan: { at: number; lasting: boolean } | undefined) {
  let steps = 0;
  let armed = false;
  const store = await openMemoryStore({
    volume,
    beforeStorageStep: () => {
      if (!armed) return;
      steps++;
      if (plan !== undefined && (steps === plan.at || (plan.lasting && steps > plan.at)))
        throw Object.assign(new Error('injected fault'), { code: 'EIO' });
    },
  });
  const service = new TidemarkSessionService({ store });
  return { service, arm: () => (armed = true), disarm: () => (armed = false), steps: () => steps };
}

const fresh = async (volume: MemoryVolume) =>
  new TidemarkSessionService({ store: await openMemoryStore({ volume }) });

async function run(name: string, plan: { at: number; lasting: boolean } | undefined) {
  const volume = await seeded();
  const faulty = await faultyService(volume, plan);
  const session = (await faulty.service.getSession(key('main')))!; // the caller's session object
  faulty.arm();
  const outcome = await OPERATIONS[name]!.call(faulty.service, session).then(
    (value) => ({ ok: true as const, value: plain(value) }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  faulty.disarm();
  return { volume, service: faulty.service, session, outcome, steps: faulty.steps() };
}

/** The states a failed write of shared keys may leave: app state written; app and user state written. */
async function sharedPoints(shared: NonNullable<Operation['shared']>): Promise<unknown[]> {
  const points: unknown[] = [];
  for (const upTo of ['app', 'user'] as const) {
    const volume = await seeded();
    const store = await openMemoryStore({ volume });
    if (shared.app)
      await writeShared(store, appStateLog(APP), shared.app as JsonObject, { scope: 'app', appName: APP });
    if (upTo === 'user' && shared.user)
      await writeShared(store, userStateLog(APP, USER), shared.user as JsonObject, {
        scope: 'user',
        appName: APP,
        userId: USER,
      });
    points.push(await observe(await fresh(volume)));
  }
  return points;
}

describe.each(Object.keys(OPERATIONS))('%s under a storage fault', (name) => {
  it('rejects with a typed error or succeeds, and leaves the store before or after it', {
    timeout: 300_000,
  }, async () => {
    const operation = OPERATIONS[name]!;
    const before = await observe(await fresh(await seeded()));
    const clean = await run(name, undefined);
    expect(clean.outcome.ok, String(!clean.outcome.ok && clean.outcome.error)).toBe(true);
    const after = await observe(await fresh(clean.volume));
    if (operation.write === true) expect(after).not.toEqual(before);
    const allowed = [before, after, ...(operation.shared ? await sharedPoints(operation.shared) : [])];
    let failures = 0;
    for (let at = 1; at <= clean.steps; at++) {
      for (const lasting of [false, true]) {
        const { volume, service, session, outcome } = await run(name, { at, lasting });
        const where = `step ${at}${lasting ? ' and on' : ''}`;
        if (outcome.ok) expect(outcome.value, where).toEqual(clean.outcome.ok && clean.outcome.value);
        else {
          failures++;
          expect(isTidemarkError(outcome.error, 'IO'), `${where}: ${String(outcome.error)}`).toBe(true);
        }
        const seen = await observe(await fresh(volume));
        if (outcome.ok) expect(seen, where).toEqual(after);
        else expect(allowed, where).toContainEqual(seen);
        expect(await observe(service), `${where}: the long-lived service`).toEqual(seen);
        if (!outcome.ok && operation.write === true) {
          // What a caller does after an error: the same call again, applied once.
          await operation.call(service, session).catch((error: unknown) => {
            if (!isTidemarkError(error, 'ALREADY_EXISTS')) throw error;
          });
          expect(await observe(await fresh(volume)), `${where}: retried`).toEqual(after);
        }
        const probeSession = (await service.getSession(key('main')))!;
        await service.appendEvent({ session: probeSession, event: event('probe', 9000) });
        const probed = await (await fresh(volume)).getSession({
          ...key('main'),
          config: { numRecentEvents: 1 },
        });
        expect(
          probed?.events.map((e) => e.id),
          where,
        ).toEqual(['probe']);
      }
    }
    expect(failures).toBeGreaterThan(0);
  });
});
