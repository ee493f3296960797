// A json value, held as text (as it is written now) or as JSON (as earlier versions wrote it), is
// read without LangGraph's serializer only when that serializer would hand back a plain copy of it:
// the result is the serializer's own, value for value and class for class,
// for plain JSON, for every kind of value the serializer revives (LangChain messages, undefined,
// Set, Map, RegExp, Error, Uint8Array, Send-like objects, delta snapshots), and for what a copy
// could get wrong; any other serializer is always asked.

import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { DeltaSnapshot, JsonPlusSerializer, type SerializerProtocol } from '@langchain/langgraph-checkpoint';
import type { JsonValue } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { isPlainJsonSerde, plainJsonText, plainJsonValue } from '../src/plain-json.js';
import { loadValue } from '../src/tuples.js';
import { decodeBytes, encodeBytes } from '../src/values.js';

const serde = new JsonPlusSerializer();

const values: [string, unknown][] = [
  ['a number', 42],
  ['a string', 'text with "quotes" and ✓'],
  ['null', null],
  ['a flat object', { a: 1, b: 'two', c: null, d: true }],
  ['nested lists and objects', { list: [1, [2, [3, { deep: ['x'] }]]], empty: {}, none: [] }],
  ['integer-like keys', { 2: 'b', 1: 'a', x: 'c' }],
  [
    'a checkpoint-like object',
    { v: 4, id: '1f', channel_versions: { a: 1 }, versions_seen: { n: { a: 1 } } },
  ],
  ['messages', [new HumanMessage('hi'), new AIMessage({ content: 'yes', tool_calls: [] })]],
  ['a tool message', new ToolMessage({ content: 'done', tool_call_id: 'call-1' })],
  ['undefined inside', { a: undefined, b: [undefined, 1] }],
  ['a set and a map', { s: new Set([1, 2]), m: new Map([['k', { v: 1 }]]) }],
  ['a regexp and an error', [/a+b/gi, new Error('boom')]],
  ['bytes inside', { raw: new Uint8Array([0, 1, 255]) }],
  ['a delta snapshot', new DeltaSnapshot([1, 2, 3])],
  ['an object with an lc key of its own', { lc: 7, type: 'mine' }],
  ['a __proto__ key', JSON.parse('{"__proto__": {"polluted": true}, "a": 1}')],
  ['a long list', [...Array(500).keys()].map((n) => ({ n, text: `entry ${n}` }))],
];

/** `value` as the saver stores it: dumped by the serializer, then kept in its stored form. */
async function stored(value: unknown) {
  const [type, bytes] = await serde.dumpsTyped(value);
  return encodeBytes(type, typeof bytes === 'string' ? new TextEncoder().encode(bytes) : bytes);
}

/** `value`'s stored form as versions before text wrote it: the JSON itself where it writes back exactly. */
async function storedAsJson(value: unknown) {
  const form = await stored(value);
  if (form.s === undefined || form.t !== 'json') return form;
  const j = JSON.parse(form.s) as JsonValue;
  return JSON.stringify(j) === form.s ? { t: form.t, j } : form;
}

describe('a json value held as text or as JSON, read without the serializer', () => {
  it.each(values)('gives what the serializer gives for %s', async (_, value) => {
    for (const form of [await stored(value), await storedAsJson(value)]) {
      // Through the event's JSON, as every backend keeps it.
      const kept = JSON.parse(JSON.stringify(form));
      const expected = await serde.loadsTyped(kept.t, decodeBytes(kept));
      const [type, bytes] = await serde.dumpsTyped(value);
      expect(await serde.loadsTyped(type, bytes)).toStrictEqual(expected);
      expect(await loadValue(serde, kept)).toStrictEqual(expected);
    }
  });

  it('parses only plain JSON text with no lc key, and gives a fresh value each time', () => {
    const text = '{"a":[1,{"b":2}],"c":"x"}';
    const first = plainJsonText(text)!.value as { a: unknown[] };
    expect(first).toEqual({ a: [1, { b: 2 }], c: 'x' });
    expect(first.a).not.toBe((plainJsonText(text)!.value as { a: unknown[] }).a);
    expect(plainJsonText('{"x":[{"lc":1}]}')).toBeUndefined();
    expect(plainJsonText('{"__proto__": 1}')).toBeUndefined();
    expect(plainJsonText('{"n": -0}')).toBeUndefined();
    expect(plainJsonText('{"a": 1')).toBeUndefined();
    expect(plainJsonText(`${'['.repeat(200)}${']'.repeat(200)}`)).toBeUndefined();
    expect(plainJsonText(`${'['.repeat(50)}${']'.repeat(50)}`)).toBeDefined();
  });

  it('copies only plain JSON with no lc key, and gives a fresh copy each time', () => {
    const j = { a: [1, { b: 2 }] } as JsonValue;
    const first = plainJsonValue(j)!.value as { a: unknown[] };
    const second = plainJsonValue(j)!.value as { a: unknown[] };
    expect(first).toEqual(j);
    expect(first).not.toBe(j);
    expect(first.a).not.toBe(second.a);
    expect(plainJsonValue({ x: [{ lc: 1 }] })).toBeUndefined();
    expect(plainJsonValue(JSON.parse('{"__proto__": 1}'))).toBeUndefined();
    expect(plainJsonValue({ n: -0 })).toBeUndefined();
    let deep: JsonValue = 1;
    for (let i = 0; i < 200; i += 1) deep = [deep];
    expect(plainJsonValue(deep)).toBeUndefined();
  });

  it('is taken for LangGraph’s own serializer only', async () => {
    class Subclass extends JsonPlusSerializer {}
    const overridden = new JsonPlusSerializer();
    overridden.loadsTyped = async (type: string, data: Uint8Array | string) =>
      `custom ${type} ${typeof data === 'string' ? data : new TextDecoder().decode(data)}`;
    const custom: SerializerProtocol = {
      dumpsTyped: async (value: unknown) => ['json', new TextEncoder().encode(JSON.stringify(value))],
      loadsTyped: async () => 'from the custom serializer',
    };
    expect(isPlainJsonSerde(serde)).toBe(true);
    expect(isPlainJsonSerde(new Subclass())).toBe(false);
    expect(isPlainJsonSerde(overridden)).toBe(false);
    expect(isPlainJsonSerde(custom)).toBe(false);
    for (const form of [
      { t: 'json', j: { a: 1 } },
      { t: 'json', s: '{"a":1}' },
    ]) {
      expect(await loadValue(overridden, form)).toBe('custom json {"a":1}');
      expect(await loadValue(custom, form)).toBe('from the custom serializer');
    }
  });
});
