// What an ADK session's tidemark log holds, and how its events and state are read back: pure
// functions of the stored events, no I/O.
//
// seq 0         adk/session   { appName, userId, sessionId, state, createdAt }   (state: the session's own keys)
// each appendEvent is one batch:
//               adk/event     { event, replaces? }   (replaces: seq of the stored event with the same id)
//               adk/snapshot  { state, basedOn }     (every SNAPSHOT_EVERY events: the session's own state)
//               turn/end      { lastUpdateTime, snapshotSeq, sinceSnapshot, nonce }
//
// State is the snapshot's plus the state deltas of the events after it, in seq order; a reader
// finds the newest snapshot from the last closing event alone. A snapshot or a replacement is a
// plan made on what a read showed; a reader checks both against the log (the closing event the
// snapshot was planned after, the event id at `replaces`), so a plan made on a session that was
// deleted and written again meanwhile is never taken for the new one's. (A store that checks
// `append(…, { after })` refuses such a plan outright; the readers' checks are for stores without
// that check, and for logs written by them.)
import type { JsonValue, SessionEvent } from '@tidemark/core';
import { errors } from '@tidemark/core';

/** Event types of an ADK session's log. */
export const ADK_EVENT = {
  session: 'adk/session',
  event: 'adk/event',
  snapshot: 'adk/snapshot',
  end: 'turn/end',
} as const;

/** A snapshot of the session's own state is written once this many events followed the last one. */
export const SNAPSHOT_EVERY = 32;

/** A plain JSON object, as state and events are kept. */
export type JsonObject = { [key: string]: JsonValue };

/** The closing event of a batch. */
export interface Closing {
  lastUpdateTime: number;
  snapshotSeq: number;
  sinceSnapshot: number;
  nonce: string;
}

/** The first record of a session's log. */
export interface SessionHeader {
  appName: string;
  userId: string;
  sessionId: string;
  state: JsonObject;
  createdAt: number;
}

/** An ADK event as stored: its JSON form. */
export interface StoredEvent {
  id: string;
  timestamp: number;
  actions?: { stateDelta?: JsonObject };
  [key: string]: JsonValue | undefined;
}

/** What a read of a session gives. */
export interface SessionView {
  /** The session's own state (no app:, user: or temp: keys). */
  state: JsonObject;
  /** Events in seq order of first appearance, each as last written. */
  events: StoredEvent[];
  lastUpdateTime: number;
}

const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Sets `key` as an own property, so that `__proto__` is data, never a prototype. */
export function setOwn(target: JsonObject, key: string, value: JsonValue): void {
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
}

/** A copy of `source` without prototype: keys like `__proto__` stay own data. */
export function ownCopy(source: JsonObject | undefined): JsonObject {
  const out = Object.create(null) as JsonObject;
  if (source !== undefined) for (const [key, value] of Object.entries(source)) setOwn(out, key, value);
  return out;
}

/** Whether a state key belongs to the session itself (not shared, not temporary). */
export const isOwnKey = (key: string) =>
  !key.startsWith('app:') && !key.startsWith('user:') && !key.startsWith('temp:');

/** Applies the session's own keys of an event's state delta to `state`. */
export function applyDelta(state: JsonObject, event: StoredEvent): void {
  const delta = event.actions?.stateDelta;
  if (!isObject(delta)) return;
  for (const [key, value] of Object.entries(delta)) if (isOwnKey(key)) setOwn(state, key, value);
}

/** The closing event of a log's last batch, checked. */
export function closingOf(event: SessionEvent, id: string): Closing {
  const data = event.data as Partial<Closing> | null;
  if (
    event.type !== ADK_EVENT.end ||
    !isObject(data) ||
    typeof data.lastUpdateTime !== 'number' ||
    typeof data.snapshotSeq !== 'number' ||
    typeof data.nonce !== 'string'
  )
    throw notAdk(id, event.seq, 'the closing event of a batch');
  return data as Closing;
}

/** The header at seq 0, checked against the key it was asked for. */
export function headerOf(
  event: SessionEvent,
  id: string,
  key: Omit<SessionHeader, 'state' | 'createdAt'>,
): SessionHeader {
  const data = event.data as Partial<SessionHeader> | null;
  if (event.seq !== 0 || event.type !== ADK_EVENT.session || !isObject(data) || !isObject(data.state))
    throw notAdk(id, event.seq, 'an ADK session header');
  if (data.appName !== key.appName || data.userId !== key.userId || data.sessionId !== key.sessionId)
    throw errors.corrupt(`session ${id} holds another ADK session than its id names`, { seq: 0 }, id);
  return data as SessionHeader;
}

