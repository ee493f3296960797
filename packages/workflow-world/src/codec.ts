// World events carry bytes (serialized step inputs and outputs are Uint8Array) and dates; a
// tidemark event's data is JSON. The encoding is total and reversible: bytes and dates become
// tagged objects, and an object that happens to use the tag key is escaped, so no user value can
// be read back as something else.

import type { JsonValue } from '@tidemark/core';
import { TidemarkError } from '@tidemark/core';

const TAG = '~tm';

/** Encodes a World value (bytes, dates, plain objects, arrays, scalars) as JSON. */
export function encodeValue(value: unknown): JsonValue | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : { [TAG]: 'num', v: String(value) };
  if (value instanceof Uint8Array) return { [TAG]: 'u8', b: Buffer.from(value).toString('base64') };
  if (value instanceof Date) return { [TAG]: 'date', v: value.toISOString() };
  if (Array.isArray(value)) return value.map((item) => encodeValue(item) ?? null);
  if (typeof value === 'object') {
    const out: { [key: string]: JsonValue } = {};
    for (const [key, item] of Object.entries(value)) {
      const encoded = encodeValue(item);
      if (encoded !== undefined) out[key] = encoded;
    }
    return TAG in out ? { [TAG]: 'obj', v: out } : out;
  }
  throw new TidemarkError('INVALID', `a workflow value of type ${typeof value} cannot be stored`);
}

/** Reverses {@link encodeValue}. */
export function decodeValue(value: JsonValue): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(decodeValue);
  const tag = value[TAG];
  if (tag === 'u8' && typeof value.b === 'string') return new Uint8Array(Buffer.from(value.b, 'base64'));
  if (tag === 'date' && typeof value.v === 'string') return new Date(value.v);
  if (tag === 'num' && typeof value.v === 'string') return Number(value.v);
  const source = tag === 'obj' && value.v !== null && typeof value.v === 'object' ? value.v : value;
  const out: { [key: string]: unknown } = {};
  for (const [key, item] of Object.entries(source as { [key: string]: JsonValue }))
    out[key] = decodeValue(item);
  return out;
}
