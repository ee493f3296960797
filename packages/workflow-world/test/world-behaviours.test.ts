// The World's rules as this World keeps them, on every backend: what events.create appends and
// answers, what it refuses (with the World's own errors), what the read-only views show, and the
// streams as logs.
import { isTidemarkError, type SessionStore } from '@tidemark/core';
import { type TestBackend, testBackends } from '@tidemark/test-hosts';
import type { World } from '@workflow/world';
import { SPEC_VERSION_CURRENT } from '@workflow/world';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { decodeValue, encodeValue } from '../src/index.js';
import { bytes, create, newRunId, req, worldOn } from './world-fixtures.js';

const types = async (w: World, runId: string) =>
  (await w.events.list({ runId, pagination: { limit: 1000 } })).data.map((e) => e.eventType);
const text = (data: Uint8Array) => new TextDecoder().decode(data);

describe('the value encoding', () => {
  it('gives back bytes, dates, odd numbers and objects that use its tag key', () => {
    const value = {
      b: bytes('x\u0000y'),
      d: new Date('2026-01-02T03:04:05.006Z'),
      n: [Number.NaN, 1],
      '~tm': 'u8',
      deep: { '~tm': { b: 1 } },
    };
    const json = JSON.parse(JSON.stringify(encodeValue(value)));
    expect(decodeValue(json)).toEqual(value);
  });
});

const list: TestBackend[] = await testBackends('ww');
afterAll(async () => {
  for (const backend of list) await backend.cleanup();
});

