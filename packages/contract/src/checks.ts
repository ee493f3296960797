import {
  FIRST_PROMPT_LENGTH,
  isTidemarkError,
  isValidId,
  type JsonValue,
  promptOf,
  type SessionEvent,
  type SessionStore,
  type SessionSummary,
} from '@tidemark/core';
import { expect } from 'vitest';
import {
  type ContractCheck,
  collect,
  describeError,
  ev,
  evs,
  expectCode,
  pause,
  violation,
} from './harness.js';

// Every check builds its own sessions from scratch: checks are independent, so a backend author can
// run one alone, and a broken backend fails the checks that name the broken rule.

/** Creates `id` and appends `events` as its first batch. */
async function materialize(
  store: SessionStore,
  id: string,
  events: SessionEvent[] = evs(0, 1),
  cwd?: string,
): Promise<void> {
  await store.create({ id, ...(cwd !== undefined && { cwd }) });
  await store.append(id, events);
}

/** The events of `id`, as load returns them. */
async function eventsOf(store: SessionStore, id: string): Promise<SessionEvent[]> {
  return (await store.load(id)).events;
}

/** Every summary of a store, paging through list. */
async function listAll(store: SessionStore, cwd?: string, limit = 1000): Promise<SessionSummary[]> {
  const out: SessionSummary[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 10_000; page++) {
    const result = await store.list({
      limit,
      ...(cwd !== undefined && { cwd }),
      ...(cursor !== undefined && { cursor }),
    });
    if (result.problems.length > 0) {
      violation(
        `list reported problems on a healthy store: ${result.problems.map((p) => `${p.id}: ${p.error.message}`).join('; ')}`,
      );
    }
    out.push(...result.sessions);
    if (result.nextCursor === undefined) return out;
    if (result.sessions.length === 0) violation('list returned an empty page with a nextCursor');
    cursor = result.nextCursor;
  }
  return violation('list never stopped returning a nextCursor');
}

function byteIdentical(actual: unknown, expected: unknown, what: string): void {
  const a = JSON.stringify(actual);
  const b = JSON.stringify(expected);
  if (a !== b)
    violation(
      `${what}: JSON serialization differs\n  stored:   ${a.slice(0, 300)}\n  returned: ${b.slice(0, 300)}`,
    );
}

function nested(depth: number, leaf: JsonValue): JsonValue {
  let value: JsonValue = leaf;
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? { level: i, child: value } : [i, value];
  return value;
}

/** Data that tends to break serializers: text edge cases, numbers, prototype-named keys, size. */
function awkwardData(): JsonValue[] {
  const protoKeys = JSON.parse(
    '{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}},"prototype":{"x":1},"hasOwnProperty":1,"toString":"s"}',
  ) as JsonValue;
  return [
    'plain ascii',
    'unicode: héllo wörld ✓ 日本語 🌊🚀 \u0000 \u001f \u2028 \u2029 \\ " \n\t',
    'lone surrogates: \ud800 then \udfff and reversed \udfff\ud800',
    '',
    { '': 'empty key', ' ': 'space key', 'a.b': 'dotted', 'a"b': 'quoted', '2': 'numeric-like', z: 1, a: 2 },
    [
      0,
      -0.5,
      1.5e300,
      5e-324,
      Number.MAX_SAFE_INTEGER,
      -Number.MAX_SAFE_INTEGER,
      123456789.12345679,
      true,
      false,
      null,
    ],
    null,
    true,
    42,
    [],
    {},
    protoKeys,
    { nested: protoKeys, list: [protoKeys] },
    nested(200, 'deep leaf'),
    { big: Array.from({ length: 2000 }, (_, i) => ({ i, text: `item ${i} ✓`, flags: [i % 2 === 0, null] })) },
    { long: 'x'.repeat(200_000) },
  ];
}

function assertNoPrototypeChange(what: string): void {
  const probe = {} as Record<string, unknown>;
  if (probe.polluted !== undefined || (Object.prototype as Record<string, unknown>).polluted !== undefined) {
    violation(`${what}: Object.prototype was polluted`);
  }
}

function assertProtoKeysAreData(data: unknown, what: string): void {
  if (typeof data !== 'object' || data === null) violation(`${what}: expected an object`);
  if (Object.getPrototypeOf(data) !== Object.prototype)
    violation(`${what}: the prototype of returned data changed`);
  for (const key of ['__proto__', 'constructor', 'prototype']) {
    if (!Object.hasOwn(data, key)) violation(`${what}: ${key} is not an own data key of the returned data`);
  }
  assertNoPrototypeChange(what);
}

const roundTrip: ContractCheck[] = [
  {
    group: 'round trip',
    name: 'events read back deep-equal and byte-identical (unicode, lone surrogates, numbers, big and deep data)',
    async run(ctx) {
      const store = await ctx.open();
      const events = awkwardData().map((data, i) =>
        ev(i, i % 3 === 0 ? 'user/message' : 'tool/result', data),
      );
      await store.create({ id: 'round-trip' });
      // Two batches, so that both the first-batch path and the later-batch path are exercised.
      await store.append('round-trip', events.slice(0, 5));
      await store.append('round-trip', events.slice(5));
      const loaded = await store.load('round-trip');
      expect(loaded.events).toEqual(events);
      byteIdentical(loaded.events, events, 'load');
      const streamed = await collect(store.read('round-trip'));
      byteIdentical(streamed, events, 'read');
    },
  },
  {
    group: 'round trip',
    name: '__proto__, constructor and prototype keys are stored and returned as data, without prototype change',
    async run(ctx) {
      const store = await ctx.open();
      const data = JSON.parse(
        '{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}},"prototype":1}',
      ) as JsonValue;
      await store.create({ id: 'proto' });
      await store.append('proto', [ev(0, 'note', data), ev(1, 'note', { inner: data })]);
      for (const [how, events] of [
        ['load', await eventsOf(store, 'proto')],
        ['read', await collect(store.read('proto'))],
      ] as const) {
        assertProtoKeysAreData(events[0]?.data, `${how} events[0].data`);
        assertProtoKeysAreData(
          (events[1]?.data as { inner?: unknown } | undefined)?.inner,
          `${how} events[1].data.inner`,
        );
        byteIdentical(events[0]?.data, data, `${how} events[0].data`);
      }
      await store.update('proto', { attrs: { meta: data } });
      const summary = (await store.load('proto')).summary;
      assertProtoKeysAreData(summary.attrs?.meta, 'summary.attrs.meta');
    },
  },
];

