// Values are stored in the smallest form that gives their bytes back exactly (deflated, text, or
// base64), and a thread written when base64 was the only form reads the same, as does one written
// when values that deflating saved less than 1 KiB of were deflated too, and one written when json
// values were kept as the JSON itself.

import { deflateRawSync } from 'node:zlib';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import type { JsonValue, SessionEvent } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import { describe, expect, it } from 'vitest';
import { sessionIdOfThread, TidemarkSaver } from '../src/index.js';
import {
  decodeBytes,
  decodeForSerde,
  encodeBytes,
  sameSerialized,
  storedLengthAtMost,
} from '../src/values.js';

const State = Annotation.Root({
  items: Annotation<{ n: number; text: string }[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
  raw: Annotation<Uint8Array>(),
});

function buildGraph(saver: TidemarkSaver) {
  return new StateGraph(State)
    .addNode('step', (s) => ({
      items: [{ n: s.items.length, text: `entry ${s.items.length} ✓ "quoted"` }],
      raw: new Uint8Array([0, 255, s.items.length]),
    }))
    .addEdge(START, 'step')
    .addConditionalEdges('step', (s) => (s.items.length < 60 ? 'step' : END))
    .compile({ checkpointer: saver });
}

/** `event` with every stored value (`{ t, b|s|j|z }`) replaced by `form(type, bytes)`. */
function rewriteValues(
  event: SessionEvent,
  form: (type: string, bytes: Uint8Array) => Record<string, JsonValue>,
): SessionEvent {
  const rewrite = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(rewrite);
    if (typeof value !== 'object' || value === null) return value;
    const fields = value as Record<string, unknown>;
    if (typeof fields.t === 'string' && ['b', 's', 'j', 'z'].some((k) => Object.hasOwn(fields, k)))
      return { t: fields.t, ...form(fields.t, decodeBytes(fields as never)) };
    return Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, rewrite(v)]));
  };
  return { ...event, data: rewrite(event.data) as JsonValue };
}

/** An event with every stored value in the only form older versions wrote: base64 of its bytes. */
function asBase64(event: SessionEvent): SessionEvent {
  return rewriteValues(event, (_, bytes) => ({ b: Buffer.from(bytes).toString('base64') }));
}

/**
 * An event with every `json` value held as the JSON itself where JSON.stringify writes its bytes
 * back exactly, as the versions before text was the form of `json` values wrote them.
 */
function asJson(event: SessionEvent): SessionEvent {
  return rewriteValues(event, (type, bytes) => {
    const { t: _t, ...form } = encodeBytes(type, bytes);
    if (type !== 'json' || form.s === undefined) return form as Record<string, JsonValue>;
    const j = JSON.parse(form.s) as JsonValue;
    return JSON.stringify(j) === form.s ? { j } : (form as Record<string, JsonValue>);
  });
}

/**
 * An event with every stored value of 1 KiB and more that deflating shrinks by a fifth deflated,
 * as versions before the 1 KiB minimum saving wrote them (the rest as they are now).
 */
function asDeflatedFromOneKiB(event: SessionEvent): SessionEvent {
  return rewriteValues(event, (type, bytes) => {
    const deflated = deflateRawSync(bytes, { level: 1 });
    if (bytes.byteLength >= 1024 && (deflated.byteLength * 4) / 3 < bytes.byteLength * 0.8)
      return { z: deflated.toString('base64') };
    const { t: _t, ...form } = encodeBytes(type, bytes);
    return form as Record<string, JsonValue>;
  });
}

/** A copy of thread `threadId` of `store` with each event through `rewrite`, in a new store. */
async function copyThread(
  store: Awaited<ReturnType<typeof openMemoryStore>>,
  threadId: string,
  rewrite: (event: SessionEvent) => SessionEvent,
) {
  const id = sessionIdOfThread(threadId);
  const { events, summary } = await store.load(id);
  const copy = await openMemoryStore();
  await copy.create({ id });
  await copy.update(id, { attrs: summary.attrs ?? {} });
  await copy.append(id, events.map(rewrite));
  return { copy, events: (await copy.load(id)).events };
}

const collect = async (saver: TidemarkSaver, threadId: string) => {
  const out = [];
  for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) out.push(tuple);
  return out;
};

