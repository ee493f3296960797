// append(…, { after }) (contract §4.2): the caller names the event it planned its batch after, and
// the store writes only if that event still ends the log before the batch. These are the pure
// parts every backend shares: validating the option, comparing events, and the CONFLICT.
import { errors, TidemarkError } from './errors.js';
import { type EventLimits, type PreparedEvent, prepareEvent, type SessionEvent } from './event.js';
import { jsonEqual } from './json.js';

/**
 * Validates `append()` options against the validated batch; returns `after`, prepared.
 * @throws TidemarkError INVALID when `after` is not an event or does not end right before the batch.
 */
export function validateAppendOptions(
  options: unknown,
  batch: readonly PreparedEvent[],
  limits: EventLimits = {},
): PreparedEvent | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    throw errors.invalid('append: options must be an object');
  const { after } = options as { after?: unknown };
  if (after === undefined) return undefined;
  const prepared = prepareEvent(after, 'options.after', limits);
  const first = batch[0]!.event.seq;
  if (first === 0)
    throw errors.invalid('append: options.after is given, but the batch starts at seq 0, after no event');
  if (prepared.event.seq !== first - 1) {
    throw errors.invalid(
      `append: options.after is the event at seq ${prepared.event.seq}, but the batch starts at seq ${first}; it must be the event at seq ${first - 1}`,
    );
  }
  return prepared;
}

/** True when two events have the same seq, type, time and (deep-equal) data. */
export function sameEvent(a: SessionEvent, b: SessionEvent): boolean {
  return a.seq === b.seq && a.type === b.type && a.time === b.time && jsonEqual(a.data, b.data);
}

/**
 * The check of `append(…, { after })`, for a backend to run inside the same write as the batch:
 * `stored` is the event stored at `after.seq` (undefined when there is none). CONFLICT, naming the
 * session and seq, unless it is `after`.
 */
export function assertStoredAfter(id: string, stored: SessionEvent | undefined, after: PreparedEvent): void {
  if (stored !== undefined && sameEvent(stored, after.event)) return;
  const seq = after.event.seq;
  throw new TidemarkError(
    'CONFLICT',
    stored === undefined
      ? `session ${id}: the append was planned after the event at seq ${seq}, but the session holds no event at seq ${seq} (another writer cut, deleted or rewrote it); nothing was written. Read the session again and plan the batch anew.`
      : `session ${id}: the append was planned after an event at seq ${seq} that is no longer the one stored there (another writer deleted or rewrote the session); nothing was written. Read the session again and plan the batch anew.`,
    { sessionId: id, location: { seq } },
  );
}
