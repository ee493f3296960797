// The write path of contract §8: a SessionWriter turns single events into group-committed batches
// over any SessionStore. It never drops an event it accepted: a failed append keeps the buffer,
// and the retry re-sends exactly the same batch so that the store's idempotent-retry rule
// absorbs an append that committed but whose answer was lost.
import { errors, isTidemarkError, TidemarkError, toIoError } from './errors.js';
import { type EventLimits, type PreparedEvent, prepareEvent, type SessionEvent } from './event.js';
import { assertValidId } from './ids.js';
import type { JsonValue } from './json.js';
import { nowIso } from './session.js';
import type { SessionStore } from './store.js';

/** What an application pushes: seq is assigned by the writer, time defaults to now. */
export interface WriterEventInput<D extends JsonValue = JsonValue> {
  type: string;
  data: D;
  /** ISO-8601 UTC time; the current time when omitted. */
  time?: string;
}

/** Options of {@link SessionWriter}. */
export interface SessionWriterOptions extends EventLimits {
  /** The seq of the first event this writer pushes (the store's next seq). Default 0. */
  nextSeq?: number;
  /** Most events in one append. Default 256. */
  maxBatchEvents?: number;
  /** Most serialized bytes in one append (a single larger event still goes alone). Default 1 MiB. */
  maxBatchBytes?: number;
  /** Longest time an accepted event waits before a flush starts, in ms. Default 5. */
  maxDelayMs?: number;
  /** Most events held (buffered or in flight) before `push` waits. Default 4096. */
  maxBufferedEvents?: number;
  /** Clock for events pushed without `time` (tests). */
  now?: () => string;
}

/** Defaults of {@link SessionWriterOptions}. */
export const WRITER_DEFAULTS = {
  maxBatchEvents: 256,
  maxBatchBytes: 1024 * 1024,
  maxDelayMs: 5,
  maxBufferedEvents: 4096,
} as const;

function positiveInt(value: number | undefined, fallback: number, name: string, min = 1): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < min) {
    throw new TidemarkError('INVALID', `SessionWriter: ${name} must be an integer ≥ ${min}`);
  }
  return value;
}

/**
 * How many of the events sized by `sizes`, from index `from` (the head by default), form the next
 * batch: at most `maxEvents`, and no more bytes than `maxBytes` unless the first event alone is
 * larger. Pure; the writer and `fork` use it.
 */
export function nextBatchSize(
  sizes: readonly number[],
  maxEvents: number,
  maxBytes: number,
  from = 0,
): number {
  let count = 0;
  let bytes = 0;
  for (let i = from; i < sizes.length; i++) {
    const size = sizes[i]!;
    if (count >= maxEvents) break;
    if (count > 0 && bytes + size > maxBytes) break;
    count++;
    bytes += size;
  }
  return count;
}

/**
 * The event handed to the caller: its own copy. The buffered one is what the store gets (and what
 * a retry must resend deep-equal), so the caller must never hold a reference to it.
 */
function callerCopy(item: PreparedEvent): SessionEvent {
  return JSON.parse(item.json) as SessionEvent;
}

/**
 * Buffers events for one session and appends them in batches (group commit by count, bytes and a
 * short delay). Only one append is in flight at a time, so batches land in seq order.
 *
 * Failure model: when an append rejects, the batch stays at the head of the buffer and the
 * writer enters a failed state: `push` rejects with that error and nothing is written in the
 * background until {@link SessionWriter.flush} is called, which retries the very same batch first.
 * Because the retry is identical (same seqs, deep-equal events), an append that committed but
 * whose answer was lost succeeds idempotently, without duplicates.
 */
export class SessionWriter {
  /** The session written to. */
  readonly id: string;
  private readonly store: SessionStore;
  private readonly maxBatchEvents: number;
  private readonly maxBatchBytes: number;
  private readonly maxDelayMs: number;
  private readonly maxBufferedEvents: number;
  private readonly limits: EventLimits;
  private readonly now: () => string;

  /** Accepted events not yet acknowledged by the store, in seq order (head may be in flight). */
  private readonly buffer: PreparedEvent[] = [];
  private bufferBytes = 0;
  private assigned: number;
  private durable: number;
  /** Size of a batch whose append failed: the retry must resend exactly it. */
  private retrySize: number | undefined;
  private failure: TidemarkError | undefined;
  /** Flush everything up to (excluding) this seq regardless of thresholds. */
  private flushTarget: number;
  private running: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Pushes waiting for space (backpressure), seqs already assigned, in seq order. */
  private readonly waiting: {
    item: PreparedEvent;
    resolve: (event: SessionEvent) => void;
    reject: (error: TidemarkError) => void;
  }[] = [];
  private closed = false;
  private appendCount = 0;

