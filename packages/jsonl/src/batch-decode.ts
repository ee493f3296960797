// A batch's events parsed together: the lines of a batch are framed one by one from their bytes
// (checksum, seq, `start`/`end`/`at`), and once the closing line is in, their events are copied
// side by side into one JSON array and parsed in a single JSON.parse. One parse per batch instead
// of one per line, and one string instead of two per line: that was a third of a load's CPU. Pure.
//
// The answer is the per-line one (readEventLine) or nothing: every element must decode under the
// same rules (framedEvent) and name the seq its line opens with; otherwise the caller decodes
// the lines one by one. An array of events each written by a JSON serializer parses to exactly
// those events, since each is a complete value on its own. Lines forged to be incomplete alone
// and complete together (with checksums computed for them) could read differently; a checksum is
// no defence against forgery anyway, and damage cannot forge one.
import type { SessionEvent } from '@tidemark/core';
import { CRC_SUFFIX_BYTES, checksumMatches, framedEvent } from './format.js';
import { type LineFraming, readFraming, seqPrefix } from './framing.js';

/** An event line framed from its bytes, its event not parsed yet. */
export interface FramedLine extends LineFraming {
  bytes: Uint8Array;
  /** The line is `bytes[start..end)`, without its newline. */
  start: number;
  end: number;
  /** Offset of the line in the log. */
  offset: number;
  /** The seq the line opens with (checked against its parsed event). */
  seq: number;
}

/**
 * `bytes[start..end)` framed, when its checksum holds and it is laid out as the writer lays out
 * lines; undefined otherwise (then readEventLine decides what the line is).
 */
export function frameLine(
  bytes: Uint8Array,
  start: number,
  end: number,
  offset: number,
): FramedLine | undefined {
  if (!checksumMatches(bytes, start, end)) return undefined;
  const seq = seqPrefix(bytes, start, end);
  if (seq === undefined) return undefined;
  const line: FramedLine = {
    bytes,
    start,
    end,
    offset,
    seq,
    last: 0,
    first: undefined,
    at: undefined,
    eventEnd: 0,
  };
  return readFraming(bytes, start, end - CRC_SUFFIX_BYTES, line) ? line : undefined;
}

/** Scratch space reused by every decode up to this size; larger batches get their own. */
const SHARED_SCRATCH_BYTES = 1024 * 1024;
let shared = Buffer.allocUnsafe(64 * 1024);

/**
 * The events of `lines` (one batch, in order), parsed in one JSON.parse; undefined unless every
 * line decodes to the event readEventLine gives it (see the file's comment).
 */
export function decodeFramedLines(lines: readonly FramedLine[]): SessionEvent[] | undefined {
  let size = 1;
  for (const line of lines) size += line.eventEnd - line.start + 2;
  let scratch = shared;
  if (size > scratch.length) {
    scratch = Buffer.allocUnsafe(size);
    if (size <= SHARED_SCRATCH_BYTES) shared = scratch;
  }
  let p = 0;
  scratch[p++] = 0x5b; // [
  for (const line of lines) {
    const { bytes, start } = line;
    const length = line.eventEnd - start;
    scratch.set(bytes.subarray(start, start + length), p);
    p += length;
    scratch[p++] = 0x7d; // } (the event's own, cut off with its framing)
    scratch[p++] = 0x2c; // ,
  }
  scratch[p - 1] = 0x5d; // ] in place of the last comma
  let parsed: unknown;
  try {
    parsed = JSON.parse(scratch.toString('utf8', 0, p));
  } catch {
    return undefined; // also a batch too large for one string: decoded line by line then
  }
  if (!Array.isArray(parsed) || parsed.length !== lines.length) return undefined;
  const events: SessionEvent[] = new Array(lines.length);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const event = framedEvent(parsed[i], line);
    if (event === undefined || event.seq !== line.seq) return undefined;
    events[i] = event;
  }
  return events;
}