const materialization: ContractCheck[] = [
  {
    group: 'create',
    name: 'create is lazy: nothing is visible until the first append, which writes the meta',
    async run(ctx) {
      const store = await ctx.open();
      const meta = await store.create({
        id: 'lazy',
        cwd: '/work/lazy',
        parent: { id: 'origin', seq: 3 },
        title: 'T',
        tags: ['a'],
      });
      expect(meta.id).toBe('lazy');
      expect(meta.cwd).toBe('/work/lazy');
      expect(meta.parent).toEqual({ id: 'origin', seq: 3 });
      if (Number.isNaN(Date.parse(meta.createdAt)) || !meta.createdAt.endsWith('Z')) {
        violation(`meta.createdAt is not ISO-8601 UTC: ${meta.createdAt}`);
      }
      if (!Number.isSafeInteger(meta.formatVersion) || meta.formatVersion < 1)
        violation(`meta.formatVersion is ${meta.formatVersion}`);
      expect(await store.has('lazy')).toBe(false);
      expect((await store.list()).sessions).toEqual([]);
      await expectCode(store.load('lazy'), 'NOT_FOUND', 'load of a pending session');
      await expectCode(() => collect(store.read('lazy')), 'NOT_FOUND', 'read of a pending session');
      const other = await ctx.reopen(store);
      expect(await other.has('lazy')).toBe(false);
      expect((await other.list()).sessions).toEqual([]);

      await store.append('lazy', [ev(0, 'user/message', { text: 'first' })]);
      expect(await store.has('lazy')).toBe(true);
      expect(await other.has('lazy')).toBe(true);
      const loaded = await other.load('lazy');
      expect(loaded.meta).toEqual(meta);
      expect(loaded.summary).toMatchObject({
        id: 'lazy',
        cwd: '/work/lazy',
        parent: { id: 'origin', seq: 3 },
        title: 'T',
        tags: ['a'],
      });
      expect(loaded.summary.createdAt).toBe(meta.createdAt);
      expect((await store.list()).sessions.map((s) => s.id)).toEqual(['lazy']);
    },
  },
  {
    group: 'create',
    name: 'create of a materialized or pending id is ALREADY_EXISTS',
    async run(ctx) {
      const store = await ctx.open();
      await store.create({ id: 'twice' });
      await expectCode(
        store.create({ id: 'twice' }),
        'ALREADY_EXISTS',
        'create of an id pending in this instance',
      );
      await store.append('twice', evs(0, 1));
      await expectCode(store.create({ id: 'twice' }), 'ALREADY_EXISTS', 'create of a materialized id');
      await store.close();
      const reopened = await ctx.reopen(store);
      await expectCode(
        reopened.create({ id: 'twice' }),
        'ALREADY_EXISTS',
        'create of a materialized id after reopen',
      );
      expect(await eventsOf(reopened, 'twice')).toEqual(evs(0, 1));
    },
  },
  {
    group: 'create',
    name: 'a given createdAt is no change: updatedAt is the time of the appends, even when createdAt is later',
    async run(ctx) {
      // An import keeps the original's createdAt, which another machine's clock may have put in the
      // future: the session must still be listed and pruned by when it was last appended to here.
      const store = await ctx.open();
      await store.create({ id: 'future', createdAt: '2999-01-01T00:00:00.000Z' });
      await store.create({ id: 'past', createdAt: '2001-01-01T00:00:00.000Z' });
      const before = Date.now();
      await store.append('future', [ev(0)]);
      await pause(5);
      await store.append('past', [ev(0)]);
      const after = Date.now();
      const inWindow = async (reader: SessionStore, what: string) => {
        const summaries = await listAll(reader);
        expect(summaries.map((s) => s.id)).toEqual(['past', 'future']);
        for (const summary of summaries) {
          const at = Date.parse(summary.updatedAt);
          if (!(at >= before && at <= after))
            violation(
              `${what}: ${summary.id} has updatedAt ${summary.updatedAt}, not the time of its append`,
            );
        }
        expect((await reader.load('future')).meta.createdAt).toBe('2999-01-01T00:00:00.000Z');
      };
      await inWindow(store, 'the writing instance');
      await inWindow(await ctx.reopen(store), 'a second instance');
      await store.close();
      const restarted = await ctx.reopen(store);
      await inWindow(restarted, 'after a restart');
      await pause(5);
      await restarted.append('future', [ev(1)]);
      const latest = (await restarted.list()).sessions[0]!;
      expect(latest.id).toBe('future');
      if (Date.parse(latest.updatedAt) > Date.now())
        violation(`a later append set updatedAt ${latest.updatedAt}, in the future`);
    },
  },
  {
    group: 'create',
    name: 'create without an id generates valid, distinct, time-ordered ids',
    async run(ctx) {
      const store = await ctx.open();
      const ids: string[] = [];
      // Eight ids: a random generator passes the order test by chance only once in 8! = 40,320.
      for (let i = 0; i < 8; i++) {
        ids.push((await store.create()).id);
        await pause(2);
      }
      for (const id of ids)
        if (!isValidId(id)) violation(`generated id ${JSON.stringify(id)} is not a valid id`);
      expect(new Set(ids).size).toBe(ids.length);
      expect([...ids].sort()).toEqual(ids);
      await store.append(ids[0]!, evs(0, 1));
      expect(await store.has(ids[0]!)).toBe(true);
    },
  },
  {
    group: 'create',
    name: 'invalid ids are INVALID for every method, never absence',
    async run(ctx) {
      const store = await ctx.open();
      for (const id of ['../x', '.hidden', '', 'a'.repeat(129), 'a/b', 'a\\b', 'sp ace', 'nul\u0000']) {
        const what = `id ${JSON.stringify(id.slice(0, 20))}`;
        await expectCode(store.create({ id }), 'INVALID', `create with ${what}`);
        await expectCode(store.append(id, evs(0, 1)), 'INVALID', `append with ${what}`);
        await expectCode(store.load(id), 'INVALID', `load with ${what}`);
        await expectCode(() => collect(store.read(id)), 'INVALID', `read with ${what}`);
        await expectCode(store.has(id), 'INVALID', `has with ${what}`);
        await expectCode(store.update(id, { title: 't' }), 'INVALID', `update with ${what}`);
        await expectCode(store.delete(id), 'INVALID', `delete with ${what}`);
      }
      // The longest valid id works.
      const longest = 'a'.repeat(128);
      await materialize(store, longest);
      expect(await store.has(longest)).toBe(true);
      expect((await store.list()).sessions.map((s) => s.id)).toEqual([longest]);
    },
  },
];

