// Helpers shared by the checks. Every check builds its own sessions from scratch: checks are
// independent, so a backend author can run one alone, and a broken backend fails the checks that
// name the broken rule.
import {
  checksAppendAfter,
  isTidemarkError,
  type JsonValue,
  type SessionEvent,
  type SessionStore,
  type SessionSummary,
} from '@tidemark/core';
import { type CheckContext, describeError, evs, skipCheck, violation } from '../harness.js';

/** Creates `id` and appends `events` as its first batch. */
export async function materialize(
  store: SessionStore,
  id: string,
  events: SessionEvent[] = evs(0, 1),
  cwd?: string,
): Promise<void> {
  await store.create({ id, ...(cwd !== undefined && { cwd }) });
  await store.append(id, events);
}

/**
 * Opens a store for a check of `append(…, { after })` (contract §4.2); skips the check, with the
 * reason, when the store does not claim `capabilities.appendAfter` (it may ignore the option).
 */
export async function openCheckingAfter(ctx: CheckContext): Promise<SessionStore> {
  const store = await ctx.open();
  if (!checksAppendAfter(store)) {
    skipCheck(
      `${ctx.driver.name} does not check append(…, { after }): its store has no capabilities.appendAfter (contract §4.2)`,
    );
  }
  return store;
}

/** The events of `id`, as load returns them. */
export async function eventsOf(store: SessionStore, id: string): Promise<SessionEvent[]> {
  return (await store.load(id)).events;
}

/** Every summary of a store, paging through list. */
export async function listAll(store: SessionStore, cwd?: string, limit = 1000): Promise<SessionSummary[]> {
  const out: SessionSummary[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 10_000; page++) {
    const result = await store.list({
      limit,
      ...(cwd !== undefined && { cwd }),
      ...(cursor !== undefined && { cursor }),
    });
    if (result.problems.length > 0) {
      violation(
        `list reported problems on a healthy store: ${result.problems.map((p) => `${p.id}: ${p.error.message}`).join('; ')}`,
      );
    }
    out.push(...result.sessions);
    if (result.nextCursor === undefined) return out;
    if (result.sessions.length === 0) violation('list returned an empty page with a nextCursor');
    cursor = result.nextCursor;
  }
  return violation('list never stopped returning a nextCursor');
}

/** Fails unless `actual` and `expected` serialize to the same JSON text. */
export function byteIdentical(actual: unknown, expected: unknown, what: string): void {
  const a = JSON.stringify(actual);
  const b = JSON.stringify(expected);
  if (a !== b)
    violation(
      `${what}: JSON serialization differs\n  stored:   ${a.slice(0, 300)}\n  returned: ${b.slice(0, 300)}`,
    );
}

/** `leaf` wrapped in `depth` alternating objects and arrays. */
export function nested(depth: number, leaf: JsonValue): JsonValue {
  let value: JsonValue = leaf;
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? { level: i, child: value } : [i, value];
  return value;
}

/** Appends `batch` and reports whether it won (true) or lost with CONFLICT (false). */
export async function tryAppend(
  store: SessionStore,
  id: string,
  batch: SessionEvent[],
  what: string,
): Promise<boolean> {
  try {
    await store.append(id, batch);
    return true;
  } catch (error) {
    if (isTidemarkError(error, 'CONFLICT')) return false;
    return violation(`${what}: a losing writer must get CONFLICT, got ${describeError(error)}`);
  }
}
