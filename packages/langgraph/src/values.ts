// How a serialized value is kept inside an event's JSON, in the smallest form that gives its bytes
// back exactly: deflated, in base64 (`z`), when that is clearly smaller (by a fifth and by 1 KiB at
// least: a list channel that grows every step is stored whole at every step); else the text (`s`)
// when the bytes are UTF-8; base64 (`b`) otherwise, and for type `bytes`. Earlier versions also kept
// a `json` value as the JSON itself (`j`) when JSON.stringify wrote it back byte for byte, and
// before that base64 was the only form: records holding either stay readable. A value is written
// as text rather than as JSON because every append validates, copies and serializes its event's
// data again: a string is one step of that, the JSON of a checkpoint dozens (and checking that it
// writes back exactly cost a parse and a stringify more on every put).
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { JsonValue } from '@tidemark/core';

/** A value serialized by the saver's `SerializerProtocol`: its type tag and its bytes in one form. */
export interface SerializedValue {
  t: string;
  /** The bytes in base64. */
  b?: string;
  /** The bytes as UTF-8 text. */
  s?: string;
  /** The bytes as the JSON value they encode (`JSON.stringify(j)` gives them back exactly). */
  j?: JsonValue;
  /** The bytes deflated (raw deflate), in base64. */
  z?: string;
}

/**
 * Bytes a deflated value must save (against its bytes, in base64 as stored) to be kept deflated.
 * Every read of a deflated value sets up a zlib stream, a fixed cost (about 0.02 ms warm and 0.1 ms
 * on a cold read on a loaded machine) that a saving of a few hundred bytes does not repay; a value
 * shorter than this cannot save it, and is not deflated at all.
 */
const MIN_DEFLATE_SAVING = 1024;

/**
 * Output chunk of inflating a value: zlib's default (16 KiB) makes a large value several chunks
 * joined by one more copy; a value deflated is longer than {@link MIN_DEFLATE_SAVING} bytes.
 */