const seqRules: ContractCheck[] = [
  {
    group: 'append',
    name: 'seq behind or ahead is CONFLICT, gap inside a batch or empty batch is INVALID, unknown id NOT_FOUND; nothing changes',
    async run(ctx) {
      const store = await ctx.open();
      await store.create({ id: 'seq' });
      await expectCode(store.append('seq', [ev(1)]), 'CONFLICT', 'first batch starting at 1');
      expect(await store.has('seq')).toBe(false);
      expect(await store.append('seq', evs(0, 2))).toEqual({ nextSeq: 2 });
      await expectCode(
        store.append('seq', evs(1, 2, 'note', 'other')),
        'CONFLICT',
        'batch 1..2 overlapping the stored 0..1',
      );
      await expectCode(
        store.append('seq', [ev(0, 'note', { other: true })]),
        'CONFLICT',
        'different event behind',
      );
      await expectCode(store.append('seq', [ev(3)]), 'CONFLICT', 'batch ahead (3 when next is 2)');
      await expectCode(store.append('seq', [ev(2), ev(4)]), 'INVALID', 'gap inside the batch');
      await expectCode(store.append('seq', [ev(2), ev(2)]), 'INVALID', 'repeated seq inside the batch');
      await expectCode(store.append('seq', [ev(3), ev(2)]), 'INVALID', 'descending seqs inside the batch');
      await expectCode(store.append('seq', []), 'INVALID', 'empty batch');
      await expectCode(
        store.append('never-created', [ev(0)]),
        'NOT_FOUND',
        'append to an id neither created nor stored',
      );
      expect(await store.has('never-created')).toBe(false);
      expect(await eventsOf(store, 'seq')).toEqual(evs(0, 2));
      expect(await store.append('seq', [ev(2)])).toEqual({ nextSeq: 3 });
      expect((await store.load('seq')).summary.eventCount).toBe(3);
    },
  },
  {
    group: 'append',
    name: 'a batch with one bad event is rejected whole, with the path named, and the same seq then works',
    async run(ctx) {
      const store = await ctx.open({ maxEventBytes: 4096 });
      await materialize(store, 'atomic', evs(0, 2));
      const circular: Record<string, unknown> = { a: 1 };
      circular.self = circular;
      const bad: Array<[string, unknown, string]> = [
        ['BigInt', { x: 1n }, 'events[2].data'],
        ['NaN', { x: Number.NaN }, 'events[2].data'],
        ['Infinity', [Number.POSITIVE_INFINITY], 'events[2].data'],
        ['undefined', { x: undefined }, 'events[2].data'],
        ['Date', { when: new Date(0) }, 'events[2].data'],
        ['Map', new Map(), 'events[2].data'],
        ['function', { f: () => 1 }, 'events[2].data'],
        ['circular', circular, 'events[2].data'],
        ['too deep', nested(300, 1), 'events[2].data'],
        ['too large', { text: 'x'.repeat(5000) }, 'events[2]'],
      ];
      for (const [name, data, path] of bad) {
        const batch = [ev(2), ev(3), { seq: 4, type: 'note', time: ev(4).time, data }] as SessionEvent[];
        await expectCode(
          store.append('atomic', batch),
          'INVALID',
          `batch whose third event holds ${name}`,
          path,
        );
        expect(await eventsOf(store, 'atomic'), `after the rejected ${name} batch`).toEqual(evs(0, 2));
      }
      for (const [name, event] of [
        ['missing time', { seq: 2, type: 'note', data: 1 }],
        ['bad time', { seq: 2, type: 'note', time: 'yesterday', data: 1 }],
        ['empty type', { seq: 2, type: '', time: ev(2).time, data: 1 }],
        ['negative seq', { seq: -1, type: 'note', time: ev(2).time, data: 1 }],
        ['fractional seq', { seq: 2.5, type: 'note', time: ev(2).time, data: 1 }],
        ['extra field', { ...ev(2), extra: 1 }],
        ['missing data', { seq: 2, type: 'note', time: ev(2).time }],
        ['not an object', 'event'],
      ] as const) {
        await expectCode(
          store.append('atomic', [event as unknown as SessionEvent]),
          'INVALID',
          `event with ${name}`,
        );
      }
      expect(await store.append('atomic', evs(2, 3))).toEqual({ nextSeq: 5 });
      expect(await eventsOf(store, 'atomic')).toEqual([...evs(0, 2), ...evs(2, 3)]);
      expect((await store.load('atomic')).summary.eventCount).toBe(5);
    },
  },
  {
    group: 'append',
    name: 'a rejected first batch leaves the session pending and invisible',
    async run(ctx) {
      const store = await ctx.open();
      await store.create({ id: 'first-bad' });
      await expectCode(
        store.append('first-bad', [ev(0), { ...ev(1), data: { x: 1n } } as unknown as SessionEvent]),
        'INVALID',
        'first batch with a BigInt',
        'events[1].data',
      );
      expect(await store.has('first-bad')).toBe(false);
      expect((await store.list()).sessions).toEqual([]);
      expect(await store.append('first-bad', evs(0, 2))).toEqual({ nextSeq: 2 });
      expect(await eventsOf(store, 'first-bad')).toEqual(evs(0, 2));
    },
  },
  {
    group: 'append',
    name: 'idempotent retry: a stored batch again succeeds without duplicates; different events are CONFLICT',
    async run(ctx) {
      const store = await ctx.open();
      await store.create({ id: 'retry' });
      const first = evs(0, 2);
      const second = [ev(2, 'note', { a: 1, b: [1, 2], c: { d: 'e' } }), ev(3), ev(4, 'turn/end')];
      expect(await store.append('retry', first)).toEqual({ nextSeq: 2 });
      expect(await store.append('retry', first), 'retry of the first batch').toEqual({ nextSeq: 2 });
      expect(await store.append('retry', second)).toEqual({ nextSeq: 5 });
      expect(await store.append('retry', first), 'late retry of the first batch').toEqual({ nextSeq: 5 });
      expect(await store.append('retry', second), 'retry of the second batch').toEqual({ nextSeq: 5 });
      expect(await store.append('retry', [ev(3)]), 'retry of a stored sub-range').toEqual({ nextSeq: 5 });
      // Deep equality, not textual: key order inside data does not make a retry different.
      const reordered = [{ ...ev(2, 'note', { c: { d: 'e' }, b: [1, 2], a: 1 }) }];
      expect(await store.append('retry', reordered), 'retry with data keys in another order').toEqual({
        nextSeq: 5,
      });
      await expectCode(
        store.append('retry', [ev(1, 'note', { different: true })]),
        'CONFLICT',
        'different data at a stored seq',
      );
      await expectCode(
        store.append('retry', [ev(1, 'other-type', { n: 1, tag: 'x' })]),
        'CONFLICT',
        'different type at a stored seq',
      );
      await expectCode(
        store.append('retry', [{ ...ev(1), data: { n: 1, tag: 'x' }, time: ev(99).time }]),
        'CONFLICT',
        'different time',
      );
      await expectCode(
        store.append('retry', [...evs(0, 1, 'note', 'x'), ev(1, 'note', { n: 1, tag: 'y' })]),
        'CONFLICT',
        'partly different',
      );
      const loaded = await store.load('retry');
      expect(loaded.events).toEqual([...first, ...second]);
      expect(loaded.summary.eventCount).toBe(5);
      expect(loaded.committedSeq).toBe(4);
    },
  },
  {
    group: 'append',
    name: 'append copies the batch: later mutation of the caller objects changes nothing stored',
    async run(ctx) {
      const store = await ctx.open();
      await store.create({ id: 'copy-in' });
      const data = { list: [1, 2], inner: { text: 'original' } };
      const event: SessionEvent = { seq: 0, type: 'note', time: ev(0).time, data };
      const batch = [event];
      const appended = store.append('copy-in', batch);
      // Mutate before and after the promise settles: the batch is copied at call time.
      data.list.push(3);
      data.inner.text = 'changed';
      event.type = 'mutated';
      batch.push(ev(1));
      await appended;
      event.seq = 7;
      const expected = [
        { seq: 0, type: 'note', time: ev(0).time, data: { list: [1, 2], inner: { text: 'original' } } },
      ];
      expect(await eventsOf(store, 'copy-in')).toEqual(expected);
      expect(await collect(store.read('copy-in'))).toEqual(expected);
    },
  },
  {
    group: 'load',
    name: 'load, read, list and update return copies: mutating them changes nothing stored',
    async run(ctx) {
      const store = await ctx.open();
      await store.create({ id: 'copy-out', cwd: '/copy', tags: ['t'] });
      await store.append('copy-out', [ev(0, 'note', { inner: { text: 'original' }, list: [1] })]);
      await store.update('copy-out', { attrs: { k: { v: 1 } } });
      const before = await store.load('copy-out');
      const snapshot = structuredClone(before);
      const mutate = (value: unknown) => {
        const target = value as { inner?: { text: string }; list?: number[] };
        if (target.inner !== undefined) target.inner.text = 'changed';
        target.list?.push(2);
      };
      // Each mutation is followed at once by a fresh read of the same thing, before anything else
      // could invalidate a cache that hands out shared objects.
      mutate(before.events[0]!.data);
      before.events.push(ev(1));
      before.summary.tags!.push('changed');
      (before.summary.attrs!.k as { v: number }).v = 2;
      before.summary.eventCount = 99;
      before.meta.cwd = '/changed';
      const reloaded = await store.load('copy-out');
      expect(reloaded.events, 'events after mutating a loaded copy').toEqual(snapshot.events);
      expect(reloaded.meta, 'meta after mutating a loaded copy').toEqual(snapshot.meta);
      expect(reloaded.summary, 'summary after mutating a loaded copy').toEqual(snapshot.summary);
      const streamed = await collect(store.read('copy-out'));
      mutate(streamed[0]!.data);
      expect(await collect(store.read('copy-out')), 'read after mutating a streamed copy').toEqual(
        snapshot.events,
      );
      const listed = (await store.list()).sessions[0]!;
      listed.tags!.push('changed');
      (listed.attrs!.k as { v: number }).v = 3;
      expect((await store.list()).sessions[0], 'list after mutating a listed copy').toEqual(snapshot.summary);
      const updated = await store.update('copy-out', { title: 'title' });
      const updatedSnapshot = structuredClone(updated);
      updated.tags!.push('changed');
      (updated.attrs!.k as { v: number }).v = 4;
      expect((await store.load('copy-out')).summary, 'summary after mutating what update returned').toEqual(
        updatedSnapshot,
      );
      expect((await store.load('copy-out')).events).toEqual(snapshot.events);
    },
  },
];

