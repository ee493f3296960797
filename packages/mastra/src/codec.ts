// Mastra records as JSON and back. Mastra hands storage objects with Dates, undefined fields and
// class instances in them; the SQL stores keep `JSON.stringify` of them, and so does this adapter:
// Dates become ISO strings (the record's own dates come back as Date), undefined fields drop out.
import { type JsonValue, TidemarkError } from '@tidemark/core';

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/**
 * `value` as JSON, the way `JSON.stringify` writes it.
 * @throws TidemarkError INVALID naming `what` when it cannot be written as JSON (BigInt, a cycle).
 */
export function toJson(value: unknown, what: string): JsonValue {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    throw new TidemarkError('INVALID', `${what}: cannot be stored as JSON (${(error as Error).message})`, {
      cause: error,
    });
  }
  return text === undefined ? null : (JSON.parse(text) as JsonValue);
}

/** A JSON object for `value`, which must be a plain object. */
export function toJsonObject(value: unknown, what: string): JsonObject {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TidemarkError('INVALID', `${what}: expected an object`);
  }
  return toJson(value, what) as JsonObject;
}

/**
 * A date Mastra gave (a Date, an ISO string or epoch milliseconds) as an ISO string; `fallback`
 * when there is none.
 * @throws TidemarkError INVALID naming `what` for a value that is not a valid date.
 */
export function isoOf(value: unknown, what: string, fallback: string): string {
  if (value === undefined || value === null) return fallback;
  const date =
    value instanceof Date
      ? value
      : typeof value === 'string' || typeof value === 'number'
        ? new Date(value)
        : undefined;
  if (date === undefined || Number.isNaN(date.getTime())) {
    throw new TidemarkError('INVALID', `${what}: not a valid date: ${String(value)}`);
  }
  return date.toISOString();
}

/** Epoch milliseconds of a stored ISO date. */
export const msOf = (iso: JsonValue | undefined): number => new Date(String(iso)).getTime();

/** The same object with the named ISO fields turned back into Dates. */
export function withDates<T>(record: JsonObject, fields: readonly string[]): T {
  const out: Record<string, unknown> = { ...record };
  for (const field of fields) {
    if (typeof out[field] === 'string') out[field] = new Date(out[field] as string);
  }
  return out as T;
}

/** Compares two JSON values by content, key order included (both come from `toJson`). */
export const sameJson = (a: JsonValue | undefined, b: JsonValue | undefined): boolean =>
  JSON.stringify(a) === JSON.stringify(b);