describe('stored value forms', () => {
  it('give back the exact bytes in every form', () => {
    const utf8 = (text: string) => new TextEncoder().encode(text);
    const cases: [string, Uint8Array, string][] = [
      // Type json as its text, whether or not JSON.stringify would write it so (earlier versions
      // kept the former as the JSON itself, `j`: read in 'read values held as JSON' below).
      ['json', utf8('{"a":[1,2,{"b":null}],"c":"é"}'), 's'],
      ['json', utf8('{"a": 1}'), 's'],
      ['json', utf8('-0'), 's'],
      ['json', utf8(JSON.stringify([...Array(200).keys()].map((n) => ({ n, text: `entry ${n}` })))), 'z'],
      // Deflating saves three quarters of it, but under 1 KiB: not worth an inflate on every read.
      ['json', utf8(JSON.stringify([...Array(40).keys()].map((n) => ({ n, text: `entry ${n}` })))), 's'],
      ['other', utf8('plain text, '.repeat(100)), 'z'],
      ['other', utf8('plain text, '.repeat(60)), 's'],
      ['other', utf8('plain text'), 's'],
      ['other', new Uint8Array([0xff, 0xfe, 0x00]), 'b'],
      ['bytes', new Uint8Array([1, 2, 3]), 'b'],
      ['json', utf8(`${'['.repeat(100)}${']'.repeat(100)}`), 's'],
    ];
    for (const [type, bytes, form] of cases) {
      const stored = encodeBytes(type, bytes);
      expect(Object.keys(stored).sort(), `${type} ${form}`).toEqual(['t', form].sort());
      // Through the event's JSON, as every backend keeps it.
      const back = decodeBytes(JSON.parse(JSON.stringify(stored)));
      expect(Buffer.from(back).equals(Buffer.from(bytes)), `${type} ${form}`).toBe(true);
      // What the serializer is handed: the JSON text itself for type json in any form but base64
      // (no UTF-8 round trip for text, a plain parse possible for a deflated value), the exact
      // bytes for every other form and type.
      const handed = decodeForSerde(JSON.parse(JSON.stringify(stored)));
      if (type === 'json' && form !== 'b')
        expect(handed, `${type} ${form}`).toBe(new TextDecoder().decode(bytes));
      else {
        expect(handed, `${type} ${form}`).toBeInstanceOf(Uint8Array);
        expect(Buffer.from(handed as Uint8Array).equals(Buffer.from(bytes)), `${type} ${form}`).toBe(true);
      }
    }
  });

  it('measure a stored form as its JSON, up to a limit', () => {
    const values = [
      { t: 'json', j: { a: [1, 'two', null, { b: true }], 'c"d': 'é\n' } },
      { t: 'json', j: [] },
      { t: 'json', j: 'x"y' },
      { t: 'json', j: -1.5e-7 },
      { t: 'json', s: '{"a": 1}' },
      { t: 'other', z: 'AAAA' },
      { t: 'bytes', b: 'AQID' },
    ];
    for (const value of values) {
      const length = JSON.stringify(value).length;
      expect(storedLengthAtMost(value, length), JSON.stringify(value)).toBe(length);
      expect(storedLengthAtMost(value, length - 1), JSON.stringify(value)).toBeUndefined();
    }
    // A large value held as JSON is given up on early.
    expect(storedLengthAtMost({ t: 'json', j: [...Array(100_000).keys()] }, 768)).toBeUndefined();
  });

  it('read a thread whose values are all in base64 (the earlier form) as the same states', async () => {
    const store = await openMemoryStore();
    await buildGraph(new TidemarkSaver(store)).invoke(
      {},
      { configurable: { thread_id: 't' }, recursionLimit: 100 },
    );
    const { copy: old } = await copyThread(store, 't', asBase64);
    const now = await collect(new TidemarkSaver(store), 't');
    expect(now).toHaveLength(62);
    expect(await collect(new TidemarkSaver(old), 't')).toEqual(now);
    expect(await new TidemarkSaver(old).getTuple({ configurable: { thread_id: 't' } })).toEqual(now[0]);
  });

  it('read a thread whose json values are held as JSON (the earlier form) as the same states, and put them again as the same', async () => {
    const store = await openMemoryStore();
    await buildGraph(new TidemarkSaver(store)).invoke(
      {},
      { configurable: { thread_id: 't' }, recursionLimit: 100 },
    );
    const { copy: old, events: oldEvents } = await copyThread(store, 't', asJson);
    // The copy really holds the earlier form.
    expect(oldEvents.some((e) => JSON.stringify(e.data).includes('"t":"json","j":'))).toBe(true);
    const now = await collect(new TidemarkSaver(store), 't');
    expect(await collect(new TidemarkSaver(old), 't')).toEqual(now);
    expect(await new TidemarkSaver(old).getTuple({ configurable: { thread_id: 't' } })).toEqual(now[0]);
    // The latest checkpoint put again (a retry after a lost answer), now in text form: the saver
    // takes it for the one stored and writes nothing.
    const saver = new TidemarkSaver(old);
    const latest = now[0]!;
    const before = (await old.load(sessionIdOfThread('t'))).events.length;
    await saver.put(latest.parentConfig!, latest.checkpoint, latest.metadata!, {});
    expect((await old.load(sessionIdOfThread('t'))).events.length).toBe(before);
  });

  it('compare the same bytes held as text and as JSON as the same value', () => {
    expect(sameSerialized({ t: 'json', s: '{"a":[1,"x"]}' }, { t: 'json', j: { a: [1, 'x'] } })).toBe(true);
    expect(sameSerialized({ t: 'json', s: '{"a": [1,"x"]}' }, { t: 'json', j: { a: [1, 'x'] } })).toBe(false);
    expect(sameSerialized({ t: 'json', s: '1' }, { t: 'other', s: '1' })).toBe(false);
    expect(sameSerialized({ t: 'json', b: 'MQ==' }, { t: 'json', s: '1' })).toBe(false);
  });

  it('keep values that deflating saves under 1 KiB of undeflated, and read those an earlier version deflated', async () => {
    const store = await openMemoryStore();
    await buildGraph(new TidemarkSaver(store)).invoke(
      {},
      { configurable: { thread_id: 't' }, recursionLimit: 100 },
    );
    const { events } = await store.load(sessionIdOfThread('t'));
    // The list channel grows by ~40 bytes a step: from about 1 KiB it deflates by far more than a
    // fifth, from about 1.4 KiB by more than 1 KiB too. Both stretches are in the thread.
    const forms = events
      .filter((e) => e.type === 'langgraph/blob' && (e.data as { ch?: string }).ch === 'items')
      .map((e) => {
        const value = (e.data as { value: Record<string, unknown> }).value;
        return { size: decodeBytes(value as never).byteLength, deflated: Object.hasOwn(value, 'z') };
      });
    const small = forms.filter((f) => f.size >= 1024 && f.size <= 1200);
    expect(small.length).toBeGreaterThan(0);
    expect(small.every((f) => !f.deflated)).toBe(true);
    expect(forms.filter((f) => f.size >= 1800).every((f) => f.deflated)).toBe(true);
    expect(forms.some((f) => f.size >= 1800)).toBe(true);

    const { copy: old, events: oldEvents } = await copyThread(store, 't', asDeflatedFromOneKiB);
    // The copy really holds the earlier form: values of 1 to 1.2 KiB deflated.
    const oldSmall = oldEvents.filter((e) => {
      const value = (e.data as { value?: Record<string, unknown> }).value;
      if (e.type !== 'langgraph/blob' || value === undefined || !Object.hasOwn(value, 'z')) return false;
      return decodeBytes(value as never).byteLength <= 1200;
    });
    expect(oldSmall.length).toBeGreaterThan(0);
    const now = await collect(new TidemarkSaver(store), 't');
    expect(await collect(new TidemarkSaver(old), 't')).toEqual(now);
    // A new saver's getTuple (the cold read by pointers) and a list with a limit (the walk back).
    expect(await new TidemarkSaver(old).getTuple({ configurable: { thread_id: 't' } })).toEqual(now[0]);
    const recent = [];
    for await (const tuple of new TidemarkSaver(old).list(
      { configurable: { thread_id: 't', checkpoint_ns: '' } },
      { limit: 5 },
    ))
      recent.push(tuple);
    expect(recent).toEqual(now.slice(0, 5));
  });
});
