// Values are stored in the smallest form that gives their bytes back exactly (deflated, the JSON
// itself, text, or base64), and a thread written when base64 was the only form reads the same.
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import type { JsonValue, SessionEvent } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import { describe, expect, it } from 'vitest';
import { sessionIdOfThread, TidemarkSaver } from '../src/index.js';
import { decodeBytes, decodeForSerde, encodeBytes } from '../src/values.js';

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

/** An event with every stored value in the only form older versions wrote: base64 of its bytes. */
function asBase64(event: SessionEvent): SessionEvent {
  const rewrite = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(rewrite);
    if (typeof value !== 'object' || value === null) return value;
    const fields = value as Record<string, unknown>;
    if (typeof fields.t === 'string' && ['b', 's', 'j', 'z'].some((k) => Object.hasOwn(fields, k))) {
      const bytes = decodeBytes(fields as never);
      return { t: fields.t, b: Buffer.from(bytes).toString('base64') };
    }
    return Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, rewrite(v)]));
  };
  return { ...event, data: rewrite(event.data) as JsonValue };
}

describe('stored value forms', () => {
  it('give back the exact bytes in every form', () => {
    const utf8 = (text: string) => new TextEncoder().encode(text);
    const cases: [string, Uint8Array, string][] = [
      ['json', utf8('{"a":[1,2,{"b":null}],"c":"é"}'), 'j'],
      ['json', utf8('{"a": 1}'), 's'], // not as JSON.stringify writes it
      ['json', utf8('-0'), 's'],
      ['json', utf8(JSON.stringify([...Array(200).keys()].map((n) => ({ n, text: `entry ${n}` })))), 'z'],
      ['other', utf8('plain text'), 's'],
      ['other', new Uint8Array([0xff, 0xfe, 0x00]), 'b'],
      ['bytes', new Uint8Array([1, 2, 3]), 'b'],
      ['json', utf8(`${'['.repeat(100)}${']'.repeat(100)}`), 's'], // nested deeper than kept as JSON
    ];
    for (const [type, bytes, form] of cases) {
      const stored = encodeBytes(type, bytes);
      expect(Object.keys(stored).sort(), `${type} ${form}`).toEqual(['t', form].sort());
      // Through the event's JSON, as every backend keeps it.
      const back = decodeBytes(JSON.parse(JSON.stringify(stored)));
      expect(Buffer.from(back).equals(Buffer.from(bytes)), `${type} ${form}`).toBe(true);
      // What the serializer is handed: the JSON text itself for type json held as text or JSON
      // (no UTF-8 round trip), the exact bytes for every other form and type.
      const handed = decodeForSerde(JSON.parse(JSON.stringify(stored)));
      if (type === 'json' && (form === 'j' || form === 's'))
        expect(handed, `${type} ${form}`).toBe(new TextDecoder().decode(bytes));
      else {
        expect(handed, `${type} ${form}`).toBeInstanceOf(Uint8Array);
        expect(Buffer.from(handed as Uint8Array).equals(Buffer.from(bytes)), `${type} ${form}`).toBe(true);
      }
    }
  });

  it('read a thread whose values are all in base64 (the earlier form) as the same states', async () => {
    const store = await openMemoryStore();
    await buildGraph(new TidemarkSaver(store)).invoke(
      {},
      { configurable: { thread_id: 't' }, recursionLimit: 100 },
    );
    const id = sessionIdOfThread('t');
    const { events, summary } = await store.load(id);
    const old = await openMemoryStore();
    await old.create({ id });
    await old.update(id, { attrs: summary.attrs ?? {} });
    await old.append(id, events.map(asBase64));
    const collect = async (saver: TidemarkSaver) => {
      const out = [];
      for await (const tuple of saver.list({ configurable: { thread_id: 't' } })) out.push(tuple);
      return out;
    };
    const now = await collect(new TidemarkSaver(store));
    expect(now).toHaveLength(62);
    expect(await collect(new TidemarkSaver(old))).toEqual(now);
    expect(await new TidemarkSaver(old).getTuple({ configurable: { thread_id: 't' } })).toEqual(now[0]);
  });
});