const boundary: ContractCheck[] = [
  {
    group: 'boundary',
    name: 'committedSeq and interrupted follow the last boundary event (turn/end, session/end)',
    async run(ctx) {
      const store = await ctx.open();
      await store.create({ id: 'turns' });
      await store.append('turns', [ev(0, 'turn/start'), ev(1, 'user/message', { text: 'hi' })]);
      let loaded = await store.load('turns');
      expect([loaded.committedSeq, loaded.interrupted], 'no boundary yet').toEqual([-1, true]);
      expect([loaded.summary.committedSeq, loaded.summary.interrupted]).toEqual([-1, true]);
      await store.append('turns', [ev(2, 'turn/end'), ev(3, 'tool/call')]);
      loaded = await store.load('turns');
      expect([loaded.committedSeq, loaded.interrupted], 'tail after turn/end').toEqual([2, true]);
      expect([loaded.summary.committedSeq, loaded.summary.interrupted]).toEqual([2, true]);
      await store.append('turns', [ev(4, 'turn/end')]);
      loaded = await store.load('turns');
      expect([loaded.committedSeq, loaded.interrupted], 'closed by turn/end').toEqual([4, false]);
      await store.append('turns', [ev(5, 'user/message'), ev(6, 'session/end')]);
      loaded = await store.load('turns');
      expect([loaded.committedSeq, loaded.interrupted], 'closed by session/end').toEqual([6, false]);
      expect([loaded.summary.committedSeq, loaded.summary.interrupted, loaded.summary.eventCount]).toEqual([
        6,
        false,
        7,
      ]);
      const listed = (await store.list()).sessions[0]!;
      expect([listed.committedSeq, listed.interrupted, listed.eventCount]).toEqual([6, false, 7]);
    },
  },
  {
    group: 'boundary',
    name: 'custom boundaryTypes replace the defaults',
    async run(ctx) {
      const store = await ctx.open({ boundaryTypes: ['step/done'] });
      await store.create({ id: 'custom' });
      await store.append('custom', [ev(0, 'step/start'), ev(1, 'step/done'), ev(2, 'turn/end')]);
      const loaded = await store.load('custom');
      expect([loaded.committedSeq, loaded.interrupted]).toEqual([1, true]);
      expect([loaded.summary.committedSeq, loaded.summary.interrupted]).toEqual([1, true]);
      await store.append('custom', [ev(3, 'step/done')]);
      expect((await store.load('custom')).committedSeq).toBe(3);
      expect((await store.load('custom')).interrupted).toBe(false);
    },
  },
  {
    group: 'boundary',
    name: "tail: 'cut' removes the interrupted tail, reports it, and the log continues from committedSeq + 1",
    async run(ctx) {
      const store = await ctx.open();
      await store.create({ id: 'cut' });
      const committed = [ev(0, 'user/message', { text: 'go' }), ev(1, 'tool/call'), ev(2, 'turn/end')];
      await store.append('cut', committed);
      await store.append('cut', [ev(3, 'user/message'), ev(4, 'tool/call')]);
      const kept = await store.load('cut', { tail: 'keep' });
      expect(kept.events.length).toBe(5);
      expect(kept.recovered?.cutEvents ?? 0).toBe(0);
      const cut = await store.load('cut', { tail: 'cut' });
      expect(cut.events).toEqual(committed);
      expect([cut.committedSeq, cut.interrupted]).toEqual([2, false]);
      expect(cut.recovered?.cutEvents).toBe(2);
      expect([cut.summary.eventCount, cut.summary.committedSeq, cut.summary.interrupted]).toEqual([
        3,
        2,
        false,
      ]);
      const again = await store.load('cut', { tail: 'cut' });
      expect(again.events).toEqual(committed);
      expect(again.recovered?.cutEvents ?? 0, 'a second cut has nothing to cut').toBe(0);
      await expectCode(store.append('cut', [ev(5)]), 'CONFLICT', 'append after the cut tail');
      expect(
        await store.append('cut', [ev(3, 'user/message', { text: 'again' }), ev(4, 'turn/end')]),
      ).toEqual({ nextSeq: 5 });
      const after = await store.load('cut');
      expect(after.events).toEqual([
        ...committed,
        ev(3, 'user/message', { text: 'again' }),
        ev(4, 'turn/end'),
      ]);
      expect([after.summary.eventCount, after.summary.committedSeq, after.summary.interrupted]).toEqual([
        5,
        4,
        false,
      ]);
      const listed = (await store.list()).sessions[0]!;
      expect([listed.eventCount, listed.committedSeq, listed.interrupted]).toEqual([5, 4, false]);
    },
  },
  {
    group: 'boundary',
    name: "tail: 'cut' of a log without any boundary leaves an existing, empty session (summary fields kept) that continues from seq 0",
    async run(ctx) {
      const store = await ctx.open();
      await store.create({ id: 'no-boundary', title: 'kept' });
      // The prompt arrives in a later batch than the first, so a backend cannot have it from the header.
      await store.append('no-boundary', [ev(0, 'turn/start')]);
      await store.append('no-boundary', [ev(1, 'user/message', { text: 'a' }), ev(2, 'tool/call')]);
      const cut = await store.load('no-boundary', { tail: 'cut' });
      expect(cut.events).toEqual([]);
      expect([cut.committedSeq, cut.interrupted, cut.recovered?.cutEvents]).toEqual([-1, false, 3]);
      // A cut changes the counts and commit state only: the title and the prompt the user already
      // saw stay, as in the reference model.
      expect(cut.summary).toMatchObject({
        eventCount: 0,
        committedSeq: -1,
        interrupted: false,
        title: 'kept',
        firstPrompt: 'a',
      });
      expect((await store.list()).sessions[0]).toMatchObject({
        eventCount: 0,
        title: 'kept',
        firstPrompt: 'a',
      });
      expect(await store.has('no-boundary')).toBe(true);
      expect(await store.append('no-boundary', [ev(0, 'turn/end')])).toEqual({ nextSeq: 1 });
      expect(await eventsOf(store, 'no-boundary')).toEqual([ev(0, 'turn/end')]);
    },
  },
];

const reading: ContractCheck[] = [
  {
    group: 'read',
    name: 'read streams events in order, honours ranges, and is NOT_FOUND for an absent session',
    async run(ctx) {
      const store = await ctx.open();
      const all = evs(0, 12);
      await store.create({ id: 'stream' });
      await store.append('stream', all.slice(0, 5));
      await store.append('stream', all.slice(5));
      expect(await collect(store.read('stream'))).toEqual(all);
      expect(await collect(store.read('stream', {}))).toEqual(all);
      expect(await collect(store.read('stream', { fromSeq: 3, toSeq: 7 }))).toEqual(all.slice(3, 8));
      expect(await collect(store.read('stream', { fromSeq: 9 }))).toEqual(all.slice(9));
      expect(await collect(store.read('stream', { toSeq: 2 }))).toEqual(all.slice(0, 3));
      expect(await collect(store.read('stream', { fromSeq: 4, toSeq: 4 }))).toEqual([all[4]]);
      expect(await collect(store.read('stream', { fromSeq: 12 }))).toEqual([]);
      expect(await collect(store.read('stream', { fromSeq: 5, toSeq: 2 }))).toEqual([]);
      await expectCode(() => collect(store.read('absent')), 'NOT_FOUND', 'read of an absent session');
      await expectCode(() => collect(store.read('stream', { fromSeq: -1 })), 'INVALID', 'read from seq -1');
      await expectCode(() => collect(store.read('stream', { toSeq: 1.5 })), 'INVALID', 'read to seq 1.5');
      // Early exit from a for-await must not break the store.
      for await (const event of store.read('stream')) if (event.seq === 2) break;
      expect(await store.append('stream', [ev(12)])).toEqual({ nextSeq: 13 });
    },
  },
];

function assertListOrder(sessions: SessionSummary[], what: string): void {
  for (let i = 1; i < sessions.length; i++) {
    const a = sessions[i - 1]!;
    const b = sessions[i]!;
    const ordered = a.updatedAt > b.updatedAt || (a.updatedAt === b.updatedAt && a.id < b.id);
    if (!ordered) violation(`${what}: ${a.id} (${a.updatedAt}) is listed before ${b.id} (${b.updatedAt})`);
  }
}

