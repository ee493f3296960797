import { TidemarkError } from './errors.js';

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

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** Appends a property key to a path in the `a.b[2]["odd key"]` notation used by error messages. */
export function pathWithKey(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  if (IDENTIFIER.test(key)) return path === '' ? key : `${path}.${key}`;
  return `${path}[${JSON.stringify(key)}]`;
}

/** Describes why a value is not JSON, or returns undefined when its own shape is acceptable. */
function describeNonJson(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return undefined;
    case 'number':
      if (!Number.isFinite(value)) return Number.isNaN(value) ? 'NaN' : String(value);
      if (Object.is(value, -0)) return '-0 (JSON turns negative zero into 0)';
      return undefined;
    case 'bigint':
      return 'BigInt';
    case 'undefined':
      return 'undefined';
    case 'function':
      return 'function';
    case 'symbol':
      return 'symbol';
    case 'object': {
      if (value === null) return undefined;
      if (Array.isArray(value)) {
        if (Object.getPrototypeOf(value) !== Array.prototype) return 'array subclass';
        return undefined;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) {
        const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
        return typeof name === 'string' && name !== '' ? name : 'non-plain object';
      }
      return undefined;
    }
    default:
      return typeof value;
  }
}

function fail(path: string, what: string): never {
  throw new TidemarkError('INVALID', `${path === '' ? 'value' : path}: ${what}`);
}

/**
 * Asserts that `value` is a {@link JsonValue}: exactly what survives a JSON round trip unchanged.
 * Rejects BigInt, undefined, NaN, ±Infinity, -0, functions, symbols, symbol keys, accessors,
 * non-enumerable properties, Map, Set, Date, RegExp, typed arrays and every other non-plain object,
 * sparse arrays, array extra properties, circular references, and nesting deeper than the limit.
 *
 * The walk is iterative, so a 100,000-deep value is rejected as INVALID instead of overflowing the
 * stack. The error message names the path of the offending value, e.g. `events[3].data.items[2]: BigInt`.
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
 * `__proto__` an ordinary own key, a shared sub-value copied at each place), at a tenth of the cost
 * of that parse for a small event.
 * @throws TidemarkError with code INVALID, as {@link assertJsonValue}.
 */
export function copyJsonValue(value: unknown, path = '', limits: JsonLimits = {}): JsonValue {
  return walkJson(value, path, limits, true)!;
}

/** The walk of {@link assertJsonValue}; with `copying`, also builds and returns the copy. */
function walkJson(value: unknown, path: string, limits: JsonLimits, copying: boolean): JsonValue | undefined {
  const maxDepth = limits.maxDepth ?? DEFAULT_MAX_DEPTH;
  // Each frame: the value, its depth, and where it sits (parent frame and key), from which its
  // path is spelled only when it fails: building every child's path string up front was most of
  // the cost of validating a small event. `onPath` holds the containers on the current branch, to
  // tell a circular reference from a shared (DAG) one, which JSON duplicates harmlessly. A copy is
  // built as frames are taken off the stack: each value is put into the copy of its container
  // (`into`) under its key; children are pushed last to first, so keys are put in their order.
  const root: { value?: JsonValue } = {};
  const stack: Frame[] = [{ value, depth: 0, rootPath: path, into: root, key: 'value' }];
  const onPath = new Set<object>();
  while (stack.length > 0) {
    const frame = stack.pop()!;
    if (frame.exit !== undefined) {
      onPath.delete(frame.exit);
      continue;
    }
    const current = frame.value;
    const problem = describeNonJson(current);
    if (problem !== undefined) fail(pathOf(frame), problem);
    if (typeof current !== 'object' || current === null) {
      if (copying) put(frame, current as JsonValue);
      continue;
    }
    if (onPath.has(current)) fail(pathOf(frame), 'circular reference');
    if (frame.depth >= maxDepth) fail(pathOf(frame), `nested deeper than ${maxDepth} levels`);
    onPath.add(current);
    stack.push({ value: undefined, depth: frame.depth, exit: current });
    if (Object.getOwnPropertySymbols(current).length > 0) fail(pathOf(frame), 'symbol key');
    const keys = Object.getOwnPropertyNames(current);
    const depth = frame.depth + 1;
    if (Array.isArray(current)) {
      // An array's own names are its indices plus 'length'; anything else does not survive JSON.
      if (keys.length - 1 !== current.length) {
        for (let i = 0; i < current.length; i++)
          if (!(i in current)) fail(pathWithKey(pathOf(frame), i), 'hole in sparse array');
        fail(pathOf(frame), 'array with extra properties');
      }
      const into = copying ? put(frame, []) : undefined;
      for (let i = current.length - 1; i >= 0; i--) {
        const descriptor = Object.getOwnPropertyDescriptor(current, i);
        if (descriptor === undefined) fail(pathWithKey(pathOf(frame), i), 'hole in sparse array');
        if (!('value' in descriptor)) fail(pathWithKey(pathOf(frame), i), 'accessor property');
        stack.push({ value: descriptor.value, depth, parent: frame, key: i, into });
      }
      continue;
    }
    const into = copying ? put(frame, {}) : undefined;
    for (let k = keys.length - 1; k >= 0; k--) {
      const key = keys[k]!;
      const descriptor = Object.getOwnPropertyDescriptor(current, key)!;
      if (!descriptor.enumerable) fail(pathWithKey(pathOf(frame), key), 'non-enumerable property');
      if (!('value' in descriptor)) fail(pathWithKey(pathOf(frame), key), 'accessor property');
      stack.push({ value: descriptor.value, depth, parent: frame, key, into });
    }
  }
  return root.value;
}

/** Puts `copy` into the copy of the frame's container, under the frame's key; returns `copy`. */
function put<T extends JsonValue>(frame: Frame, copy: T): T {
  const into = frame.into as Record<string | number, JsonValue>;
  // Assigning `__proto__` would set the copy's prototype; JSON.parse defines an own key instead.
  if (frame.key === '__proto__')
    Object.defineProperty(into, '__proto__', {
      value: copy,
      writable: true,
      enumerable: true,
      configurable: true,
    });
  else into[frame.key!] = copy;
  return copy;
}

/** A value waiting in {@link assertJsonValue}'s walk, or (with `exit`) the end of a container. */
interface Frame {
  value: unknown;
  depth: number;
  /** The container holding this value, and its key there; absent for the root. */
  parent?: Frame;
  key?: string | number;
  /** The root's name in messages. */
  rootPath?: string;
  exit?: object;
  /** When copying: the copy of the container, which this value's copy goes into under `key`. */
  into?: object | undefined;
}

/** The path of a frame in the notation of {@link pathWithKey}, spelled from the root down. */
function pathOf(frame: Frame): string {
  const keys: Array<string | number> = [];
  let at = frame;
  while (at.parent !== undefined) {
    keys.push(at.key!);
    at = at.parent;
  }
  let path = at.rootPath ?? '';
  for (let i = keys.length - 1; i >= 0; i--) path = pathWithKey(path, keys[i]!);
  return path;
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
