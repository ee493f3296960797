import { TidemarkError } from './errors.js';
import { canonicalInRange } from './iso-time.js';
import {
  copyJsonValue,
  DEFAULT_MAX_DEPTH,
  DEFAULT_MAX_EVENT_BYTES,
  type JsonValue,
  loneSurrogateIndex,
} from './json.js';

/** One entry of a session log. */
export interface SessionEvent<D extends JsonValue = JsonValue> {
  /** 0-based position in the session, contiguous. */
  seq: number;
  /** What happened, e.g. `turn/start`, `user/message`, `tool/call`, `tool/result`, `turn/end`. */
  type: string;
  /** ISO-8601 UTC timestamp. */
  time: string;
  /** Payload: any JSON value. */
  data: D;
}

/** Limits for event validation. */
export interface EventLimits {
  /** Deepest nesting accepted inside `data`. Default 256. */
  maxDepth?: number;
  /** Largest serialized event in bytes (UTF-8). Default 16 MiB. */
  maxEventBytes?: number;
}

/** Longest accepted `type`. */
export const MAX_TYPE_LENGTH = 256;

// ISO-8601 date-time with a mandatory zone designator; `Date.parse` then checks the calendar.
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

/** True when `time` is an ISO-8601 timestamp with a zone, such as `new Date().toISOString()`. */
export function isIsoTime(time: unknown): time is string {
  if (typeof time !== 'string' || !ISO_TIME.test(time)) return false;
  // The shape toISOString gives, checked on its digits: Date.parse was most of this check's cost
  // on every event. Anything else (other zones, hour 24, leap seconds, odd days) asks Date.parse.
  return (time.length === 24 && canonicalInRange(time)) || !Number.isNaN(Date.parse(time));
}

/** A validated event together with its serialized form (reused by backends to write it). */
export interface PreparedEvent {
  /** A deep copy of the caller's event, with exactly the four fields. */
  event: SessionEvent;
  /** `JSON.stringify(event)`, with the fields in the order seq, type, time, data. */
  json: string;
  /** UTF-8 length of {@link PreparedEvent.json}. */
  bytes: number;
}

/**
 * Validates one event and returns a deep copy of it with its serialization.
 * @param path - its name in messages, e.g. `events[3]`.
 * @throws TidemarkError INVALID naming the offending path.
 */
export function prepareEvent(value: unknown, path: string, limits: EventLimits = {}): PreparedEvent {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TidemarkError('INVALID', `${path}: an event must be an object with seq, type, time and data`);
  }
  const candidate = value as Record<string, unknown>;
  for (const key of Object.keys(candidate)) {
    if (key !== 'seq' && key !== 'type' && key !== 'time' && key !== 'data') {
      throw new TidemarkError(
        'INVALID',
        `${path}.${key}: unknown event field (allowed: seq, type, time, data)`,
      );
    }
  }
  const { seq, type, time, data } = candidate;
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0) {
    throw new TidemarkError('INVALID', `${path}.seq: must be a non-negative integer, got ${describe(seq)}`);
  }
  if (typeof type !== 'string' || type.length === 0 || type.length > MAX_TYPE_LENGTH) {
    throw new TidemarkError(
      'INVALID',
      `${path}.type: must be a string of 1 to ${MAX_TYPE_LENGTH} characters`,
    );
  }
  const lone = loneSurrogateIndex(type);
  if (lone !== -1) {
    throw new TidemarkError(
      'INVALID',
      `${path}.type: must be well-formed Unicode text, but has a lone UTF-16 surrogate at index ${lone}`,
    );
  }
  if (!isIsoTime(time)) {
    throw new TidemarkError(
      'INVALID',
      `${path}.time: must be an ISO-8601 timestamp with a zone, got ${describe(time)}`,
    );
  }
  if (!Object.hasOwn(candidate, 'data')) throw new TidemarkError('INVALID', `${path}.data: missing`);
  // The copy is built while `data` is checked, and the serialization is made from the copy, so that
  // what is stored and what the store goes on to use (summaries, the memory volume) are one value.
  const event: SessionEvent = {
    seq,
    type,
    time,
    data: copyJsonValue(data, `${path}.data`, { maxDepth: limits.maxDepth ?? DEFAULT_MAX_DEPTH }),
  };
  const json = JSON.stringify(event);
  const bytes = Buffer.byteLength(json, 'utf8');
  const maxBytes = limits.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
  if (bytes > maxBytes) {
    throw new TidemarkError(
      'INVALID',
      `${path}: serialized event is ${bytes} bytes, over the limit of ${maxBytes}`,
    );
  }
  return { event, json, bytes };
}

/**
 * Validates a batch for `append`: non-empty, every event valid, seqs contiguous. Returns deep
 * copies, so later mutation of the caller's objects changes nothing stored.
 * @throws TidemarkError INVALID (empty batch, bad event, gap inside the batch).
 */
export function prepareBatch(events: unknown, limits: EventLimits = {}, sessionId?: string): PreparedEvent[] {
  const withId = (e: TidemarkError) =>
    sessionId === undefined ? e : new TidemarkError(e.code, e.message, { sessionId });
  if (!Array.isArray(events))
    throw withId(new TidemarkError('INVALID', 'events: must be an array of events'));
  if (events.length === 0)
    throw withId(new TidemarkError('INVALID', 'events: a batch must hold at least one event'));
  const prepared: PreparedEvent[] = [];
  for (let i = 0; i < events.length; i++) {
    let item: PreparedEvent;
    try {
      item = prepareEvent(events[i], `events[${i}]`, limits);
    } catch (error) {
      throw error instanceof TidemarkError ? withId(error) : error;
    }
    if (i > 0 && item.event.seq !== prepared[i - 1]!.event.seq + 1) {
      throw withId(
        new TidemarkError(
          'INVALID',
          `events[${i}].seq: expected ${prepared[i - 1]!.event.seq + 1} (batches must be contiguous), got ${item.event.seq}`,
        ),
      );
    }
    prepared.push(item);
  }
  return prepared;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'bigint') return `${value}n (BigInt)`;
  return String(value);
}

/**
 * The JSON text of an event's `data`, cut from the serialization `prepareEvent` already made
 * (saving a second `JSON.stringify` of a possibly large payload), for backends that store `data`
 * in a column of its own. Falls back to stringifying when the serialization is not laid out as
 * expected.
 */
export function dataJsonOf(prepared: PreparedEvent): string {
  const { seq, type, time, data } = prepared.event;
  const head = `{"seq":${seq},"type":${JSON.stringify(type)},"time":${JSON.stringify(time)},"data":`;
  if (prepared.json.startsWith(head) && prepared.json.endsWith('}'))
    return prepared.json.slice(head.length, -1);
  return JSON.stringify(data);
}