const listing: ContractCheck[] = [
  {
    group: 'list',
    name: 'list orders by updatedAt, newest first, ties by id, and an update moves a session up',
    async run(ctx) {
      const store = await ctx.open();
      for (const id of ['s-a', 's-b', 's-c']) {
        await materialize(store, id);
        await pause(3);
      }
      let listed = (await store.list()).sessions;
      expect(listed.map((s) => s.id)).toEqual(['s-c', 's-b', 's-a']);
      assertListOrder(listed, 'list');
      await store.update('s-a', { title: 'touched' });
      await pause(3);
      await store.append('s-b', [ev(1)]);
      listed = (await store.list()).sessions;
      expect(listed.map((s) => s.id)).toEqual(['s-b', 's-a', 's-c']);
      assertListOrder(listed, 'list after update and append');
      expect((await store.list()).problems).toEqual([]);
    },
  },
  {
    group: 'list',
    name: 'paging with limit and cursor covers every session exactly once; cwd filters',
    async run(ctx) {
      const store = await ctx.open();
      const ids = Array.from({ length: 9 }, (_, i) => `page-${i}`);
      for (const [i, id] of ids.entries())
        await materialize(store, id, evs(0, 1), i % 3 === 0 ? '/w/one' : '/w/two');
      for (const limit of [1, 2, 4, 9, 10]) {
        const seen: string[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          const page = await store.list({ limit, ...(cursor !== undefined && { cursor }) });
          expect(page.sessions.length).toBeLessThanOrEqual(limit);
          expect(page.problems).toEqual([]);
          seen.push(...page.sessions.map((s) => s.id));
          cursor = page.nextCursor;
          if (++pages > 20) violation(`paging with limit ${limit} does not end`);
        } while (cursor !== undefined);
        expect(seen.length, `sessions seen with limit ${limit}`).toBe(ids.length);
        expect([...seen].sort()).toEqual([...ids].sort());
        expect(pages).toBe(Math.max(1, Math.ceil(ids.length / limit)));
      }
      const all = await listAll(store);
      assertListOrder(all, 'list');
      const one = await listAll(store, '/w/one', 2);
      expect(one.map((s) => s.id).sort()).toEqual(['page-0', 'page-3', 'page-6']);
      for (const s of one) expect(s.cwd).toBe('/w/one');
      expect((await listAll(store, '/w/two', 4)).length).toBe(6);
      expect(await listAll(store, '/w/none')).toEqual([]);
    },
  },
  {
    group: 'list',
    name: 'summaries carry eventCount, commit state, title, tags, attrs and the derived firstPrompt',
    async run(ctx) {
      const store = await ctx.open();
      await store.create({
        id: 'described',
        cwd: '/w',
        title: 'Title',
        tags: ['x', 'y'],
        parent: { id: 'p', seq: 0 },
      });
      const events = [
        ev(0, 'turn/start'),
        ev(1, 'user/message', { text: '  hello\n   world  ' }),
        ev(2, 'turn/end'),
        ev(3, 'user/message', { text: 'later' }),
      ];
      await store.append('described', events);
      await store.update('described', { attrs: { model: 'm', n: 1 } });
      const expectedPrompt = promptOf(events[1]!);
      const [summary] = (await store.list()).sessions;
      expect(summary).toMatchObject({
        id: 'described',
        cwd: '/w',
        parent: { id: 'p', seq: 0 },
        eventCount: 4,
        committedSeq: 2,
        interrupted: true,
        title: 'Title',
        tags: ['x', 'y'],
        attrs: { model: 'm', n: 1 },
        firstPrompt: expectedPrompt,
      });
      expect(summary).toEqual((await store.load('described')).summary);
      await materialize(store, 'plain-string', [ev(0, 'user/message', 'just text')]);
      expect((await store.load('plain-string')).summary.firstPrompt).toBe('just text');
      await materialize(store, 'no-prompt', [ev(0, 'tool/call', { text: 'not a prompt' })]);
      expect((await store.load('no-prompt')).summary.firstPrompt).toBeUndefined();
    },
  },
  {
    group: 'list',
    name: 'list rejects a bad limit or cursor with INVALID',
    async run(ctx) {
      const store = await ctx.open();
      await materialize(store, 'one');
      await materialize(store, 'two');
      for (const limit of [0, -1, 1.5, Number.NaN, 1_000_000])
        await expectCode(store.list({ limit }), 'INVALID', `limit ${limit}`);
      for (const cursor of ['not a cursor!', 'e30', Buffer.from('[1,2]').toString('base64url')]) {
        await expectCode(store.list({ cursor }), 'INVALID', `cursor ${JSON.stringify(cursor)}`);
      }
      await expectCode(
        store.list({ limit: '2' } as unknown as { limit: number }),
        'INVALID',
        'limit as a string',
      );
      expect((await store.list({ limit: 1 })).sessions.length).toBe(1);
    },
  },
];

const updating: ContractCheck[] = [
  {
    group: 'update',
    name: 'update changes fields, moves updatedAt, and agrees with load and list',
    async run(ctx) {
      const store = await ctx.open();
      await materialize(store, 'upd', [ev(0, 'user/message', { text: 'prompt' })]);
      const before = (await store.load('upd')).summary;
      await pause(3);
      const returned = await store.update('upd', {
        title: 'New',
        tags: ['a'],
        attrs: { k: [1, { v: null }] },
        firstPrompt: 'override',
      });
      expect(returned).toMatchObject({
        title: 'New',
        tags: ['a'],
        attrs: { k: [1, { v: null }] },
        firstPrompt: 'override',
      });
      if (!(returned.updatedAt > before.updatedAt))
        violation(`updatedAt did not move: ${before.updatedAt} → ${returned.updatedAt}`);
      expect(returned.createdAt).toBe(before.createdAt);
      expect(returned.eventCount).toBe(1);
      expect((await store.load('upd')).summary).toEqual(returned);
      expect((await store.list()).sessions[0]).toEqual(returned);
      const partial = await store.update('upd', { title: 'Newer' });
      expect(partial).toMatchObject({ title: 'Newer', tags: ['a'], firstPrompt: 'override' });
      if (!(partial.updatedAt >= returned.updatedAt)) violation('updatedAt went backwards');
      // An empty patch is a touch: it moves updatedAt and nothing else. Lifecycle relies on it,
      // so that a delete conditional on an older updatedAt cannot remove a just-restored session.
      const touched = await store.update('upd', {});
      if (!(touched.updatedAt > partial.updatedAt))
        violation(`an empty update did not move updatedAt: ${partial.updatedAt} → ${touched.updatedAt}`);
      expect({ ...touched, updatedAt: partial.updatedAt }).toEqual(partial);
      expect((await store.load('upd')).summary).toEqual(touched);
      await expectCode(store.update('absent', { title: 'x' }), 'NOT_FOUND', 'update of an absent session');
    },
  },
  {
    group: 'update',
    name: 'an INVALID patch changes nothing, in storage or in what load and list return',
    async run(ctx) {
      const store = await ctx.open();
      await materialize(store, 'strict');
      await store.update('strict', { title: 'kept', tags: ['kept'] });
      const before = (await store.load('strict')).summary;
      const patches: unknown[] = [
        { title: 5 },
        { tags: 'x' },
        { tags: [1] },
        { attrs: [] },
        { attrs: { x: 1n } },
        { bogus: 1 },
        { title: 'changed', tags: 'not an array' },
        { title: 'x'.repeat(5000) },
        null,
      ];
      for (const patch of patches) {
        await expectCode(
          store.update('strict', patch as { title?: string }),
          'INVALID',
          `patch ${describeError(patch)}`,
        );
      }
      expect((await store.load('strict')).summary).toEqual(before);
      expect((await store.list()).sessions[0]).toEqual(before);
    },
  },
  {
    group: 'update',
    name: 'update of a pending session returns a summary, stays invisible, and is written with the first batch',
    async run(ctx) {
      const store = await ctx.open();
      await store.create({ id: 'pending-upd', cwd: '/p', title: 'from create' });
      const summary = await store.update('pending-upd', { title: 'from update', attrs: { a: 1 } });
      expect(summary).toMatchObject({
        id: 'pending-upd',
        title: 'from update',
        attrs: { a: 1 },
        eventCount: 0,
        committedSeq: -1,
      });
      await store.update('pending-upd', { tags: ['t'] });
      expect(await store.has('pending-upd')).toBe(false);
      expect((await store.list()).sessions).toEqual([]);
      await expectCode(
        store.update('pending-upd', { title: 5 } as unknown as { title: string }),
        'INVALID',
        'bad patch on pending',
      );
      await store.append('pending-upd', [ev(0, 'user/message', { text: 'q' })]);
      const loaded = await store.load('pending-upd');
      expect(loaded.summary).toMatchObject({
        title: 'from update',
        attrs: { a: 1 },
        tags: ['t'],
        cwd: '/p',
        eventCount: 1,
        firstPrompt: 'q',
      });
      await store.close();
      const reopened = await ctx.reopen(store);
      expect((await reopened.load('pending-upd')).summary).toEqual(loaded.summary);
    },
  },
];

