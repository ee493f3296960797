// Round trip (contract "Values"): events, times, types and prototype-named keys come back exactly as
// they went in.
import type { JsonValue } from '@tidemark/core';
import { expect } from 'vitest';
import { type ContractCheck, collect, ev, violation } from '../harness.js';
import { byteIdentical, eventsOf, nested } from './support.js';

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

/** The checks of the `round trip` group. */
export const roundTripChecks: ContractCheck[] = [
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
];