  constructor(store: SessionStore, id: string, options: SessionWriterOptions = {}) {
    assertValidId(id);
    this.store = store;
    this.id = id;
    const nextSeq = options.nextSeq ?? 0;
    if (!Number.isSafeInteger(nextSeq) || nextSeq < 0) {
      throw new TidemarkError('INVALID', 'SessionWriter: nextSeq must be a non-negative integer');
    }
    this.assigned = nextSeq;
    this.durable = nextSeq;
    this.flushTarget = nextSeq;
    this.maxBatchEvents = positiveInt(
      options.maxBatchEvents,
      WRITER_DEFAULTS.maxBatchEvents,
      'maxBatchEvents',
    );
    this.maxBatchBytes = positiveInt(options.maxBatchBytes, WRITER_DEFAULTS.maxBatchBytes, 'maxBatchBytes');
    this.maxDelayMs = positiveInt(options.maxDelayMs, WRITER_DEFAULTS.maxDelayMs, 'maxDelayMs', 0);
    this.maxBufferedEvents = positiveInt(
      options.maxBufferedEvents,
      WRITER_DEFAULTS.maxBufferedEvents,
      'maxBufferedEvents',
    );
    this.limits = {
      ...(options.maxDepth !== undefined && { maxDepth: options.maxDepth }),
      ...(options.maxEventBytes !== undefined && { maxEventBytes: options.maxEventBytes }),
    };
    this.now = options.now ?? nowIso;
  }

  /** The seq the next pushed event will get. */
  get nextSeq(): number {
    return this.assigned;
  }

  /** The store's next seq as far as this writer knows: every event below it is acknowledged. */
  get durableSeq(): number {
    return this.durable;
  }

  /** Events accepted (buffered or waiting for space) but not yet acknowledged by the store. */
  get pending(): number {
    return this.buffer.length + this.waiting.length;
  }

  /** Number of `append` calls made so far (for tests and metrics). */
  get appends(): number {
    return this.appendCount;
  }

  /** The error of the last failed append, while the writer is in the failed state. */
  get error(): TidemarkError | undefined {
    return this.failure;
  }

  /**
   * Accepts one event: validates it, assigns its seq and time, and buffers it. Resolves with the
   * event as it will be stored once it is accepted (not yet durable: use {@link flush}). Waits
   * while the buffer is full (backpressure). Rejects with INVALID for a bad event (no seq is used),
   * CLOSED after close, or the pending append error while the writer is in the failed state.
   */
  push<D extends JsonValue>(input: WriterEventInput<D>): Promise<SessionEvent<D>> {
    try {
      this.assertUsable();
      if (typeof input !== 'object' || input === null) {
        throw new TidemarkError('INVALID', 'push: an event must be an object { type, data, time? }', {
          sessionId: this.id,
        });
      }
      // The seq is assigned at call time, so events get seqs in the order push was called even
      // when some of them wait for space.
      const prepared = prepareEvent(
        { seq: this.assigned, type: input.type, time: input.time ?? this.now(), data: input.data },
        `push(seq ${this.assigned})`,
        this.limits,
      );
      this.assigned++;
      if (this.waiting.length === 0 && this.buffer.length < this.maxBufferedEvents) {
        this.admit(prepared);
        this.schedule();
        return Promise.resolve(callerCopy(prepared) as SessionEvent<D>);
      }
      const admitted = new Promise<SessionEvent<D>>((resolve, reject) => {
        this.waiting.push({ item: prepared, resolve: resolve as (event: SessionEvent) => void, reject });
      });
      this.requestFlush();
      return admitted;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Resolves once every event pushed before this call is acknowledged by the store (durable
   * under the store's durability). In the failed state it retries the failed batch first; on a
   * new failure it rejects with that error and keeps the buffer for the next attempt.
   */
  async flush(): Promise<void> {
    if (this.closed) throw errors.closed();
    let target = this.assigned;
    if (this.failure !== undefined) this.failure = undefined; // an explicit flush is the retry
    if (target > this.flushTarget) this.flushTarget = target;
    for (;;) {
      // Waiting pushes rejected by a failed append hand their seqs back: those events will never
      // be durable, so they leave the target too (else, once another flush cleared the failure,
      // this loop would spin on an empty buffer forever and starve the event loop).
      if (this.assigned < target) target = this.assigned;
      if (this.durable >= target) return;
      // abandon() while this flush waited: it handed the rest back and no append will start again
      // (pump() would return at once, and this loop would spin on microtasks forever).
      if (this.closed) throw errors.closed();
      // A failed append lowered flushTarget with the seqs it handed back; seqs pushed again since
      // may be below this flush's target without having raised it: make sure the loop writes them.
      if (target > this.flushTarget) this.flushTarget = target;
      if (this.failure !== undefined) throw this.failure;
      await this.pump();
    }
  }

  /**
   * Drains the buffer and waits for quiescence (no append in flight, no timer). Afterwards every
   * call rejects with CLOSED. When the drain fails the writer stays open, keeps its buffer and
   * rejects with the error, so that nothing accepted is dropped; call `close()` again to retry.
   * Does not close the store.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.flush();
    while (this.running !== undefined) await this.running;
    if (this.buffer.length > 0 || this.waiting.length > 0) {
      // Pushes that raced with the drain: drain them too.
      await this.close();
      return;
    }
    this.clearTimer();
    this.closed = true;
    this.rejectWaiting(errors.closed());
  }

  /**
   * Gives up on this writer and hands back what it could not make durable, so that nothing it
   * accepted is lost when it cannot go on: after a CONFLICT (another writer took those seqs), an
   * error that retrying will not cure, or a store that had to be reopened.
   *
   * Waits for an append in flight to settle, then closes the writer without writing anything
   * more: later calls reject with CLOSED, and pushes still waiting for space reject with CLOSED
   * (they were never accepted). Resolves with copies of the accepted events not acknowledged by
   * the store, in seq order. Caveat: when the last append failed, the store may have committed it
   * all the same (its answer was lost); load the session and skip events already stored
   * deep-equal before writing the rest again, e.g. with a new writer at the store's next seq.
   */
  async abandon(): Promise<SessionEvent[]> {
    if (this.closed) throw errors.closed();
    // Nothing new starts once closed is set; an append already running settles what is durable.
    this.closed = true;
    this.clearTimer();
    while (this.running !== undefined) await this.running;
    this.clearTimer();
    this.rejectWaiting(errors.closed());
    const left = this.buffer.splice(0).map(callerCopy);
    this.bufferBytes = 0;
    this.retrySize = undefined;
    return left;
  }

  private assertUsable(): void {
    if (this.closed) throw errors.closed();
    if (this.failure !== undefined) throw this.failure;
  }

  private requestFlush(): void {
    if (this.assigned > this.flushTarget) this.flushTarget = this.assigned;
    void this.pump();
  }

  private schedule(): void {
    if (this.failure !== undefined) return;
    if (
      this.buffer.length >= this.maxBatchEvents ||
      this.bufferBytes >= this.maxBatchBytes ||
      this.maxDelayMs === 0
    ) {
      this.requestFlush();
      return;
    }
    if (this.timer === undefined && this.running === undefined) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.requestFlush();
      }, this.maxDelayMs);
    }
  }