describe.each(list)('the World on $name', (backend) => {
  let store: SessionStore;
  let w: World;
  beforeEach(async () => {
    store = await backend.open();
    w = worldOn(store);
  });

  it('creates a run and moves it through its lifecycle, one event per change', async () => {
    const id = newRunId();
    const created = await create(w, id, req.runCreated('orders'));
    expect(created.run).toMatchObject({
      runId: id,
      status: 'pending',
      workflowName: 'orders',
      input: bytes('in'),
    });
    expect((await create(w, id, req.runStarted())).run?.status).toBe('running');
    const again = await create(w, id, req.runStarted()); // a second delivery: nothing written
    expect(again.event).toBeUndefined();
    expect(again.run?.status).toBe('running');
    await create(w, id, req.runCompleted());
    expect(await w.runs.get(id)).toMatchObject({ status: 'completed', output: bytes('out') });
    expect(await types(w, id)).toEqual(['run_created', 'run_started', 'run_completed']);
    await expect(create(w, id, req.runStarted())).rejects.toMatchObject({ name: 'RunExpiredError' });
    await expect(create(w, id, req.stepCreated('late'))).rejects.toMatchObject({
      name: 'EntityConflictError',
    });
    await expect(
      create(w, id, { eventType: 'run_cancelled', specVersion: SPEC_VERSION_CURRENT }),
    ).rejects.toMatchObject({ name: 'EntityConflictError' });
    await expect(create(w, id, req.runCreated())).rejects.toMatchObject({ name: 'EntityConflictError' });
    expect(await types(w, id)).toHaveLength(3);
  });

  it('answers true absence with the World’s not-found errors, and bad run ids with INVALID', async () => {
    const id = newRunId();
    await expect(w.runs.get(id)).rejects.toMatchObject({ name: 'WorkflowRunNotFoundError' });
    await expect(create(w, id, req.stepCreated('s'))).rejects.toMatchObject({
      name: 'WorkflowRunNotFoundError',
    });
    await expect(create(w, 'wrun_01AAAAAAAAAAAAAAAAAAAAAAAA', req.runCreated())).rejects.toMatchObject({
      name: 'WorkflowWorldError',
    });
    await expect(w.runs.get('../x')).rejects.toSatisfy((e: unknown) => isTidemarkError(e, 'INVALID'));
    await expect(w.hooks.getByToken('nobody')).rejects.toMatchObject({ name: 'HookNotFoundError' });
  });

  it('creates a run from run_started when start() could not (resilient start)', async () => {
    const id = newRunId();
    const started = await create(w, id, {
      eventType: 'run_started',
      specVersion: SPEC_VERSION_CURRENT,
      eventData: { deploymentId: 'dpl_test', workflowName: 'wf', input: bytes('in') },
    } as never);
    expect(started.run).toMatchObject({ status: 'running', input: bytes('in') });
    expect(await types(w, id)).toEqual(['run_created', 'run_started']);
    expect(started.events?.map((e) => e.eventType)).toEqual(['run_created', 'run_started']);
  });

  it('keeps the step rules: created once, lazily started once, terminal for good, retried not early', async () => {
    const id = newRunId();
    await create(w, id, req.runCreated());
    await create(w, id, req.runStarted());
    const lazy = {
      eventType: 'step_started',
      specVersion: SPEC_VERSION_CURRENT,
      correlationId: 'lazy',
      eventData: { stepName: 'add', input: bytes('i') },
    };
    expect(await create(w, id, lazy as never)).toMatchObject({
      stepCreated: true,
      step: { status: 'running', attempt: 1, input: bytes('i') },
    });
    await expect(create(w, id, lazy as never)).rejects.toMatchObject({ name: 'EntityConflictError' });
    await create(w, id, req.stepCreated('s'));
    await expect(create(w, id, req.stepCreated('s'))).rejects.toMatchObject({ name: 'EntityConflictError' });
    await create(w, id, req.stepStarted('s'));
    await create(w, id, {
      eventType: 'step_retrying',
      specVersion: SPEC_VERSION_CURRENT,
      correlationId: 's',
      eventData: { error: bytes('boom'), retryAfter: new Date(Date.now() + 60_000) },
    } as never);
    await expect(create(w, id, req.stepStarted('s'))).rejects.toMatchObject({ name: 'TooEarlyError' });
    await create(w, id, req.stepCompleted('lazy'));
    await expect(create(w, id, req.stepCompleted('lazy'))).rejects.toMatchObject({
      name: 'EntityConflictError',
    });
    await expect(create(w, id, req.stepStarted('ghost'))).rejects.toMatchObject({
      name: 'WorkflowWorldError',
    });
    expect(await w.steps.get(id, 'lazy')).toMatchObject({ status: 'completed', output: bytes('lazy-out') });
    expect(await w.steps.get(id, 's', { resolveData: 'none' })).toMatchObject({
      status: 'pending',
      input: undefined,
    });
    const started = (await w.events.list({ runId: id })).data
      .filter((e) => e.correlationId === 'lazy')
      .map((e) => e.eventType);
    expect(started).toEqual(['step_created', 'step_started', 'step_completed']);
  });

  it('gives a token to one live hook, and again once that hook is disposed', async () => {
    const [one, two] = [newRunId(), newRunId()];
    for (const id of [one, two]) {
      await create(w, id, req.runCreated());
      await create(w, id, req.runStarted());
    }
    expect((await create(w, one, req.hookCreated('h1', 'tok'))).hook).toMatchObject({
      hookId: 'h1',
      token: 'tok',
    });
    const conflict = await create(w, two, req.hookCreated('h2', 'tok'));
    expect(conflict.event).toMatchObject({
      eventType: 'hook_conflict',
      eventData: { token: 'tok', conflictingRunId: one },
    });
    expect(conflict.hook).toBeUndefined();
    await create(w, one, req.hookReceived('h1'));
    expect((await w.hooks.getByToken('tok')).runId).toBe(one);
    await create(w, one, req.hookDisposed('h1'));
    await expect(create(w, one, req.hookReceived('h1'))).rejects.toMatchObject({ name: 'HookNotFoundError' });
    await expect(w.hooks.getByToken('tok')).rejects.toMatchObject({ name: 'HookNotFoundError' });
    expect((await create(w, two, req.hookCreated('h3', 'tok'))).event?.eventType).toBe('hook_created');
    expect(await w.hooks.getByToken('tok')).toMatchObject({
      runId: two,
      hookId: 'h3',
      metadata: bytes('meta'),
    });
    expect((await w.hooks.get('h3', { resolveData: 'none' })).metadata).toBeUndefined();
  });

  it('lists events in seq order and pages runs and events by cursor', async () => {
    const ids = [newRunId(), newRunId(), newRunId()];
    for (const id of ids) await create(w, id, req.runCreated(id === ids[1] ? 'other' : 'wf'));
    const id = ids[0] as string;
    for (let i = 0; i < 5; i++) await create(w, id, req.stepCreated(`s${i}`));
    const first = await w.events.list({ runId: id, pagination: { limit: 4 } });
    expect(first.hasMore).toBe(true);
    const rest = await w.events.list({ runId: id, pagination: { limit: 4, cursor: first.cursor as string } });
    expect([...first.data, ...rest.data].map((e) => e.correlationId ?? e.eventType)).toEqual([
      'run_created',
      's0',
      's1',
      's2',
      's3',
      's4',
    ]);
    const desc = await w.events.list({ runId: id, pagination: { sortOrder: 'desc', limit: 2 } });
    expect(desc.data.map((e) => e.correlationId)).toEqual(['s4', 's3']);
    expect(await w.events.get(id, (rest.data[0] as { eventId: string }).eventId)).toMatchObject({
      correlationId: 's3',
    });
    expect((await w.runs.list()).data.map((r) => r.runId)).toEqual([...ids].reverse());
    expect((await w.runs.list({ workflowName: 'other' })).data.map((r) => r.runId)).toEqual([ids[1]]);
    const paged = await w.runs.list({ pagination: { limit: 2 } });
    const next = await w.runs.list({ pagination: { limit: 2, cursor: paged.cursor as string } });
    expect([...paged.data, ...next.data].map((r) => r.runId)).toEqual([...ids].reverse());
    expect((await w.events.listByCorrelationId({ correlationId: 's2' })).data).toHaveLength(1);
  });

  it('ends every page, the last too, with a cursor from which a later list gives only the new events', async () => {
    // The runtime loads a run's new events from the cursor of its previous load; a last page
    // without a cursor makes it reload the whole log on every replay.
    const id = newRunId();
    await create(w, id, req.runCreated('wf'));
    await create(w, id, req.stepCreated('s0'));
    const whole = await w.events.list({ runId: id, pagination: { sortOrder: 'asc' } });
    expect(whole.hasMore).toBe(false);
    expect(whole.data).toHaveLength(2);
    expect(whole.cursor).toEqual(expect.any(String));
    await create(w, id, req.stepCreated('s1'));
    const since = await w.events.list({ runId: id, pagination: { cursor: whole.cursor as string } });
    expect(since.data.map((e) => e.correlationId)).toEqual(['s1']);
    expect(since.hasMore).toBe(false);
    const none = await w.events.list({ runId: id, pagination: { cursor: since.cursor as string } });
    expect(none).toMatchObject({ data: [], hasMore: false });
  });

  it('refuses a log that holds something other than World events with CORRUPT', async () => {
    const id = newRunId();
    await store.create({ id, cwd: 'workflow:default/runs' });
    await store.append(id, [
      { seq: 0, type: 'user/message', time: new Date().toISOString(), data: { text: 'hi' } },
    ]);
    await expect(w.runs.get(id)).rejects.toSatisfy((e: unknown) => isTidemarkError(e, 'CORRUPT'));
    await expect(w.runs.list()).rejects.toSatisfy((e: unknown) => isTidemarkError(e, 'CORRUPT'));
  });

  it('keeps a stream as a log: chunks in order, readers that wait, a close that ends them', async () => {
    const id = newRunId();
    await w.streams.write(id, 'out', 'a');
    await w.streams.writeMulti?.(id, 'out', [bytes('b'), bytes('c')]);
    const reader = (await w.streams.get(id, 'out')).getReader();
    const tail = (await w.streams.get(id, 'out', -1)).getReader();
    expect(text((await reader.read()).value as Uint8Array)).toBe('a');
    expect(text((await tail.read()).value as Uint8Array)).toBe('c');
    const later = tail.read();
    await w.streams.write(id, 'out', 'd');
    expect(text((await later).value as Uint8Array)).toBe('d');
    await w.streams.close(id, 'out');
    await w.streams.close(id, 'out'); // closing twice is closing once
    expect((await tail.read()).done).toBe(true);
    const seen: string[] = [];
    for (let r = await reader.read(); !r.done; r = await reader.read()) seen.push(text(r.value));
    expect(seen).toEqual(['b', 'c', 'd']);
    expect(await w.streams.getInfo(id, 'out')).toEqual({ tailIndex: 3, done: true });
    const page = await w.streams.getChunks(id, 'out', { limit: 3 });
    expect(page).toMatchObject({ hasMore: true, done: false });
    const end = await w.streams.getChunks(id, 'out', { limit: 3, cursor: page.cursor as string });
    expect(end.data.map((c) => [c.index, text(c.data)])).toEqual([[3, 'd']]);
    expect(end).toMatchObject({ hasMore: false, done: true });
    await w.streams.write(id, 'other', 'x');
    expect(await w.streams.list(id)).toEqual(['other', 'out']);
    await expect(w.streams.write(id, 'out', 'e')).rejects.toSatisfy((e: unknown) =>
      isTidemarkError(e, 'INVALID'),
    );
  });

  it('stores a run as the World events in seq order, types prefixed workflow/', async () => {
    const id = newRunId();
    await create(w, id, req.runCreated());
    await create(w, id, req.runStarted());
    const loaded = await store.load(id);
    expect(loaded.events.map((e) => [e.seq, e.type])).toEqual([
      [0, 'workflow/run_created'],
      [1, 'workflow/run_started'],
    ]);
    expect(loaded.meta.cwd).toBe('workflow:default/runs');
  });
});
