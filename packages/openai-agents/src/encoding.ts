// Session items are plain data, but not always JSON: the SDK's own session keeps `undefined`
// fields, bytes (Uint8Array) and non-finite numbers, and compares items structurally. A tidemark
// event holds JSON only, so items are stored in an injective JSON encoding: every value the SDK
// can snapshot has exactly one encoding and decodes back to an equal value.
import { createHash } from 'node:crypto';
import { types } from 'node:util';
import { type JsonValue, TidemarkError } from '@tidemark/core';

/** The key that marks an encoded non-JSON value. A plain object that has it is wrapped. */
const TAG = '$tidemark';

type Tagged =
  | { [TAG]: 'undefined' }
  | { [TAG]: 'number'; value: 'NaN' | 'Infinity' | '-Infinity' | '-0' }
  | { [TAG]: 'bytes'; base64: string }
  | { [TAG]: 'object'; value: { [key: string]: JsonValue } };

function invalid(path: string, what: string): TidemarkError {
  // Names where and what, never the value: items carry user data and provider secrets.
  return new TidemarkError('INVALID', `${path}: ${what}`);
}

function encodeNumber(value: number): JsonValue {
  if (Number.isNaN(value)) return { [TAG]: 'number', value: 'NaN' } satisfies Tagged;
  if (value === Number.POSITIVE_INFINITY) return { [TAG]: 'number', value: 'Infinity' } satisfies Tagged;
  if (value === Number.NEGATIVE_INFINITY) return { [TAG]: 'number', value: '-Infinity' } satisfies Tagged;
  if (Object.is(value, -0)) return { [TAG]: 'number', value: '-0' } satisfies Tagged;
  return value;
}

function encodeBytes(value: Uint8Array, path: string): JsonValue {
  const keys = Reflect.ownKeys(value);
  if (keys.length !== value.length) throw invalid(path, 'bytes with extra properties are not supported');
  // Copying through Buffer also detaches bytes backed by a SharedArrayBuffer from later changes.
  return { [TAG]: 'bytes', base64: Buffer.from(value).toString('base64') } satisfies Tagged;
}

function ownDataValue(value: object, key: string, path: string): unknown {
  const descriptor = Object.getOwnPropertyDescriptor(value, key);
  if (descriptor === undefined || !descriptor.enumerable) throw invalid(path, 'non-enumerable property');
  if (!('value' in descriptor)) throw invalid(path, 'accessor property');
  return descriptor.value;
}

function encodeArray(value: unknown[], path: string, ancestors: Set<object>): JsonValue[] {
  const keys = Reflect.ownKeys(value);
  if (keys.length !== value.length + 1) throw invalid(path, 'sparse array or array with extra properties');
  const out: JsonValue[] = [];
  for (let i = 0; i < value.length; i++) {
    out.push(encodeAt(ownDataValue(value, String(i), `${path}[${i}]`), `${path}[${i}]`, ancestors));
  }
  return out;
}

function encodeObject(value: object, path: string, ancestors: Set<object>): JsonValue {
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) {
    const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
    throw invalid(path, `${typeof name === 'string' && name !== '' ? name : 'object'} is not supported`);
  }
  const out: { [key: string]: JsonValue } = {};
  for (const key of Reflect.ownKeys(value)) {
    if (typeof key !== 'string') throw invalid(path, 'symbol key');
    const at = `${path}.${key}`;
    // defineProperty, not assignment: `__proto__` is an ordinary key here.
    Object.defineProperty(out, key, {
      value: encodeAt(ownDataValue(value, key, at), at, ancestors),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return Object.hasOwn(out, TAG) ? ({ [TAG]: 'object', value: out } satisfies Tagged) : out;
}

function encodeAt(value: unknown, path: string, ancestors: Set<object>): JsonValue {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (value === undefined) return { [TAG]: 'undefined' } satisfies Tagged;
  if (typeof value === 'number') return encodeNumber(value);
  if (typeof value !== 'object') throw invalid(path, `${typeof value} is not supported`);
  if (types.isProxy(value)) throw invalid(path, 'Proxy is not supported');
  if (value instanceof Uint8Array) return encodeBytes(value, path);
  if (ancestors.has(value)) throw invalid(path, 'circular reference');
  ancestors.add(value);
  try {
    return Array.isArray(value) ? encodeArray(value, path, ancestors) : encodeObject(value, path, ancestors);
  } finally {
    ancestors.delete(value);
  }
}

/**
 * Encodes a session item (or any value the SDK snapshots) as JSON.
 * @throws TidemarkError INVALID naming the path of the first unsupported value.
 */
export function encodeValue(value: unknown, path: string): JsonValue {
  return encodeAt(value, path, new Set());
}

function decodeTagged(value: { [key: string]: JsonValue }): unknown {
  const tagged = value as unknown as Tagged;
  switch (tagged[TAG]) {
    case 'undefined':
      return undefined;
    case 'number':
      return tagged.value === '-0' ? -0 : Number(tagged.value);
    case 'bytes':
      return new Uint8Array(Buffer.from(tagged.base64, 'base64'));
    case 'object':
      return decodeEntries(tagged.value);
    default:
      throw new TidemarkError('CORRUPT', `stored item has an unknown ${TAG} tag`, { location: {} });
  }
}

function decodeEntries(value: { [key: string]: JsonValue }): { [key: string]: unknown } {
  const out: { [key: string]: unknown } = {};
  for (const [key, entry] of Object.entries(value)) {
    Object.defineProperty(out, key, {
      value: decodeValue(entry),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/** Decodes a value written by {@link encodeValue} into fresh objects. */
export function decodeValue(value: JsonValue): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(decodeValue);
  return Object.hasOwn(value, TAG) ? decodeTagged(value) : decodeEntries(value);
}

/** JSON text with object keys sorted: equal for structurally equal encoded values. */
export function canonicalJson(value: JsonValue): string {
  return JSON.stringify(value, (_key, entry: unknown) =>
    entry !== null && typeof entry === 'object' && !Array.isArray(entry)
      ? Object.fromEntries(Object.entries(entry).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : entry,
  );
}

/** A short fingerprint of an encoded value, for operation ids: sha256 of its canonical JSON. */
export function digestOf(value: JsonValue): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}
