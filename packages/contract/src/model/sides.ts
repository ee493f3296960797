// The two sides of the model-based test, the backend under test and the memory reference model,
// and how their answers are compared.
import {
  isTidemarkError,
  type JsonValue,
  type SessionEvent,
  type SessionStore,
  type SessionSummary,
} from '@tidemark/core';
import { type MemoryVolume, openMemoryStore } from '@tidemark/memory';
import type fc from 'fast-check';
import { type CheckContext, describeError, violation } from '../harness.js';

/**
 * The reference side: two memory stores over one volume that survives reopen, like two processes
 * sharing a directory. Commands act on the `active` one.
 */
export interface ModelSide {
  volume: MemoryVolume;
  stores: [SessionStore, SessionStore];
  active: 0 | 1;
}

/** The backend side: two live instances over the same storage, the second opened by `reopen`. */
export interface RealSide {
  context: CheckContext;
  stores: [SessionStore, SessionStore];
  active: 0 | 1;
}

/** The store a command acts on. */
export function current(side: ModelSide | RealSide): SessionStore {
  return side.stores[side.active];
}

/** What a call ended with, reduced to what two correct backends must agree on. */
export type Outcome = { ok: true; value: unknown } | { ok: false; code: string };

export async function outcomeOf(
  action: () => Promise<unknown>,
  normalize: (value: never) => unknown = (v) => v,
): Promise<Outcome> {
  try {
    return { ok: true, value: normalize((await action()) as never) };
  } catch (error) {
    // An untyped error can never match the model's typed one, so it is reported as a mismatch.
    return { ok: false, code: isTidemarkError(error) ? error.code : `untyped ${describeError(error)}` };
  }
}

/** A deep copy with object keys sorted: key order of summaries and meta is not part of the contract. */
export function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    Object.defineProperty(out, key, {
      value: sortedKeys((value as Record<string, unknown>)[key]),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

// Timestamps of create/update/append come from each store's own clock, formatVersion and
// quarantine locations are backend-specific: everything else must be equal. Event objects are
// compared as returned (their serialization must be byte-identical); summaries and meta by content.
// A `createdAt` given to `create` is no clock reading: it must come back exactly (normalized to UTC).
export const GIVEN_CREATED_AT = '2025-06-01T10:00:00.000Z';
export const createdAtOf = (createdAt: string) => (createdAt === GIVEN_CREATED_AT ? createdAt : 'clock');

/** A summary without its clock readings, keys sorted. */
export function normalizeSummary(summary: SessionSummary): unknown {
  const { createdAt, updatedAt: _u, ...rest } = summary;
  return sortedKeys({ ...rest, createdAt: createdAtOf(createdAt) });
}

/** A meta without its clock reading and formatVersion, keys sorted. */
export function normalizeMeta(meta: {
  id: string;
  createdAt: string;
  cwd?: string;
  parent?: unknown;
}): unknown {
  return sortedKeys({
    id: meta.id,
    createdAt: createdAtOf(meta.createdAt),
    cwd: meta.cwd,
    parent: meta.parent,
  });
}

/** Runs `model` then `real` and fails unless both end the same way (value or error code). */
export async function compare(
  what: string,
  model: () => Promise<unknown>,
  real: () => Promise<unknown>,
  normalize?: (value: never) => unknown,
) {
  const expected = await outcomeOf(model, normalize);
  const actual = await outcomeOf(real, normalize);
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e)
    violation(`${what}: backend answered ${a.slice(0, 400)}\n  but the model answered ${e.slice(0, 400)}`);
  return expected;
}

export const CWDS = [undefined, undefined, '/w/a'] as const;
export const TYPES = ['note', 'user/message', 'tool/call', 'turn/end', 'session/end'] as const;

/** A command of the model-based test: it acts on both sides and compares their answers. */
export type Cmd = fc.AsyncCommand<ModelSide, RealSide>;

/** The events the model holds for `id` (empty when absent or pending). */
export async function modelEvents(model: ModelSide, id: string): Promise<SessionEvent[]> {
  try {
    return (await current(model).load(id)).events;
  } catch {
    return [];
  }
}

/** A valid event of type `TYPES[typeIndex]`, told apart by `payload`. */
export function makeEvent(seq: number, typeIndex: number, payload: number): SessionEvent {
  const data: JsonValue =
    TYPES[typeIndex] === 'user/message' ? { text: `prompt ${payload}` } : { payload, seq };
  return {
    seq,
    type: TYPES[typeIndex]!,
    time: new Date(Date.UTC(2026, 0, 1) + seq * 1000 + payload).toISOString(),
    data,
  };
}

/** The store options both sides run with: the defaults, spelled out. */
export const modelOptions = { boundaryTypes: ['turn/end', 'session/end'] };

/** Two live reference stores over one volume. */
export async function openModelStores(volume: MemoryVolume): Promise<[SessionStore, SessionStore]> {
  return [
    await openMemoryStore({ volume, ...modelOptions }),
    await openMemoryStore({ volume, ...modelOptions }),
  ];
}

/** A restart of `previous`'s storage, then a second live instance beside it. */
export async function openRealStores(
  context: CheckContext,
  previous?: SessionStore,
): Promise<[SessionStore, SessionStore]> {
  const first =
    previous === undefined ? await context.open(modelOptions) : await context.reopen(previous, modelOptions);
  return [first, await context.reopen(first, modelOptions)];
}
