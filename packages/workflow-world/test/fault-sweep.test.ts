// Every Storage and Streamer operation meets a failing store at each of its storage steps, the
// fault lasting one step or every step from there on. A long-lived World (which has read the run)
// runs the operation. Then, with the fault lifted: the call either succeeded with the right answer
// or rejected with a TidemarkError IO (never a missing run, an empty list or a short stream); the
// state is as before the call or as after it, never in between; the long-lived World and a new one
// agree; a retried create applies once (the World's rules refuse the second); and the store takes
// the next event.
import { isTidemarkError } from '@tidemark/core';
import { MemoryVolume, openMemoryStore } from '@tidemark/memory';
import type { World } from '@workflow/world';
import { describe, expect, it } from 'vitest';
import { bytes, create, newRunId, req, worldOn } from './world-fixtures.js';

const A = newRunId();
const B = newRunId();
const FRESH = newRunId();

async function chunks(world: World, name: string): Promise<string[]> {
  const page = await world.streams.getChunks(A, name, { limit: 1000 });
  return page.data.map((c) => new TextDecoder().decode(c.data)).concat(page.done ? ['<done>'] : []);
}
async function readAll(stream: ReadableStream<Uint8Array>): Promise<string[]> {
  const out: string[] = [];
  for await (const chunk of stream) out.push(new TextDecoder().decode(chunk));
  return out;
}

interface Operation {
  call: (w: World) => Promise<unknown>;
  /** What of the answer must equal the clean run's (ids and times differ between runs). */
  answer?: (value: unknown) => unknown;
  /** A retry after a failure must leave the state as one clean call does. */
  retried?: boolean;
}
const ev = (value: unknown) => {
  const r = value as { event?: { eventType: string; correlationId?: string } };
  return r.event === undefined ? undefined : [r.event.eventType, r.event.correlationId];
};
const OPERATIONS: Record<string, Operation> = {
  'run_created (a new run)': { call: (w) => create(w, FRESH, req.runCreated()), answer: ev, retried: true },
  step_created: { call: (w) => create(w, A, req.stepCreated('step_2')), answer: ev, retried: true },
  step_completed: { call: (w) => create(w, A, req.stepCompleted('step_1')), answer: ev, retried: true },
  'hook_created (a new token)': {
    call: (w) => create(w, A, req.hookCreated('hook_2', 'T2')),
    answer: ev,
    retried: true,
  },
  'hook_created (a token another run holds)': {
    call: (w) => create(w, B, req.hookCreated('hook_b', 'T1')),
    answer: ev,
    retried: false,
  },
  hook_received: { call: (w) => create(w, A, req.hookReceived('hook_1')), answer: ev },
  hook_disposed: { call: (w) => create(w, A, req.hookDisposed('hook_1')), answer: ev, retried: true },
  wait_completed: { call: (w) => create(w, A, req.waitCompleted('wait_1')), answer: ev, retried: true },
  run_completed: { call: (w) => create(w, A, req.runCompleted()), answer: ev, retried: true },
  'runs.get': { call: (w) => w.runs.get(A), answer: (r) => (r as { status: string }).status },
  'runs.list': {
    call: (w) => w.runs.list(),
    answer: (p) => (p as { data: { runId: string }[] }).data.map((r) => r.runId),
  },
  'steps.get': { call: (w) => w.steps.get(A, 'step_1'), answer: (s) => (s as { status: string }).status },
  'steps.list': {
    call: (w) => w.steps.list({ runId: A }),
    answer: (p) => (p as { data: unknown[] }).data.length,
  },
  'events.list': {
    call: (w) => w.events.list({ runId: A }),
    answer: (p) => (p as { data: unknown[] }).data.map(ev0),
  },
  'events.listByCorrelationId': {
    call: (w) => w.events.listByCorrelationId({ correlationId: 'step_1' }),
    answer: (p) => (p as { data: unknown[] }).data.map(ev0),
  },
  'hooks.get': { call: (w) => w.hooks.get('hook_1'), answer: (h) => (h as { token: string }).token },
  'hooks.getByToken': {
    call: (w) => w.hooks.getByToken('T1'),
    answer: (h) => (h as { hookId: string }).hookId,
  },
  'hooks.list': {
    call: (w) => w.hooks.list({ runId: A }),
    answer: (p) => (p as { data: unknown[] }).data.length,
  },
  'streams.write': { call: (w) => w.streams.write(A, 'open', bytes('c3')) },
  'streams.close': { call: (w) => w.streams.close(A, 'open'), retried: true },
  'streams.getChunks': { call: (w) => chunks(w, 'open'), answer: (c) => c },
  'streams.getInfo': { call: (w) => w.streams.getInfo(A, 'closed'), answer: (i) => i },
  'streams.list': { call: (w) => w.streams.list(A), answer: (l) => l },
  'streams.get (a closed stream)': {
    call: async (w) => readAll(await w.streams.get(A, 'closed')),
    answer: (c) => c,
  },
};
function ev0(e: unknown) {
  const event = e as { eventType: string; correlationId?: string };
  return [event.eventType, event.correlationId];
}