const deleting: ContractCheck[] = [
  {
    group: 'delete',
    name: 'delete removes a session everywhere; the id can be created again; unknown is NOT_FOUND',
    async run(ctx) {
      const store = await ctx.open();
      await materialize(store, 'gone', evs(0, 3), '/d');
      await materialize(store, 'stays', evs(0, 1), '/d');
      await store.delete('gone');
      expect(await store.has('gone')).toBe(false);
      await expectCode(store.load('gone'), 'NOT_FOUND', 'load after delete');
      await expectCode(() => collect(store.read('gone')), 'NOT_FOUND', 'read after delete');
      await expectCode(store.update('gone', { title: 'x' }), 'NOT_FOUND', 'update after delete');
      await expectCode(store.append('gone', [ev(3)]), 'NOT_FOUND', 'append after delete');
      await expectCode(store.delete('gone'), 'NOT_FOUND', 'second delete');
      await expectCode(store.delete('never'), 'NOT_FOUND', 'delete of an unknown id');
      expect((await listAll(store)).map((s) => s.id)).toEqual(['stays']);
      expect((await listAll(store, '/d')).map((s) => s.id)).toEqual(['stays']);
      await store.create({ id: 'gone' });
      await expectCode(store.append('gone', [ev(3)]), 'CONFLICT', 'a recreated session starts at seq 0');
      expect(await store.append('gone', [ev(0, 'note', { reborn: true })])).toEqual({ nextSeq: 1 });
      const reborn = await store.load('gone');
      expect(reborn.events).toEqual([ev(0, 'note', { reborn: true })]);
      expect(reborn.summary.eventCount).toBe(1);
      await store.close();
      const reopened = await ctx.reopen(store);
      expect(await eventsOf(reopened, 'gone')).toEqual([ev(0, 'note', { reborn: true })]);
      expect(await eventsOf(reopened, 'stays')).toEqual(evs(0, 1));
    },
  },
  {
    group: 'delete',
    name: 'delete of a pending session drops the reservation',
    async run(ctx) {
      const store = await ctx.open();
      await store.create({ id: 'reserved' });
      await store.delete('reserved');
      await expectCode(
        store.append('reserved', [ev(0)]),
        'NOT_FOUND',
        'append after the pending session was deleted',
      );
      expect(await store.has('reserved')).toBe(false);
      await store.create({ id: 'reserved' });
      expect(await store.append('reserved', [ev(0)])).toEqual({ nextSeq: 1 });
    },
  },
  {
    group: 'delete',
    name: 'delete with ifUpdatedAt removes only that version; a changed session is CONFLICT and stays whole',
    async run(ctx) {
      // A cleanup decides from what it saw; another instance (another process) writes meanwhile.
      const store = await ctx.open();
      const other = await ctx.reopen(store);
      await materialize(store, 's', evs(0, 2), '/d');
      const seen = (await store.load('s')).summary.updatedAt;
      await other.append('s', [ev(2)]);
      await expectCode(
        store.delete('s', { ifUpdatedAt: seen }),
        'CONFLICT',
        'delete of a version appended to since',
      );
      expect(await eventsOf(store, 's')).toEqual([...evs(0, 2), ev(2)]);
      const appended = (await store.load('s')).summary.updatedAt;
      await other.update('s', { title: 'renamed' });
      await expectCode(
        store.delete('s', { ifUpdatedAt: appended }),
        'CONFLICT',
        'delete of a version updated since',
      );
      const kept = await other.load('s');
      expect(kept.events).toEqual([...evs(0, 2), ev(2)]);
      expect(kept.summary.title).toBe('renamed');
      await store.delete('s', { ifUpdatedAt: kept.summary.updatedAt });
      expect(await other.has('s')).toBe(false);
      await expectCode(
        store.delete('s', { ifUpdatedAt: kept.summary.updatedAt }),
        'NOT_FOUND',
        'a second delete',
      );
      await materialize(store, 't', evs(0, 1), '/d');
      await expectCode(
        store.delete('t', { ifUpdatedAt: 'yesterday' }),
        'INVALID',
        'a version that is no timestamp',
      );
      expect(await store.has('t')).toBe(true);
    },
  },
];

const lifecycle: ContractCheck[] = [
  {
    group: 'close',
    name: 'every method rejects with CLOSED after close',
    async run(ctx) {
      const store = await ctx.open();
      await materialize(store, 'open-then-closed');
      const readBeforeClose = store.read('open-then-closed');
      await store.close();
      await expectCode(store.create({ id: 'x' }), 'CLOSED', 'create');
      await expectCode(store.create(), 'CLOSED', 'create without id');
      await expectCode(store.append('open-then-closed', [ev(1)]), 'CLOSED', 'append');
      await expectCode(store.load('open-then-closed'), 'CLOSED', 'load');
      await expectCode(() => collect(store.read('open-then-closed')), 'CLOSED', 'read');
      await expectCode(() => collect(readBeforeClose), 'CLOSED', 'iterating a read created before close');
      await expectCode(store.list(), 'CLOSED', 'list');
      await expectCode(store.has('open-then-closed'), 'CLOSED', 'has');
      await expectCode(store.update('open-then-closed', { title: 'x' }), 'CLOSED', 'update');
      await expectCode(store.delete('open-then-closed'), 'CLOSED', 'delete');
      try {
        await store.close();
      } catch (error) {
        if (!isTidemarkError(error, 'CLOSED'))
          violation(`a second close() must resolve or be CLOSED, got ${describeError(error)}`);
      }
      const reopened = await ctx.reopen(store);
      expect(await eventsOf(reopened, 'open-then-closed')).toEqual(evs(0, 1));
    },
  },
  {
    group: 'close',
    name: 'everything persists across close and reopen, summaries included',
    async run(ctx) {
      const store = await ctx.open();
      await store.create({ id: 'p-1', cwd: '/a', title: 'one', tags: ['t'], parent: { id: 'p-0', seq: 1 } });
      await store.append('p-1', [ev(0, 'user/message', { text: 'hello' }), ev(1, 'turn/end')]);
      await store.append('p-1', [
        ev(2, 'tool/call', JSON.parse('{"__proto__":{"x":1},"u":"\\ud800"}') as JsonValue),
      ]);
      await store.create({ id: 'p-2', cwd: '/b' });
      await store.update('p-2', { attrs: { pending: true } });
      await store.append('p-2', [ev(0, 'turn/start'), ev(1, 'turn/end'), ev(2, 'note')]);
      await store.load('p-2', { tail: 'cut' });
      await materialize(store, 'p-3');
      await store.update('p-3', { title: 'three', firstPrompt: 'fp' });
      await materialize(store, 'p-gone');
      await store.delete('p-gone');
      await store.create({ id: 'p-pending' });
      const snapshot = async (s: SessionStore) => ({
        list: await listAll(s),
        loads: await Promise.all(['p-1', 'p-2', 'p-3'].map((id) => s.load(id))),
        streamed: await collect(s.read('p-1')),
      });
      const before = await snapshot(store);
      await store.close();
      const reopened = await ctx.reopen(store);
      const after = await snapshot(reopened);
      expect(after.list).toEqual(before.list);
      expect(after.loads.map((l) => [l.meta, l.summary, l.events, l.committedSeq, l.interrupted])).toEqual(
        before.loads.map((l) => [l.meta, l.summary, l.events, l.committedSeq, l.interrupted]),
      );
      byteIdentical(after.streamed, before.streamed, 'read after reopen');
      expect(await reopened.has('p-gone')).toBe(false);
      expect(await reopened.has('p-pending')).toBe(false);
      await expectCode(
        reopened.append('p-pending', [ev(0)]),
        'NOT_FOUND',
        'a reservation does not survive close',
      );
      expect(await reopened.append('p-1', [ev(3, 'turn/end')])).toEqual({ nextSeq: 4 });
      expect(await reopened.append('p-2', [ev(2, 'note')])).toEqual({ nextSeq: 3 });
      // An idempotent retry must also be recognised from storage alone, with no memory of the call.
      expect(await reopened.append('p-1', [ev(3, 'turn/end')]), 'retry after reopen').toEqual({ nextSeq: 4 });
      await expectCode(
        reopened.append('p-1', [ev(3, 'note')]),
        'CONFLICT',
        'different event at a stored seq after reopen',
      );
    },
  },
];

/** Appends `batch` and reports whether it won (true) or lost with CONFLICT (false). */
async function tryAppend(
  store: SessionStore,
  id: string,
  batch: SessionEvent[],
  what: string,
): Promise<boolean> {
  try {
    await store.append(id, batch);
    return true;
  } catch (error) {
    if (isTidemarkError(error, 'CONFLICT')) return false;
    return violation(`${what}: a losing writer must get CONFLICT, got ${describeError(error)}`);
  }
}