function notAdk(id: string, seq: number, what: string) {
  return errors.corrupt(
    `session ${id}: the event at seq ${seq} is not ${what} of an ADK session`,
    { seq },
    id,
  );
}

const storedEventOf = (event: SessionEvent): { event: StoredEvent; replaces?: number } =>
  event.data as unknown as { event: StoredEvent; replaces?: number };

/**
 * The events of a run of log events (a whole log, or its end from some seq on), in order of first
 * appearance, a replacement applied where the event it names is in view and is the same id. A
 * replacement whose original lies before the view changes nothing in view and is left out.
 */
export function eventsOf(events: readonly SessionEvent[]): StoredEvent[] {
  const list: StoredEvent[] = [];
  const indexBySeq = new Map<number, number>();
  for (const record of events) {
    if (record.type !== ADK_EVENT.event) continue;
    const { event, replaces } = storedEventOf(record);
    const at = replaces === undefined ? undefined : indexBySeq.get(replaces);
    if (at !== undefined && list[at]!.id === event.id) {
      list[at] = event;
      continue;
    }
    if (replaces !== undefined && at === undefined && replaces < (events[0]?.seq ?? 0)) continue;
    indexBySeq.set(record.seq, list.length);
    list.push(event);
  }
  return list;
}

/** The session's own state from a whole log. */
export function stateOfWholeLog(events: readonly SessionEvent[], header: SessionHeader): JsonObject {
  const state = ownCopy(header.state);
  for (const record of events)
    if (record.type === ADK_EVENT.event) applyDelta(state, storedEventOf(record).event);
  return state;
}

/**
 * The session's own state from the end of its log: `events` must start at the seq before the
 * previous closing event of the snapshot's batch (`snapshotSeq - 2`) or earlier. Undefined when the
 * snapshot does not check out (then the whole log must be folded).
 */
export function stateFromSnapshot(events: readonly SessionEvent[], closing: Closing): JsonObject | undefined {
  const at = events.findIndex((e) => e.seq === closing.snapshotSeq);
  if (at === -1) return undefined;
  const snapshot = events[at]!;
  let state: JsonObject;
  if (snapshot.seq === 0 && snapshot.type === ADK_EVENT.session)
    state = ownCopy((snapshot.data as unknown as SessionHeader).state);
  else {
    const data = snapshot.data as { state?: unknown; basedOn?: unknown } | null;
    if (snapshot.type !== ADK_EVENT.snapshot || !isObject(data) || !isObject(data.state)) return undefined;
    const before = events[at - 2];
    const planned =
      before?.type === ADK_EVENT.end ? (before.data as { nonce?: unknown } | null)?.nonce : undefined;
    if (planned === undefined || planned !== data.basedOn) return undefined;
    state = ownCopy(data.state);
  }
  for (const record of events.slice(at + 1))
    if (record.type === ADK_EVENT.event) applyDelta(state, storedEventOf(record).event);
  return state;
}

/** The events after `afterTimestamp`: those following the last one at or before it. */
export function eventsAfter(
  list: readonly StoredEvent[],
  afterTimestamp: number,
): { events: StoredEvent[]; complete: boolean } {
  for (let i = list.length - 1; i >= 0; i--)
    if (list[i]!.timestamp <= afterTimestamp) return { events: list.slice(i + 1), complete: true };
  return { events: [...list], complete: false };
}

/** An ADK event in its stored JSON form, or INVALID naming what could not be stored. */
export function encodeEvent(event: unknown, where: string): StoredEvent {
  let text: string | undefined;
  try {
    text = JSON.stringify(event);
  } catch (error) {
    throw errors.invalid(`${where}: the event cannot be stored as JSON (${(error as Error).message})`);
  }
  const parsed = text === undefined ? undefined : (JSON.parse(text) as unknown);
  if (!isObject(parsed) || typeof parsed.id !== 'string' || typeof parsed.timestamp !== 'number')
    throw errors.invalid(`${where}: the event must be an object with a string id and a numeric timestamp`);
  return parsed as StoredEvent;
}

/** A state object in its stored JSON form, or INVALID. */
export function encodeState(state: Record<string, unknown>, where: string): JsonObject {
  let text: string | undefined;
  try {
    text = JSON.stringify(state);
  } catch (error) {
    throw errors.invalid(`${where}: the state cannot be stored as JSON (${(error as Error).message})`);
  }
  const parsed = text === undefined ? undefined : (JSON.parse(text) as unknown);
  if (!isObject(parsed)) throw errors.invalid(`${where}: the state must be an object`);
  return parsed;
}
