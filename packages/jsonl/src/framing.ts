// The framing fields an event line carries after its event (`start`, `end`, `at`), read from the
// line's bytes exactly as the writer lays them out, so that a load parses only the events. Pure.
// Anything laid out otherwise is refused here and left to a parse of the whole line (format.ts).

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const AT_LABEL = Buffer.from(',"at":', 'latin1');
const END_LABEL = Buffer.from(',"end":', 'latin1');
const START_LABEL = Buffer.from(',"start":', 'latin1');

/** The framing fields after an event as the writer lays them out, read from the line's bytes. */
export interface LineFraming {
  /** `end`: the last seq of the line's batch. */
  last: number;
  /** `start`, when the line has one. */
  first: number | undefined;
  /** `at`, when the line has one. */
  at: string | undefined;
  /** Where the framing begins: `bytes[lineStart..eventEnd)` and a `}` are the event's JSON. */
  eventEnd: number;
}

/**
 * Reads `start`, `end` and `at` backwards from `bodyEnd` (where `,"crc":"` starts), as the writer
 * frames them, into `into` (filled in place: a load frames every line, and one object fewer per
 * line is time); false for any other layout (whitespace, escapes, other number forms).
 */
export function readFraming(bytes: Uint8Array, start: number, bodyEnd: number, into: LineFraming): boolean {
  let pos = bodyEnd;
  let at: string | undefined;
  if (bytes[pos - 1] === QUOTE) {
    let q = pos - 2;
    while (q > start && bytes[q] !== QUOTE) {
      const c = bytes[q]!;
      if (c < 0x20 || c > 0x7e || c === BACKSLASH) return false;
      q--;
    }
    if (!labelBefore(bytes, start, q, AT_LABEL)) return false;
    at = Buffer.from(bytes.buffer, bytes.byteOffset + q + 1, pos - q - 2).toString('latin1');
    pos = q - AT_LABEL.length;
  }
  const last = digitsBefore(bytes, start, pos);
  if (last < 0) return false;
  pos -= digitCount(last);
  if (!labelBefore(bytes, start, pos, END_LABEL)) return false;
  pos -= END_LABEL.length;
  into.last = last;
  into.at = at;
  into.first = undefined;
  into.eventEnd = pos;
  const maybeStart = digitsBefore(bytes, start, pos);
  if (maybeStart >= 0) {
    const startAt = pos - digitCount(maybeStart);
    if (labelBefore(bytes, start, startAt, START_LABEL)) {
      into.first = maybeStart;
      into.eventEnd = startAt - START_LABEL.length;
    }
  }
  return true;
}

/** True when `bytes[from - label.length..from)` is `label` (and inside the line). */
function labelBefore(bytes: Uint8Array, lineStart: number, from: number, label: Uint8Array): boolean {
  const at = from - label.length;
  if (at <= lineStart) return false;
  for (let i = 0; i < label.length; i++) if (bytes[at + i] !== label[i]) return false;
  return true;
}

/**
 * The decimal integer ending at `end` as JSON writes it (no leading zero, at most 15 digits), or
 * -1. Its length is {@link digitCount} of it, since such a number has no leading zero.
 */
function digitsBefore(bytes: Uint8Array, lineStart: number, end: number): number {
  let i = end;
  let value = 0;
  let scale = 1;
  while (i > lineStart && end - i < 16) {
    const c = bytes[i - 1]!;
    if (c < 0x30 || c > 0x39) break;
    value += (c - 0x30) * scale;
    scale *= 10;
    i--;
  }
  const length = end - i;
  if (length === 0 || length > 15 || (length > 1 && bytes[i] === 0x30)) return -1;
  return value;
}

/** Decimal digits of a non-negative integer. */
function digitCount(value: number): number {
  let count = 1;
  for (let rest = value; rest >= 10; rest = Math.floor(rest / 10)) count++;
  return count;
}

const SEQ_LABEL = Buffer.from('{"seq":', 'latin1');

/**
 * The seq a line opens with, as the writer spells it (`{"seq":N,`), or undefined. Only a guide: a
 * line may name its seq twice, and the parsed event's seq is the one that counts.
 */
export function seqPrefix(bytes: Uint8Array, start: number, end: number): number | undefined {
  const digitsAt = start + SEQ_LABEL.length;
  for (let i = 0; i < SEQ_LABEL.length; i++) if (bytes[start + i] !== SEQ_LABEL[i]) return undefined;
  let i = digitsAt;
  let value = 0;
  while (i < end && i - digitsAt < 16) {
    const c = bytes[i]!;
    if (c < 0x30 || c > 0x39) break;
    value = value * 10 + (c - 0x30);
    i++;
  }
  const length = i - digitsAt;
  if (length === 0 || length > 15 || (length > 1 && bytes[digitsAt] === 0x30) || bytes[i] !== 0x2c)
    return undefined;
  return value;
}