  private clearTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private admit(item: PreparedEvent): void {
    this.buffer.push(item);
    this.bufferBytes += item.bytes;
  }

  /** Moves waiting pushes into the buffer, oldest first, as far as space allows. */
  private releaseSpace(): void {
    // Closed by abandon(): nothing more is accepted.
    while (!this.closed && this.waiting.length > 0 && this.buffer.length < this.maxBufferedEvents) {
      const waiter = this.waiting.shift()!;
      this.admit(waiter.item);
      waiter.resolve(callerCopy(waiter.item));
    }
  }

  /**
   * Rejects every waiting push. Their seqs were the last assigned, so handing them back keeps the
   * log contiguous for the pushes that come after the failure is cleared.
   */
  private rejectWaiting(error: TidemarkError): void {
    const rejected = this.waiting.splice(0);
    if (rejected.length > 0) this.assigned = rejected[0]!.item.event.seq;
    if (this.flushTarget > this.assigned) this.flushTarget = this.assigned;
    for (const waiter of rejected) waiter.reject(error);
  }

  private shouldWrite(): boolean {
    // Closed by abandon(): the append in flight is the last one.
    if (this.closed || this.failure !== undefined || this.buffer.length === 0) return false;
    return (
      this.durable < this.flushTarget ||
      this.buffer.length >= this.maxBatchEvents ||
      this.bufferBytes >= this.maxBatchBytes ||
      this.waiting.length > 0
    );
  }

  /** Runs the single append loop, or joins the one running. */
  private pump(): Promise<void> {
    if (this.running === undefined) {
      this.clearTimer();
      this.running = this.loop().finally(() => {
        this.running = undefined;
        if (this.failure === undefined && this.buffer.length > 0 && !this.closed) this.schedule();
      });
    }
    return this.running;
  }

  private async loop(): Promise<void> {
    while (this.shouldWrite()) {
      const size =
        this.retrySize ??
        nextBatchSize(
          this.buffer.map((item) => item.bytes),
          this.maxBatchEvents,
          this.maxBatchBytes,
        );
      const batch = this.buffer.slice(0, size);
      const events = batch.map((item) => item.event);
      this.appendCount++;
      try {
        await this.store.append(this.id, events);
      } catch (error) {
        this.retrySize = size;
        this.failure = isTidemarkError(error) ? error : toIoError(error, `append to ${this.id}`, this.id);
        this.rejectWaiting(this.failure);
        return;
      }
      this.retrySize = undefined;
      this.buffer.splice(0, size);
      for (const item of batch) this.bufferBytes -= item.bytes;
      this.durable = events[events.length - 1]!.seq + 1;
      this.releaseSpace();
    }
  }
}

/** Creates a {@link SessionWriter}; same as `new SessionWriter(store, id, options)`. */
export function createWriter(store: SessionStore, id: string, options?: SessionWriterOptions): SessionWriter {
  return new SessionWriter(store, id, options);
}