const concurrency: ContractCheck[] = [
  {
    group: 'two instances',
    name: 'a second live instance sees the first one’s writes and the first sees the second’s',
    async run(ctx) {
      const a = await ctx.open();
      const b = await ctx.reopen(a);
      await materialize(a, 'shared', [ev(0, 'user/message', { text: 'from a' })], '/s');
      expect(await b.has('shared')).toBe(true);
      expect(await eventsOf(b, 'shared')).toEqual([ev(0, 'user/message', { text: 'from a' })]);
      expect(await b.append('shared', [ev(1, 'note', { from: 'b' })])).toEqual({ nextSeq: 2 });
      await expectCode(
        a.append('shared', [ev(1, 'note', { from: 'a' })]),
        'CONFLICT',
        'a stale writer appending a seq the other wrote',
      );
      expect(await a.append('shared', [ev(2, 'note', { from: 'a' })])).toEqual({ nextSeq: 3 });
      const expected = [
        ev(0, 'user/message', { text: 'from a' }),
        ev(1, 'note', { from: 'b' }),
        ev(2, 'note', { from: 'a' }),
      ];
      expect(await eventsOf(a, 'shared')).toEqual(expected);
      expect(await eventsOf(b, 'shared')).toEqual(expected);
      expect((await b.list()).sessions.map((s) => [s.id, s.eventCount])).toEqual([['shared', 3]]);
      await b.update('shared', { title: 'set by b' });
      expect((await a.load('shared')).summary.title).toBe('set by b');
      await a.delete('shared');
      expect(await b.has('shared')).toBe(false);
    },
  },
  {
    group: 'two instances',
    name: 'two instances appending concurrently: every seq is won by exactly one append, losers get CONFLICT',
    async run(ctx) {
      const a = await ctx.open();
      const b = await ctx.reopen(a);
      await materialize(a, 'race', [ev(0)]);
      const winners: SessionEvent[] = [ev(0)];
      let attempts = 0;
      while (winners.length < 16) {
        if (++attempts > 200)
          violation('no writer ever won a seq: the store makes no progress under contention');
        const seq = winners.length;
        const batchA = [ev(seq, 'note', { writer: 'a', seq })];
        const batchB = [ev(seq, 'note', { writer: 'b', seq })];
        const [wonA, wonB] = await Promise.all([
          tryAppend(a, 'race', batchA, 'writer a'),
          tryAppend(b, 'race', batchB, 'writer b'),
        ]);
        if (wonA && wonB) violation(`seq ${seq} was won by both writers`);
        if (wonA) winners.push(batchA[0]!);
        if (wonB) winners.push(batchB[0]!);
      }
      for (const store of [a, b]) {
        const events = await eventsOf(store, 'race');
        expect(events.map((e) => e.seq)).toEqual(winners.map((e) => e.seq));
        expect(events).toEqual(winners);
        expect((await store.load('race')).summary.eventCount).toBe(winners.length);
      }
    },
  },
  {
    group: 'two instances',
    name: "a reservation ends when this instance's append lands on the session another instance materialized, not when it is refused",
    async run(ctx) {
      // Instance a reserves an id that instance b then materializes and later deletes.
      const a = await ctx.open();
      const b = await ctx.reopen(a);
      await a.create({ id: 'refused', title: 'from a' });
      await b.create({ id: 'refused', title: 'from b' });
      await b.append('refused', [ev(0, 'note', { writer: 'b' })]);
      await expectCode(
        a.append('refused', [ev(0, 'note', { writer: 'a' })]),
        'CONFLICT',
        "a's append at a seq b stored",
      );
      await b.delete('refused');
      // The refused append changed nothing: a still holds its reservation and its first batch
      // creates the session with a's meta.
      await expectCode(a.create({ id: 'refused' }), 'ALREADY_EXISTS', 'create of an id a still reserves');
      expect(await a.append('refused', [ev(0, 'note', { writer: 'a' })])).toEqual({ nextSeq: 1 });
      expect((await b.load('refused')).summary.title).toBe('from a');

      await a.create({ id: 'landed', title: 'from a' });
      await b.create({ id: 'landed', title: 'from b' });
      await b.append('landed', [ev(0, 'note', { writer: 'b' })]);
      expect(await a.append('landed', [ev(1, 'note', { writer: 'a' })])).toEqual({ nextSeq: 2 });
      await b.delete('landed');
      // a's append landed on b's session, so a's reservation is gone with it.
      await expectCode(
        a.append('landed', [ev(0, 'note', { writer: 'a' })]),
        'NOT_FOUND',
        'append after the session a wrote to was deleted',
      );
      await a.create({ id: 'landed' });
    },
  },
  {
    group: 'two instances',
    name: 'an idempotent retry that succeeds on the session another instance materialized ends the reservation too',
    async run(ctx) {
      // a reserves an id; b materializes it with the very batch a then sends: a's append succeeds
      // (an idempotent retry, nothing written), so a's batch is in the session and its reservation
      // ends exactly as when an append of a's writes.
      const a = await ctx.open();
      const b = await ctx.reopen(a);
      await a.create({ id: 'retried', title: 'from a' });
      await b.create({ id: 'retried', title: 'from b' });
      await b.append('retried', [ev(0), ev(1)]);
      expect(await a.append('retried', [ev(0)])).toEqual({ nextSeq: 2 });
      await b.delete('retried');
      await expectCode(
        a.append('retried', [ev(0)]),
        'NOT_FOUND',
        'append after the session a retried on was deleted',
      );
      await a.create({ id: 'retried' });
    },
  },
  {
    group: 'two instances',
    name: 'a delete refused with CONFLICT (ifUpdatedAt) keeps the reservation of the instance that asked',
    async run(ctx) {
      // a reserves an id that b materializes; a's conditional delete of a version the session never
      // had is refused, and a refused delete changes nothing: a's reservation outlives b's delete.
      const a = await ctx.open();
      const b = await ctx.reopen(a);
      await a.create({ id: 'kept', title: 'from a' });
      await b.create({ id: 'kept', title: 'from b' });
      await b.append('kept', [ev(0, 'note', { writer: 'b' })]);
      await expectCode(
        a.delete('kept', { ifUpdatedAt: '2001-01-01T00:00:00.000Z' }),
        'CONFLICT',
        'delete of a version the session never had',
      );
      expect(await b.has('kept')).toBe(true);
      await b.delete('kept');
      await expectCode(a.create({ id: 'kept' }), 'ALREADY_EXISTS', 'create of an id a still reserves');
      expect(await a.append('kept', [ev(0, 'note', { writer: 'a' })])).toEqual({ nextSeq: 1 });
      expect((await b.load('kept')).summary.title).toBe('from a');
    },
  },
  {
    group: 'two instances',
    name: 'two instances racing the first batch of the same pending id: exactly one materializes',
    async run(ctx) {
      const a = await ctx.open();
      const b = await ctx.reopen(a);
      for (let round = 0; round < 5; round++) {
        const id = `first-${round}`;
        await a.create({ id, title: 'a' });
        await b.create({ id, title: 'b' });
        const batchA = [ev(0, 'note', { writer: 'a' }), ev(1, 'note', { writer: 'a' })];
        const batchB = [ev(0, 'note', { writer: 'b' })];
        const [wonA, wonB] = await Promise.all([
          tryAppend(a, id, batchA, 'writer a'),
          tryAppend(b, id, batchB, 'writer b'),
        ]);
        if (wonA === wonB)
          violation(`round ${round}: ${wonA ? 'both writers' : 'neither writer'} materialized the session`);
        const winner = wonA ? batchA : batchB;
        for (const store of [a, b]) {
          const loaded = await store.load(id);
          expect(loaded.events).toEqual(winner);
          expect(loaded.summary.title).toBe(wonA ? 'a' : 'b');
          expect(loaded.summary.eventCount).toBe(winner.length);
        }
        await expectCode(
          (wonA ? b : a).create({ id }),
          'ALREADY_EXISTS',
          'create by the loser after the race',
        );
        expect((await listAll(a)).filter((s) => s.id === id).length).toBe(1);
      }
    },
  },
];