const INFLATE_CHUNK = 128 * 1024;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Bytes to the stored form. */
export function encodeBytes(type: string, bytes: Uint8Array): SerializedValue {
  if (bytes.byteLength > MIN_DEFLATE_SAVING) {
    const deflated = deflateRawSync(bytes, { level: 1 });
    const stored = Math.ceil(deflated.byteLength / 3) * 4;
    if (stored < bytes.byteLength * 0.8 && bytes.byteLength - stored >= MIN_DEFLATE_SAVING)
      return { t: type, z: deflated.toString('base64') };
  }
  if (type !== 'bytes') {
    let text: string | undefined;
    try {
      text = utf8.decode(bytes);
    } catch {
      text = undefined;
    }
    if (text !== undefined) return { t: type, s: text };
  }
  return { t: type, b: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64') };
}

/**
 * The stored form back to bytes. Values of type `bytes` are handed to the caller as they are, so
 * they get an array of their own; any other type is only read by the serializer, which can take
 * a view of the decoded buffer without a copy.
 */
export function decodeBytes(value: SerializedValue): Uint8Array {
  const decoded =
    value.z !== undefined
      ? inflateRawSync(Buffer.from(value.z, 'base64'), { chunkSize: INFLATE_CHUNK })
      : value.b !== undefined
        ? Buffer.from(value.b, 'base64')
        : Buffer.from(value.s ?? JSON.stringify(value.j ?? null), 'utf8');
  if (value.t === 'bytes') return new Uint8Array(decoded);
  return new Uint8Array(decoded.buffer, decoded.byteOffset, decoded.byteLength);
}

/**
 * The stored form as the serializer's `loadsTyped` takes it: for type `json`, its text
 * (`SerializerProtocol` takes a string as well as bytes, and the JSON serializer decodes bytes to
 * that very text first), which saves a UTF-8 encode for a value held as text or JSON and lets a
 * deflated one be parsed plainly (see tuples.ts); otherwise the bytes, as {@link decodeBytes} gives
 * them.
 */
export function decodeForSerde(value: SerializedValue): Uint8Array | string {
  if (value.t === 'json' && value.b === undefined) {
    if (value.z !== undefined)
      return inflateRawSync(Buffer.from(value.z, 'base64'), { chunkSize: INFLATE_CHUNK }).toString('utf8');
    return value.s ?? JSON.stringify(value.j ?? null);
  }
  return decodeBytes(value);
}

/** True when the stored forms hold the same type and bytes. */
export function sameSerialized(a: SerializedValue | undefined, b: SerializedValue | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (a.t !== b.t) return false;
  if (a.b !== undefined || b.b !== undefined || a.z !== undefined || b.z !== undefined)
    return a.b === b.b && a.z === b.z;
  // Text and JSON: a `j` was kept only when JSON.stringify gave its bytes back exactly, so the same
  // bytes in the two forms compare equal (a value written by an earlier version, put again).
  return textOf(a) === textOf(b);
}

function textOf(value: SerializedValue): string {
  return value.s ?? JSON.stringify(value.j ?? null);
}

/**
 * A key naming the value's type and bytes when they are cheaply known to be at most `limit`
 * characters (undefined otherwise), for sharing the deserialization of small values.
 */
export function smallValueKey(value: SerializedValue, limit: number): string | undefined {
  if (value.z !== undefined) return undefined;
  if (value.b !== undefined) return value.b.length <= limit ? `b${value.b}` : undefined;
  if (value.s !== undefined) return value.s.length <= limit ? `s${value.s}` : undefined;
  const j = value.j ?? null;
  if (typeof j === 'string' && j.length > limit) return undefined;
  if (typeof j === 'object' && j !== null) {
    const empty = Array.isArray(j) ? j.length === 0 : Object.keys(j).length === 0;
    return empty ? `j${JSON.stringify(j)}` : undefined;
  }
  const text = JSON.stringify(j);
  return text.length <= limit ? `j${text}` : undefined;
}

/**
 * The length of `value` as stored (its JSON text) when it is at most `limit` characters, else
 * `undefined`; a large value held as JSON is not written out to learn that it is large.
 */
export function storedLengthAtMost(value: SerializedValue, limit: number): number | undefined {
  // `{"t":…,"x":…}`: the type's JSON and 11 characters around it and the form.
  let length = JSON.stringify(value.t).length + 11;
  if (length > limit) return undefined;
  const form = value.z ?? value.b ?? value.s;
  if (form !== undefined) {
    if (length + form.length > limit) return undefined;
    length += JSON.stringify(form).length;
  } else {
    const j = jsonLengthAtMost(value.j ?? null, limit - length);
    if (j === undefined) return undefined;
    length += j;
  }
  return length <= limit ? length : undefined;
}

/** `JSON.stringify(value).length` when it is at most `limit`, else `undefined` (stopping early). */
function jsonLengthAtMost(value: JsonValue, limit: number): number | undefined {
  if (typeof value !== 'object' || value === null) {
    if (typeof value === 'string' && value.length + 2 > limit) return undefined;
    const length = JSON.stringify(value).length;
    return length <= limit ? length : undefined;
  }
  // Brackets, and a comma between entries.
  let length = 2;
  const add = (key: string | undefined, child: JsonValue): boolean => {
    if (length > 2) length += 1;
    if (key !== undefined) length += JSON.stringify(key).length + 1;
    const inner = length > limit ? undefined : jsonLengthAtMost(child, limit - length);
    if (inner === undefined) return false;
    length += inner;
    return true;
  };
  if (Array.isArray(value)) {
    for (const child of value) if (!add(undefined, child)) return undefined;
  } else {
    for (const key in value) if (!add(key, value[key]!)) return undefined;
  }
  return length <= limit ? length : undefined;
}

/** True for a stored form of a value: a type and exactly one of `b`, `s`, `j`, `z`. */
export function isSerialized(v: unknown): v is SerializedValue {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const fields = v as Record<string, unknown>;
  if (typeof fields.t !== 'string') return false;
  const forms =
    Number(typeof fields.b === 'string') +
    Number(typeof fields.s === 'string') +
    Number(typeof fields.z === 'string') +
    Number(Object.hasOwn(fields, 'j'));
  const strays = [fields.b, fields.s, fields.z].some(
    (form) => form !== undefined && typeof form !== 'string',
  );
  return forms === 1 && !strays;
}
