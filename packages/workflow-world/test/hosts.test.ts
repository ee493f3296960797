// Two processes over one shared store (one SQLite file, one PostgreSQL schema), each with its own
// long-lived World, as the workers of a deployment keep them: this process is host A, a child
// process is host B. A World caches each run's fold as a hint; whatever one host appends, the
// other's next call sees, and a write planned on a view the other host has moved past is planned
// again on the log as it is. Racing writers: every acknowledged event is in the log once, in the
// order its host was answered, and both hosts read the same log.
//
// JSONL is left out: there one process writes a run at a time (the session's writer lock), which
// the README says; racing on it measures the lock hand-over, not the World.
import type { SessionStore } from '@tidemark/core';
import { type Host, openStoreAt, type SharedStore, sharedBackends, startHost } from '@tidemark/test-hosts';
import type { AnyEventRequest, World } from '@workflow/world';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { create, newRunId, req, worldOn } from './world-fixtures.js';

const HOST = new URL('./fixtures/world-host.mjs', import.meta.url);
const TIMEOUT = 120_000;
type Outcome =
  | { ok: true; value: { eventId: string; eventType: string; correlationId?: string } }
  | { ok: false; name: string; code?: string };
type Listed = { eventId: string; eventType: string; correlationId?: string };

const shared = (await sharedBackends()).filter((backend) => backend.name !== 'jsonl');