const inputValidation: ContractCheck[] = [
  {
    group: 'create',
    name: 'create, load and list reject malformed arguments with INVALID and create nothing',
    async run(ctx) {
      const store = await ctx.open();
      const bad: Array<[string, unknown]> = [
        ['a cwd that is not a string', { id: 'c1', cwd: 5 }],
        ['an unknown field', { id: 'c2', colour: 'red' }],
        ['tags that are not strings', { id: 'c3', tags: [1] }],
        ['a parent without seq', { id: 'c4', parent: { id: 'p' } }],
        ['a parent with a bad id', { id: 'c5', parent: { id: '../p', seq: 0 } }],
        ['a title that is not a string', { id: 'c6', title: {} }],
        ['an array', []],
      ];
      for (const [what, init] of bad)
        await expectCode(store.create(init as { id: string }), 'INVALID', `create with ${what}`);
      for (const id of ['c1', 'c2', 'c3', 'c4', 'c5', 'c6']) {
        await expectCode(
          store.append(id, [ev(0)]),
          'NOT_FOUND',
          `append to ${id} after its create was rejected`,
        );
      }
      await materialize(store, 'loaded');
      await expectCode(
        store.load('loaded', { tail: 'trim' } as unknown as { tail: 'cut' }),
        'INVALID',
        "load with tail: 'trim'",
      );
      await expectCode(
        store.list({ cwd: 7 } as unknown as { cwd: string }),
        'INVALID',
        'list with a numeric cwd',
      );
      expect((await store.list()).sessions.map((s) => s.id)).toEqual(['loaded']);
    },
  },
  {
    group: 'round trip',
    name: 'event times and types come back exactly as given (offsets, fractions, unusual types)',
    async run(ctx) {
      const store = await ctx.open();
      const times = [
        '2026-01-01T00:00:00Z',
        '2026-01-01T00:00:00.000Z',
        '2026-01-01T00:00:00.123456789Z',
        '2026-06-30T23:59:59+02:00',
        '2026-06-30T23:59-05:30',
        '1970-01-01T00:00:00.5Z',
      ];
      const types = ['note', 'x', 'tool/call', 'ünïcödé/type 🌊', 'with space', 't'.repeat(256)];
      const events = times.map((time, seq) => ({ seq, type: types[seq]!, time, data: seq }));
      await store.create({ id: 'times' });
      await store.append('times', events);
      const loaded = await store.load('times');
      expect(loaded.events).toEqual(events);
      byteIdentical(loaded.events, events, 'load');
      await store.close();
      const reopened = await ctx.reopen(store);
      byteIdentical(await collect(reopened.read('times')), events, 'read after reopen');
      expect(await reopened.append('times', events), 'retry of the whole batch after reopen').toEqual({
        nextSeq: events.length,
      });
    },
  },
  {
    group: 'list',
    name: 'firstPrompt follows the shared rule: first user/message, whitespace flattened, long text shortened',
    async run(ctx) {
      const store = await ctx.open();
      const long = `${'word '.repeat(100)}end`;
      const events = [
        ev(0, 'user/message', {}),
        ev(1, 'user/message', { content: `  ${long}\n` }),
        ev(2, 'user/message', 'later'),
      ];
      await store.create({ id: 'prompted' });
      await store.append('prompted', events.slice(0, 1));
      expect(
        (await store.load('prompted')).summary.firstPrompt,
        'a user/message without text gives no prompt',
      ).toBeUndefined();
      await store.append('prompted', events.slice(1));
      const expected = promptOf(events[1]!);
      expect(expected?.length).toBeLessThan(long.length);
      expect((await store.load('prompted')).summary.firstPrompt).toBe(expected);
      expect((await store.list()).sessions[0]?.firstPrompt).toBe(expected);
    },
  },
  {
    group: 'list',
    name: 'text fields are well-formed Unicode: an emoji across the prompt limit survives reopen; lone surrogates are INVALID',
    async run(ctx) {
      const store = await ctx.open();
      const emoji = '\ud83d\ude00';
      // The pair straddles the prompt limit: cutting it would leave a lone half, which a backend
      // storing text as UTF-8 cannot keep.
      const message = ev(
        0,
        'user/message',
        `${'a'.repeat(FIRST_PROMPT_LENGTH - 2)}${emoji}${'b'.repeat(50)}`,
      );
      await store.create({ id: 'emoji', title: `title ${emoji}`, tags: [emoji], cwd: `/w/${emoji}` });
      await store.append('emoji', [message, ev(1, 'turn/end', { text: `lone in data is kept \ud83d` })]);
      const expected = promptOf(message)!;
      expect(
        expected.includes('\ud83d') && !expected.includes(emoji),
        'the derived prompt split the pair',
      ).toBe(false);
      const check = async (s: SessionStore) => {
        const loaded = await s.load('emoji');
        expect(loaded.summary.firstPrompt).toBe(expected);
        expect(loaded.summary.title).toBe(`title ${emoji}`);
        expect(loaded.summary.tags).toEqual([emoji]);
        expect(loaded.meta.cwd).toBe(`/w/${emoji}`);
        expect(loaded.events[1]!.data).toEqual({ text: `lone in data is kept \ud83d` });
        expect((await listAll(s, `/w/${emoji}`)).map((x) => x.firstPrompt)).toEqual([expected]);
      };
      await check(store);
      for (const [what, attempt] of [
        ['type', () => store.append('emoji', [ev(2, 'tool/\ud83d', null)])],
        ['title', () => store.update('emoji', { title: 'x\ude00' })],
        ['cwd', () => store.create({ id: 'lone-cwd', cwd: '/w/\ud83d' })],
      ] as const) {
        await expectCode(attempt(), 'INVALID', `a lone surrogate in ${what}`);
      }
      await store.close();
      await check(await ctx.reopen(store));
    },
  },
];

const opaqueCwds: ContractCheck[] = [
  {
    group: 'list',
    name: 'cwd is an opaque string: empty, relative, Windows-style, unicode and multi-line values filter exactly',
    async run(ctx) {
      const store = await ctx.open();
      const cwds = ['', '../../etc', 'C:\\Users\\agent', '/tmp/ünï cödé 🌊', '/a\nb', '/w', '/w/'];
      for (const [i, cwd] of cwds.entries()) await materialize(store, `cwd-${i}`, evs(0, 1), cwd);
      await materialize(store, 'no-cwd');
      const check = async (s: SessionStore) => {
        for (const [i, cwd] of cwds.entries()) {
          expect(
            (await listAll(s, cwd)).map((x) => x.id),
            `list with cwd ${JSON.stringify(cwd)}`,
          ).toEqual([`cwd-${i}`]);
          expect((await s.load(`cwd-${i}`)).meta.cwd).toBe(cwd);
        }
        const noCwd = await s.load('no-cwd');
        expect(noCwd.meta.cwd).toBeUndefined();
        expect(noCwd.summary.cwd).toBeUndefined();
        expect((await listAll(s)).length).toBe(cwds.length + 1);
      };
      await check(store);
      await store.close();
      await check(await ctx.reopen(store));
    },
  },
];

const sameInstance: ContractCheck[] = [
  {
    group: 'one instance',
    name: 'concurrent appends to one session from one instance: each seq is won once, the rest get CONFLICT',
    async run(ctx) {
      const store = await ctx.open();
      await materialize(store, 'busy', [ev(0)]);
      const winners: SessionEvent[] = [ev(0)];
      for (let round = 0; round < 8; round++) {
        const seq = winners.length;
        const batches = [0, 1, 2].map((writer) => [
          ev(seq, 'note', { writer, seq }),
          ev(seq + 1, 'note', { writer, seq }),
        ]);
        const won = await Promise.all(
          batches.map((batch, writer) => tryAppend(store, 'busy', batch, `writer ${writer}`)),
        );
        const count = won.filter(Boolean).length;
        if (count !== 1)
          violation(`round ${round}: ${count} of 3 concurrent appends at seq ${seq} succeeded`);
        winners.push(...batches[won.indexOf(true)]!);
      }
      expect(await eventsOf(store, 'busy')).toEqual(winners);
      expect((await store.load('busy')).summary.eventCount).toBe(winners.length);
      expect(await collect(store.read('busy'))).toEqual(winners);
    },
  },
  {
    group: 'one instance',
    name: 'concurrent operations on different sessions of one instance all land',
    async run(ctx) {
      const store = await ctx.open();
      const ids = Array.from({ length: 12 }, (_, i) => `many-${i}`);
      await Promise.all(ids.map((id, i) => store.create({ id, cwd: i % 2 === 0 ? '/even' : '/odd' })));
      await Promise.all(ids.map((id) => store.append(id, evs(0, 2, 'note', id))));
      await Promise.all(ids.map((id) => store.append(id, [ev(2, 'turn/end')])));
      await Promise.all(ids.map((id, i) => store.update(id, { title: `title ${i}` })));
      const loaded = await Promise.all(ids.map((id) => store.load(id)));
      loaded.forEach((session, i) => {
        expect(session.events).toEqual([...evs(0, 2, 'note', ids[i]!), ev(2, 'turn/end')]);
        expect(session.summary).toMatchObject({
          eventCount: 3,
          committedSeq: 2,
          interrupted: false,
          title: `title ${i}`,
        });
      });
      expect((await listAll(store)).length).toBe(ids.length);
      expect((await listAll(store, '/even', 5)).length).toBe(6);
      await Promise.all(ids.slice(0, 6).map((id) => store.delete(id)));
      expect((await listAll(store)).map((s) => s.id).sort()).toEqual(ids.slice(6).sort());
    },
  },
];

/** Every check of SPEC §4 that needs no fault injection, in the order the suite runs them. */
export const contractChecks: readonly ContractCheck[] = [
  ...roundTrip,
  ...materialization,
  ...seqRules,
  ...boundary,
  ...reading,
  ...listing,
  ...updating,
  ...deleting,
  ...lifecycle,
  ...inputValidation,
  ...opaqueCwds,
  ...sameInstance,
  ...concurrency,
];

/** The check with this name. @throws Error when there is none (a typo in a test). */
export function contractCheck(name: string): ContractCheck {
  const found = contractChecks.find((check) => check.name === name);
  if (found === undefined) throw new Error(`no contract check named ${JSON.stringify(name)}`);
  return found;
}
