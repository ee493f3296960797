// A value held as JSON (`j`) read without a round trip through LangGraph's own serializer, when the
// saver uses that serializer unchanged: `JsonPlusSerializer.loadsTyped('json', text)` parses the
// text and passes it through a reviver that rebuilds only objects marked with an `lc` key (LangChain
// objects, and `undefined`, Set, Map, RegExp, Error, Uint8Array and delta snapshots); every other
// value comes back as a plain copy. So for a value with no `lc` key anywhere, a plain copy of the
// JSON the store already parsed is what the serializer gives, without writing the text out, parsing
// it again and the reviver's promise per key (about a tenth of a new process's getTuple). Any other
// serializer, a subclass, or a value with an `lc` key (or anything a copy could tell apart from the
// text's parse) goes through `loadsTyped` as before.
import { JsonPlusSerializer, type SerializerProtocol } from '@langchain/langgraph-checkpoint';
import type { JsonValue } from '@tidemark/core';

/** Nesting copied at most (the saver writes `j` values up to 64 deep; deeper ones go the long way). */
const MAX_DEPTH = 100;

/** Returned by {@link plainCopy} when the value needs the serializer. */
const SERIALIZER = Symbol('serializer');

/** True when `serde` is LangGraph's `JsonPlusSerializer` itself: not a subclass, nothing overridden. */
export function isPlainJsonSerde(serde: SerializerProtocol): boolean {
  return (
    Object.getPrototypeOf(serde) === JsonPlusSerializer.prototype &&
    !Object.hasOwn(serde, 'loadsTyped') &&
    !Object.hasOwn(serde, '_loads')
  );
}

/**
 * What `JsonPlusSerializer.loadsTyped('json', JSON.stringify(j))` gives for `j`, as a fresh copy, or
 * `undefined` when only the serializer can tell (an `lc` key; a `__proto__` key, which the reviver
 * assigns as a prototype; a number that does not write back as itself; deep nesting).
 */
export function plainJsonValue(j: JsonValue): { value: unknown } | undefined {
  const value = plainCopy(j, 0);
  return value === SERIALIZER ? undefined : { value };
}

function plainCopy(j: JsonValue, depth: number): unknown {
  if (typeof j === 'number') return Number.isFinite(j) && !Object.is(j, -0) ? j : SERIALIZER;
  if (typeof j !== 'object' || j === null) return j;
  if (depth >= MAX_DEPTH) return SERIALIZER;
  if (Array.isArray(j)) {
    const out: unknown[] = new Array(j.length);
    for (let i = 0; i < j.length; i += 1) {
      const item = plainCopy(j[i]!, depth + 1);
      if (item === SERIALIZER) return SERIALIZER;
      out[i] = item;
    }
    return out;
  }
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(j)) {
    if (key === 'lc' || key === '__proto__') return SERIALIZER;
    const item = plainCopy(j[key]!, depth + 1);
    if (item === SERIALIZER) return SERIALIZER;
    out[key] = item;
  }
  return out;
}
