// `append(…, { after })`, checked by the session's writer under its lock, on the very log the batch
// goes to (core's `storageChecksAfter`): nobody else can write the log between the check and the
// write, so the check holds across store instances and processes. Pure: what a writer knows of its
// log's last event without reading it, and how `after` is judged against that; the reads made when
// it knows nothing are append.ts's (read-last.ts reads the line).
import { assertStoredAfter, type PreparedEvent, type SessionEvent } from '@tidemark/core';
import { readEventLine } from './format.js';

/**
 * The last event of a writer's log, known without reading the log: the JSON of the event this
 * writer wrote last (`PreparedEvent.json`, the bytes its line holds before the framing), or the
 * event a read of the log decoded (the scan that opened the writer, or an earlier check). `size` is
 * the log's length it was the last event at: anything that moves the writer's length without
 * saying what then ends the log (a tail cut, a rewrite) leaves it stale, and {@link knownLast}
 * then says "unknown" by itself, never an old answer.
 */
export type LastEvent =
  | { readonly size: number; readonly json: string; readonly event?: undefined }
  | { readonly size: number; readonly json?: undefined; readonly event: SessionEvent };

/**
 * Largest event a writer keeps as its last (its serialized bytes): every open writer holds one
 * (up to `maxOpenWriters`, 64 by default), and an event may be 16 MiB, so a larger one is not kept
 * and a check after it reads the log's last line instead. 64 KiB bounds them all to 4 MiB.
 */
export const LAST_KEPT_MAX_BYTES = 64 * 1024;

/** The last event of a log `size` bytes long that ends with `batch`, just written (unknown when too large to keep). */
export function lastWritten(size: number, batch: readonly PreparedEvent[]): LastEvent | undefined {
  // The serialization only, a string the PreparedEvent already holds (no copy); the batch's events
  // are not kept alive past the append.
  const last = batch[batch.length - 1]!;
  return last.bytes <= LAST_KEPT_MAX_BYTES ? { size, json: last.json } : undefined;
}

/**
 * The last event of a log `size` bytes long as a read decoded it from `bytes` bytes of log (its
 * line, or a batch holding it: a bound on its size); unknown when too large to keep.
 */
export function lastDecoded(size: number, event: SessionEvent, bytes: number): LastEvent | undefined {
  return bytes <= LAST_KEPT_MAX_BYTES ? { size, event } : undefined;
}

/** What `last` says about a log of `size` bytes: itself when it was taken at that length, else unknown. */
export function knownLast(last: LastEvent | undefined, size: number): LastEvent | undefined {
  return last !== undefined && last.size === size ? last : undefined;
}

/**
 * Where `after` is in a log whose next seq is `nextSeq`: past its end (no such event: CONFLICT
 * without a read), its last event (the common case: a batch planned on the end of the log), or an
 * earlier one (only a retry of stored events asks for one; it is read with them).
 */
export function placeOfAfter(after: PreparedEvent, nextSeq: number): 'past-end' | 'last' | 'inside' {
  const seq = after.event.seq;
  return seq >= nextSeq ? 'past-end' : seq === nextSeq - 1 ? 'last' : 'inside';
}

/**
 * CONFLICT unless `after` is the stored event `last`. Equal JSON is an exact equivalent of the
 * contract's comparison (same seq, type, time and deep-equal data): what the log holds decodes
 * from that JSON, and `after.json` is `JSON.stringify` of `after.event`, which parses back to a
 * deep-equal value. So equal strings settle it without a parse; unequal ones may still be the same
 * event (its data's keys in another order), so they are decoded and compared by the contract's rule.
 */
export function assertAfterIsLast(id: string, last: LastEvent, after: PreparedEvent): void {
  if (last.json !== undefined) {
    if (last.json === after.json) return;
    assertStoredAfter(id, JSON.parse(last.json) as SessionEvent, after);
  } else assertStoredAfter(id, last.event, after);
}

const NEWLINE = 0x0a;

/**
 * The event on the last line of `bytes`, which end where the log ends (its committed length), with
 * the line's length: the line must be whole in them and be the valid closing line (checksum,
 * shape, `end` = its seq) of the batch that ends at `seq`. 'more' when the line may start before
 * `bytes` (unless they start at the file's start); undefined when it is anything else, a header
 * included (then the caller asks the whole-log reader, which judges any log).
 */
export function closingEventOfLastLine(
  bytes: Buffer,
  fromFileStart: boolean,
  seq: number,
): { event: SessionEvent; lineBytes: number } | 'more' | undefined {
  if (bytes.length < 2 || bytes[bytes.length - 1] !== NEWLINE) return undefined;
  const previous = bytes.lastIndexOf(NEWLINE, bytes.length - 2);
  if (previous < 0 && !fromFileStart) return 'more';
  const line = readEventLine(bytes, previous + 1, bytes.length - 1);
  if (line === undefined || line.event.seq !== seq || line.end !== seq) return undefined;
  return { event: line.event, lineBytes: bytes.length - previous - 1 };
}
