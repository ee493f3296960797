// A `json` value read without a round trip through LangGraph's own serializer, when the saver uses
// that serializer unchanged: `JsonPlusSerializer.loadsTyped('json', text)` parses the text and passes
// it through a reviver that rebuilds only objects marked with an `lc` key (LangChain objects, and
// `undefined`, Set, Map, RegExp, Error, Uint8Array and delta snapshots); every other value comes back
// as a plain copy. So for a value with no `lc` key anywhere, a plain parse of the stored text (`s`),
// or a plain copy of the JSON the store already parsed (`j`, written by earlier versions), is what
// the serializer gives, without the reviver's promise per key (about a tenth of a new process's
// getTuple). Any other serializer, a subclass, or a value with an `lc` key (or anything a plain parse
// could tell apart from the serializer's) goes through `loadsTyped` as before.
import { JsonPlusSerializer, type SerializerProtocol } from '@langchain/langgraph-checkpoint';
import type { JsonValue } from '@tidemark/core';

/** Nesting read plainly at most; deeper values go the long way. */
const MAX_DEPTH = 100;

/** Returned by {@link plainWalk} when the value needs the serializer. */
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
  const value = plainWalk(j, 0, true);
  return value === SERIALIZER ? undefined : { value };
}

/**
 * What `JsonPlusSerializer.loadsTyped('json', text)` gives, or `undefined` when only the serializer
 * can tell (as {@link plainJsonValue}; also text that is not JSON, which the serializer rejects).
 */
export function plainJsonText(text: string): { value: unknown } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  // The parse is this call's own: checked in place, not copied again.
  return plainWalk(value, 0, false) === SERIALIZER ? undefined : { value };
}

/**
 * `value` when LangGraph's serializer would give a plain copy of it, else {@link SERIALIZER}; with
 * `copying`, that copy (fresh objects and arrays), else `value` itself, checked in place.
 */
function plainWalk(value: unknown, depth: number, copying: boolean): unknown {
  if (typeof value === 'number') return Number.isFinite(value) && !Object.is(value, -0) ? value : SERIALIZER;
  if (typeof value !== 'object' || value === null) return value;
  if (depth >= MAX_DEPTH) return SERIALIZER;
  if (Array.isArray(value)) {
    const out: unknown[] | undefined = copying ? new Array(value.length) : undefined;
    for (let i = 0; i < value.length; i += 1) {
      const item = plainWalk(value[i], depth + 1, copying);
      if (item === SERIALIZER) return SERIALIZER;
      if (out !== undefined) out[i] = item;
    }
    return out ?? value;
  }
  const record = value as Record<string, unknown>;
  const out: Record<string, unknown> | undefined = copying ? {} : undefined;
  for (const key of Object.keys(record)) {
    if (key === 'lc' || key === '__proto__') return SERIALIZER;
    const item = plainWalk(record[key], depth + 1, copying);
    if (item === SERIALIZER) return SERIALIZER;
    if (out !== undefined) out[key] = item;
  }
  return out ?? value;
}