describe.each(shared)('two hosts over one $name store', (backend) => {
  let place: SharedStore;
  let store: SessionStore;
  let a: World;
  let b: Host;
  const listA = async (runId: string): Promise<Listed[]> =>
    (await a.events.list({ runId, pagination: { limit: 1000 } })).data.map((e) => ({
      eventId: e.eventId,
      eventType: e.eventType,
      correlationId: e.correlationId,
    }));

  beforeEach(async () => {
    place = await backend.create();
    store = await openStoreAt(place.address);
    a = worldOn(store);
    b = await startHost(place.address, HOST);
  }, TIMEOUT);
  afterEach(async () => {
    await b.close();
    await store.close();
    await place.cleanup();
  }, TIMEOUT);

  it('sees on A what B wrote after A cached the run, and plans on it', { timeout: TIMEOUT }, async () => {
    const run = newRunId();
    for (const r of [req.runCreated(), req.runStarted(), req.stepCreated('s1')]) await create(a, run, r);
    expect((await a.steps.get(run, 's1')).status).toBe('pending'); // A's view of the run is cached
    expect(
      await b.call<Outcome[]>('createAll', run, [req.stepStarted('s1'), req.stepCompleted('s1')]),
    ).toMatchObject([{ ok: true }, { ok: true }]);
    expect(await a.steps.get(run, 's1')).toMatchObject({ status: 'completed', attempt: 1 });
    // A's cache said pending: a completion planned on it would be a second one. It is refused.
    await expect(create(a, run, req.stepCompleted('s1'))).rejects.toMatchObject({
      name: 'EntityConflictError',
    });
    await create(a, run, req.runCompleted());
    expect(await b.call('run', run)).toEqual({ ok: true, value: 'completed' });
    expect(await b.call<Outcome>('create', run, req.stepCreated('late'))).toMatchObject({
      ok: false,
      name: 'EntityConflictError',
    });
    expect(await b.call('events', run)).toEqual(await listA(run));
  });

  it('gives A, from the cursor of its last list, exactly the events B wrote since', {
    timeout: TIMEOUT,
  }, async () => {
    // The runtime's incremental load: a replay on A after B completed a step reads from the cursor
    // its previous load ended with (the last page's, see paging.ts).
    const run = newRunId();
    for (const r of [req.runCreated(), req.runStarted(), req.stepCreated('s1')]) await create(a, run, r);
    const before = await a.events.list({ runId: run, pagination: { sortOrder: 'asc' } });
    expect(before).toMatchObject({ hasMore: false, cursor: expect.any(String) });
    const written = await b.call<Outcome[]>('createAll', run, [
      req.stepStarted('s1'),
      req.stepCompleted('s1'),
    ]);
    expect(written).toMatchObject([{ ok: true }, { ok: true }]);
    const since = await a.events.list({
      runId: run,
      pagination: { sortOrder: 'asc', cursor: before.cursor as string },
    });
    expect(since.data.map((e) => e.eventId)).toEqual(
      written.map((o) => (o.ok ? o.value.eventId : 'refused')),
    );
    expect(since.data.map((e) => e.eventType)).toEqual(['step_started', 'step_completed']);
  });

  it('keeps every acknowledged event of two racing writers once, in the order each was answered', {
    timeout: TIMEOUT,
  }, async () => {
    const run = newRunId();
    await create(a, run, req.runCreated());
    await create(a, run, req.runStarted());
    const steps = (host: string) => Array.from({ length: 25 }, (_, i) => req.stepCreated(`${host}-${i}`));
    const [fromB, fromA] = await Promise.all([
      b.call<Outcome[]>('createAll', run, steps('b')),
      (async () => {
        const out: Outcome[] = [];
        for (const r of steps('a'))
          out.push(await create(a, run, r).then((x) => ({ ok: true as const, value: x.event as Listed })));
        return out;
      })(),
    ]);
    const log = await listA(run);
    expect(await b.call('events', run)).toEqual(log);
    for (const [host, outcomes] of [
      ['a', fromA],
      ['b', fromB],
    ] as const) {
      const acknowledged = outcomes.flatMap((o) => (o.ok ? [o.value.eventId] : []));
      expect(acknowledged, `${host}: every create was acknowledged`).toHaveLength(25);
      const positions = acknowledged.map((id) => log.findIndex((e) => e.eventId === id));
      expect(
        positions.every((p) => p >= 0),
        `${host}: every acknowledged event is in the log`,
      ).toBe(true);
      expect(
        [...positions].sort((x, y) => x - y),
        `${host}: in the order it was answered`,
      ).toEqual(positions);
    }
    expect(new Set(log.map((e) => e.eventId)).size).toBe(log.length);
    expect(log).toHaveLength(2 + 50);
  });

  it('lets one of two racing hosts create a step, complete a run and hold a token', {
    timeout: TIMEOUT,
  }, async () => {
    const run = newRunId();
    const other = newRunId();
    for (const r of [req.runCreated(), req.runStarted()]) {
      await create(a, run, r);
      await create(a, other, r);
    }
    const race = async (runOnA: string, runOnB: string, request: AnyEventRequest, requestB = request) => {
      const [onA, onB] = await Promise.all([
        create(a, runOnA, request).then(
          (x) => ({ ok: true as const, value: x.event as Listed }),
          (e: Error) => ({ ok: false as const, name: e.name }),
        ),
        b.call<Outcome>('create', runOnB, requestB),
      ]);
      return [onA, onB] as Outcome[];
    };
    for (let i = 0; i < 10; i++) {
      const outcomes = await race(run, run, req.stepCreated(`same-${i}`));
      expect(
        outcomes.filter((o) => o.ok),
        `step same-${i}`,
      ).toHaveLength(1);
      expect(outcomes.find((o) => !o.ok)).toMatchObject({ name: 'EntityConflictError' });
    }
    const log = await listA(run);
    for (let i = 0; i < 10; i++) expect(log.filter((e) => e.correlationId === `same-${i}`)).toHaveLength(1);

    const tokens = await race(
      run,
      other,
      req.hookCreated('hook-a', 'shared-token'),
      req.hookCreated('hook-b', 'shared-token'),
    );
    const kinds = tokens.map((o) => (o.ok ? o.value.eventType : o.name)).sort();
    expect(kinds).toEqual(['hook_conflict', 'hook_created']);
    const holder = await a.hooks.getByToken('shared-token');
    expect(await b.call('holder', 'shared-token')).toEqual({
      ok: true,
      value: { runId: holder.runId, hookId: holder.hookId },
    });

    const ends = await race(run, run, req.runCompleted());
    expect(ends.filter((o) => o.ok)).toHaveLength(1);
    expect((await listA(run)).filter((e) => e.eventType === 'run_completed')).toHaveLength(1);
    // The token is free again once the run holding it ended (a run that ends disposes its hooks).
    if (holder.runId === run) {
      await expect(create(a, other, req.hookCreated('hook-c', 'shared-token'))).resolves.toMatchObject({
        event: { eventType: 'hook_created' },
      });
    }
  });
});
