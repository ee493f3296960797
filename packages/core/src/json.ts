import { UNSURE, walkJsonFast, walkJsonIterative } from './json-walk.js';

export { pathWithKey } from './json-walk.js';

/** A value that survives `JSON.stringify` → `JSON.parse` unchanged. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/** Limits applied by {@link assertJsonValue}. */
export interface JsonLimits {
  /** Deepest nesting of arrays and objects accepted (the root is depth 0). Default 256. */
  maxDepth?: number;
}

/** Default nesting limit of contract §2. */
export const DEFAULT_MAX_DEPTH = 256;
/** Default limit of one serialized event, contract §2: 16 MiB. */
export const DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024;

/**
 * Asserts that `value` is a {@link JsonValue}: exactly what survives a JSON round trip unchanged.
 * Rejects BigInt, undefined, NaN, ±Infinity, -0, functions, symbols, symbol keys, accessors,
 * non-enumerable properties, Map, Set, Date, RegExp, typed arrays and every other non-plain object,
 * sparse arrays, array extra properties, circular references, and nesting deeper than the limit.
 *
 * Deep values are walked iteratively, so a 100,000-deep value is rejected as INVALID instead of
 * overflowing the stack. The error message names the path of the offending value, e.g.
 * `events[3].data.items[2]: BigInt`.
 *
 * @param path - the name of `value` in messages (`events[3].data`).
 * @throws TidemarkError with code INVALID.
 */
export function assertJsonValue(
  value: unknown,
  path = '',
  limits: JsonLimits = {},
): asserts value is JsonValue {
  walkJson(value, path, limits, false);
}

/**
 * {@link assertJsonValue}, returning a deep copy of the value built in the same walk: what
 * `JSON.parse(JSON.stringify(value))` gives (plain objects and arrays, keys in the same order,
 * `__proto__` an ordinary own key, a shared sub-value copied at each place), at about half the cost
 * of that round trip for a small event.
 * @throws TidemarkError with code INVALID, as {@link assertJsonValue}.
 */
export function copyJsonValue(value: unknown, path = '', limits: JsonLimits = {}): JsonValue {
  return walkJson(value, path, limits, true)!;
}

/**
 * The walk of {@link assertJsonValue}; with `copying`, also builds and returns the copy. The fast
 * walk takes what appends carry; whatever it leaves (anything rejected, unusual or deep) is walked
 * again by the iterative one, which decides and names the path of what fails.
 */
function walkJson(value: unknown, path: string, limits: JsonLimits, copying: boolean): JsonValue | undefined {
  const maxDepth = limits.maxDepth ?? DEFAULT_MAX_DEPTH;
  try {
    const copy = walkJsonFast(value, maxDepth, copying);
    if (copy !== UNSURE) return copy as JsonValue | undefined;
  } catch {
    // Whatever threw (a full stack, …) is met again below, in the iterative walk's own order.
  }
  return walkJsonIterative(value, path, maxDepth, copying) as JsonValue | undefined;
}

/** True when `value` is a {@link JsonValue}; see {@link assertJsonValue} for the rules. */
export function isJsonValue(value: unknown, limits: JsonLimits = {}): value is JsonValue {
  try {
    assertJsonValue(value, '', limits);
    return true;
  } catch {
    return false;
  }
}

/**
 * Deep equality of two JSON values, iterative. Object key order does not matter; array order does.
 * Used to recognise an idempotent retry of an append.
 */
export function jsonEqual(a: JsonValue, b: JsonValue): boolean {
  const stack: Array<[JsonValue, JsonValue]> = [[a, b]];
  while (stack.length > 0) {
    const [x, y] = stack.pop()!;
    if (x === y) continue;
    if (typeof x !== 'object' || typeof y !== 'object' || x === null || y === null) return false;
    if (Array.isArray(x) !== Array.isArray(y)) return false;
    if (Array.isArray(x)) {
      const ya = y as JsonValue[];
      if (x.length !== ya.length) return false;
      for (let i = 0; i < x.length; i++) stack.push([x[i]!, ya[i]!]);
      continue;
    }
    const xo = x as JsonObject;
    const yo = y as JsonObject;
    const xKeys = Object.keys(xo);
    if (xKeys.length !== Object.keys(yo).length) return false;
    for (const key of xKeys) {
      if (!Object.hasOwn(yo, key)) return false;
      stack.push([xo[key]!, yo[key]!]);
    }
  }
  return true;
}

/**
 * A deep copy of a JSON value through its serialization (which the caller usually needs anyway for
 * size limits). `__proto__` keys stay ordinary own data properties: `JSON.parse` defines them.
 */
export function cloneJson<T extends JsonValue>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

const SURROGATE = /[\uD800-\uDFFF]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * The index of the first lone UTF-16 surrogate in `text` (half of a pair, as left by cutting a
 * string between the two), or -1 when `text` is well-formed Unicode. Such text survives a JSON
 * round trip as an escape, but not storage as UTF-8 text (SQLite turns it into U+FFFD), so the
 * plain text fields of the contract refuse it. Values inside `data` and `attrs` are stored as
 * JSON and keep it.
 */
export function loneSurrogateIndex(text: string): number {
  if (!SURROGATE.test(text)) return -1;
  return LONE_SURROGATE.exec(text)?.index ?? -1;
}

/** `text` cut to at most `length` UTF-16 units, never between the two halves of a pair. */
export function sliceWellFormed(text: string, length: number): string {
  if (text.length <= length) return text;
  const code = text.charCodeAt(length - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? length - 1 : length);
}

/** `text` with every lone surrogate replaced by U+FFFD (what `String.prototype.toWellFormed` does). */
export function toWellFormed(text: string): string {
  if (!SURROGATE.test(text)) return text;
  return text.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}