/** What a World sees of the store, without ids and times. */
async function observe(w: World): Promise<unknown> {
  const run = await w.runs.get(A);
  const events = await w.events.list({ runId: A, pagination: { limit: 1000 } });
  const steps = await w.steps.list({ runId: A });
  const hooks = await w.hooks.list({ runId: A });
  const runs = await w.runs.list();
  const eventsOfB = await w.events.list({ runId: B, pagination: { limit: 1000 } });
  const holder = await w.hooks.getByToken('T1').then(
    (h) => h.hookId,
    (e: unknown) => (e as Error).name,
  );
  return {
    run: run.status,
    events: events.data.map(ev0),
    eventsOfB: eventsOfB.data.map(ev0),
    steps: steps.data.map((s) => [s.stepId, s.status, s.attempt]).sort(),
    hooks: hooks.data.map((h) => h.hookId).sort(),
    runs: runs.data.map((r) => [r.runId, r.status]),
    holder,
    open: await chunks(w, 'open'),
    closed: await chunks(w, 'closed'),
    streams: await w.streams.list(A),
  };
}

async function seeded(): Promise<MemoryVolume> {
  const volume = new MemoryVolume();
  const w = worldOn(await openMemoryStore({ volume }));
  for (const r of [req.runCreated(), req.runStarted(), req.stepCreated('step_1'), req.stepStarted('step_1')])
    await create(w, A, r);
  await create(w, A, req.hookCreated('hook_1', 'T1'));
  await create(w, A, req.waitCreated('wait_1'));
  await create(w, B, req.runCreated());
  await create(w, B, req.runStarted());
  await w.streams.writeMulti?.(A, 'open', [bytes('c1'), bytes('c2')]);
  await w.streams.write(A, 'closed', bytes('only'));
  await w.streams.close(A, 'closed');
  return volume;
}

async function faultyStore(volume: MemoryVolume, plan: { at: number; lasting: boolean } | undefined) {
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
  return { store, arm: () => (armed = true), disarm: () => (armed = false), steps: () => steps };
}

const settle = (p: Promise<unknown>) =>
  p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );

async function run(name: string, plan: { at: number; lasting: boolean } | undefined) {
  const volume = await seeded();
  const faulty = await faultyStore(volume, plan);
  const w = worldOn(faulty.store);
  await observe(w); // a long-lived World that has read the run, its hooks and streams
  faulty.arm();
  const outcome = await settle((OPERATIONS[name] as Operation).call(w));
  faulty.disarm();
  return { volume, w, outcome, steps: faulty.steps() };
}

const fresh = async (volume: MemoryVolume) => worldOn(await openMemoryStore({ volume }));

describe.each(Object.keys(OPERATIONS))('%s under a storage fault', (name) => {
  it('rejects with a typed error or succeeds, and applies the whole operation or none of it', async () => {
    const op = OPERATIONS[name] as Operation;
    const before = await observe(await fresh(await seeded()));
    const clean = await run(name, undefined);
    expect(clean.outcome.ok, String(!clean.outcome.ok && clean.outcome.error)).toBe(true);
    const after = await observe(await fresh(clean.volume));
    let failures = 0;
    for (let at = 1; at <= clean.steps; at++) {
      for (const lasting of [false, true]) {
        const { volume, w, outcome } = await run(name, { at, lasting });
        const where = `step ${at}${lasting ? ' and on' : ''}`;
        if (outcome.ok) {
          if (op.answer !== undefined && clean.outcome.ok)
            expect(op.answer(outcome.value), where).toEqual(op.answer(clean.outcome.value));
        } else {
          failures++;
          expect(isTidemarkError(outcome.error, 'IO'), `${where}: ${String(outcome.error)}`).toBe(true);
        }
        const seen = await observe(await fresh(volume));
        if (outcome.ok) expect(seen, where).toEqual(after);
        else expect([before, after], where).toContainEqual(seen);
        expect(await observe(w), `${where}: the long-lived World`).toEqual(seen);
        if (!outcome.ok && op.retried === true) {
          await settle(op.call(w)); // a retry: applies once, or the World's rules refuse it
          expect(await observe(await fresh(volume)), `${where}: retried`).toEqual(after);
        }
        const probe = newRunId();
        await create(w, probe, req.runCreated('probe'));
        expect((await (await fresh(volume)).runs.get(probe)).workflowName, where).toBe('probe');
      }
    }
    expect(failures).toBeGreaterThan(0);
  });
});
