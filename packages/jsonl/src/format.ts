// The on-disk line format of a JSONL session log. Pure: strings and bytes in, strings and bytes out.
//
//   {"format":"tidemark-session","version":2,"meta":{...},"init":{...},"crc":"1a2b3c4d"}
//   {"seq":0,"type":"user/message","time":"...","data":{...},"end":1,"crc":"0badf00d"}
//   {"seq":1,"type":"turn/end","time":"...","data":null,"start":0,"end":1,"at":"...","crc":"deadbeef"}
//
// Every event line names the last seq of its batch (`end`); the line whose `seq` equals `end`
// closes the batch and records the append time (`at`). A batch is committed only when its closing
// line is present, so a batch cut short by a crash is recognisable. Since version 2 every line but
// a batch's first also names the batch's first seq (`start`): intact lines after a damaged one
// then tell whether they finish a batch that began in the damage (a torn last write) or are a
// batch of their own (the damage hit committed data). One-event batches carry no `start`. `crc` is the CRC-32 of the
// line's UTF-8 bytes before `,"crc":"`, so a flipped byte or a line assembled from two torn ones
// is rejected without a second serialization. `crc` is always the last field and exactly eight
// lowercase hex digits, so its position is fixed: the last 18 bytes of the line.
import * as zlib from 'node:zlib';
import type { JsonValue, SessionEvent, SessionMeta, SummaryPatch } from '@tidemark/core';
import { type LineFraming, readFraming } from './framing.js';

/** The value of the header's `format` field: marks a file as a tidemark session log. */
export const FORMAT_NAME = 'tidemark-session';
/** The log format this code writes and the newest it reads (it reads every version from 1). */
export const FORMAT_VERSION = 2;

/** `,"crc":"` + 8 hex + `"}`: the fixed-size end of every line. */
export const CRC_SUFFIX_BYTES = 18;
const CRC_PREFIX = ',"crc":"';

const CRC_TABLE = buildCrcTable();

function buildCrcTable(): Uint32Array {
  // Slice-by-16 tables for the reflected IEEE polynomial (the one of zlib, PNG and gzip).
  const table = new Uint32Array(256 * 16);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  for (let n = 0; n < 256; n++) {
    let c = table[n]!;
    for (let t = 1; t < 16; t++) {
      c = table[c & 0xff]! ^ (c >>> 8);
      table[t * 256 + n] = c >>> 0;
    }
  }
  return table;
}

/** Bytes `i..i+3` of `bytes` as a little-endian word. */
function word(bytes: Uint8Array, i: number): number {
  return bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24);
}

/**
 * zlib's native CRC-32 where this Node has it (20.15 and later; `undefined` before). Its cost per
 * call (a view and a native call) equals the table's for a line of about 256 bytes; from
 * {@link NATIVE_CRC_MIN_BYTES} on it is 2.4x (1 KiB) to 4.3x (64 KiB) faster here.
 */
const nativeCrc32: ((data: Uint8Array) => number) | undefined = (
  zlib as { crc32?: (data: Uint8Array) => number }
).crc32;
const NATIVE_CRC_MIN_BYTES = 1024;

/**
 * CRC-32 (IEEE, as zlib's `crc32`) of `bytes[start..end)`: zlib's own for long ranges where Node
 * has it, else a slice-by-16 table (every line is checked on every load, and 16 bytes a step took
 * a fifth off slice-by-8's time; most lines are short, where the table is as fast as a native call).
 */
export function crc32(bytes: Uint8Array, start = 0, end = bytes.length): number {
  if (nativeCrc32 !== undefined && end - start >= NATIVE_CRC_MIN_BYTES) {
    return nativeCrc32(bytes.subarray(start, end));
  }
  return crc32Table(bytes, start, end);
}

/** {@link crc32} by the slice-by-16 table alone (also where the native one is missing). */
export function crc32Table(bytes: Uint8Array, start = 0, end = bytes.length): number {
  const t = CRC_TABLE;
  let crc = 0xffffffff;
  let i = start;
  const stop16 = end - ((end - start) & 15);
  for (; i < stop16; i += 16) {
    const a = crc ^ word(bytes, i);
    const b = word(bytes, i + 4);
    const c = word(bytes, i + 8);
    const d = word(bytes, i + 12);
    crc =
      t[3840 + (a & 0xff)]! ^
      t[3584 + ((a >>> 8) & 0xff)]! ^
      t[3328 + ((a >>> 16) & 0xff)]! ^
      t[3072 + (a >>> 24)]! ^
      t[2816 + (b & 0xff)]! ^
      t[2560 + ((b >>> 8) & 0xff)]! ^
      t[2304 + ((b >>> 16) & 0xff)]! ^
      t[2048 + (b >>> 24)]! ^
      t[1792 + (c & 0xff)]! ^
      t[1536 + ((c >>> 8) & 0xff)]! ^
      t[1280 + ((c >>> 16) & 0xff)]! ^
      t[1024 + (c >>> 24)]! ^
      t[768 + (d & 0xff)]! ^
      t[512 + ((d >>> 8) & 0xff)]! ^
      t[256 + ((d >>> 16) & 0xff)]! ^
      t[d >>> 24]!;
  }
  for (; i < end; i++) crc = t[(crc ^ bytes[i]!) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

function hex8(value: number): string {
  return value.toString(16).padStart(8, '0');
}

/**
 * CRC-32 of the UTF-8 encoding of `text`, computed without materializing the bytes: the append
 * path checksums every line, and skipping an allocation per line is measurable next to an fsync.
 * Lone surrogates encode as U+FFFD, as `Buffer.from(text, 'utf8')` does.
 */
export function crc32Utf8(text: string): number {
  const t = CRC_TABLE;
  let crc = 0xffffffff;
  const add = (byte: number) => {
    crc = t[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  };
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i);
    if (c < 0x80) {
      crc = t[(crc ^ c) & 0xff]! ^ (crc >>> 8);
      continue;
    }
    if (c < 0x800) {
      add(0xc0 | (c >> 6));
      add(0x80 | (c & 0x3f));
      continue;
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        const cp = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
        i++;
        add(0xf0 | (cp >> 18));
        add(0x80 | ((cp >> 12) & 0x3f));
        add(0x80 | ((cp >> 6) & 0x3f));
        add(0x80 | (cp & 0x3f));
        continue;
      }
      c = 0xfffd;
    }
    add(0xe0 | (c >> 12));
    add(0x80 | ((c >> 6) & 0x3f));
    add(0x80 | (c & 0x3f));
  }
  return (crc ^ 0xffffffff) >>> 0;
}

/** Appends the checksum field to a line body (an unterminated JSON object) and the newline. */
function seal(body: string): string {
  return `${body}${CRC_PREFIX}${hex8(crc32Utf8(body))}"}\n`;
}

/** What the first line of a log holds. */
export interface LogHeader {
  /** Format version found in the file. */
  version: number;
  /** The session's immutable meta (with `formatVersion` = {@link LogHeader.version}). */
  meta: SessionMeta;
  /** Summary fields given to `create` or `update` before the first batch (title, tags, ...). */
  init: SummaryPatch;
}

/** The header line for a new log, newline included. */
export function encodeHeader(meta: Omit<SessionMeta, 'formatVersion'>, init: SummaryPatch): string {
  const body = JSON.stringify({ format: FORMAT_NAME, version: FORMAT_VERSION, meta, init });
  return seal(body.slice(0, -1));
}

/**
 * The lines of one batch, each newline-terminated. `events` are the serialized events (from
 * `prepareBatch`), in seq order; `at` is the append time recorded on the closing line.
 */
export function encodeBatch(events: readonly { json: string }[], lastSeq: number, at: string): string {
  let out = '';
  const last = events.length - 1;
  const start = `,"start":${lastSeq - last}`;
  for (let i = 0; i <= last; i++) {
    const json = events[i]!.json;
    const bounds = i === 0 ? `,"end":${lastSeq}` : `${start},"end":${lastSeq}`;
    const framing = i === last ? `${bounds},"at":${JSON.stringify(at)}` : bounds;
    out += seal(json.slice(0, -1) + framing);
  }
  return out;
}

/**
 * {@link encodeBatch} as UTF-8 bytes, the form the writer needs: each line body is written into one
 * buffer sized from the events' known UTF-8 lengths and checksummed over those bytes (slice-by-8),
 * instead of a per-character CRC of the text and a second encoding of the whole batch. Same bytes
 * as `Buffer.from(encodeBatch(...))`.
 */
export function encodeBatchBytes(
  events: readonly { json: string; bytes: number }[],
  lastSeq: number,
  at: string,
): Buffer {
  const last = events.length - 1;
  const start = `,"start":${lastSeq - last}`;
  const end = `,"end":${lastSeq}`;
  const closing = `,"at":${JSON.stringify(at)}`;
  // Framing, `at` and the suffix are ASCII (an ISO time), so their lengths are their byte counts.
  let total = 0;
  for (let i = 0; i <= last; i++) {
    total += events[i]!.bytes - 1 + end.length + CRC_SUFFIX_BYTES + 1;
    if (i > 0) total += start.length;
    if (i === last) total += closing.length;
  }
  const out = Buffer.allocUnsafe(total);
  let at0 = 0;
  for (let i = 0; i <= last; i++) {
    const json = events[i]!.json;
    const framing = (i === 0 ? end : start + end) + (i === last ? closing : '');
    const bodyEnd = at0 + out.write(json.slice(0, -1) + framing, at0, 'utf8');
    at0 = writeCrcSuffix(out, bodyEnd, crc32(out, at0, bodyEnd));
  }
  // A length that disagrees (a caller's `bytes` not of its `json`) must never reach the log.
  if (at0 !== total) throw new Error(`encodeBatchBytes: framed ${at0} of ${total} bytes`);
  return out;
}

const CRC_PREFIX_BYTES = Buffer.from(CRC_PREFIX, 'latin1');
const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');

/** Writes `,"crc":"<8 hex>"}` and the newline at `out[pos..]` as bytes; returns the end. */
function writeCrcSuffix(out: Buffer, pos: number, crc: number): number {
  CRC_PREFIX_BYTES.copy(out, pos);
  let at = pos + CRC_PREFIX_BYTES.length;
  for (let shift = 28; shift >= 0; shift -= 4) out[at++] = HEX_DIGITS[(crc >>> shift) & 0xf]!;
  out[at++] = 0x22; // "
  out[at++] = 0x7d; // }
  out[at++] = 0x0a; // newline
  return at;
}

/** One decoded event line. */
export interface DecodedLine {
  event: SessionEvent;
  /** Last seq of the line's batch. */
  end: number;
  /** First seq of the line's batch, on every line but the first (version 2). */
  start?: number;
  /** Append time, present on the closing line of a batch. */
  at?: string;
}

/** Why a line is not a valid line. */
export type LineDefect = 'checksum' | 'json' | 'shape';

/** Either a decoded value or the reason it could not be decoded. */
export type Decoded<T> = { ok: true; value: T } | { ok: false; defect: LineDefect; detail: string };

/** Checks the fixed checksum suffix of `bytes[start..end)` (a line without its newline). */
export function checksumMatches(bytes: Uint8Array, start: number, end: number): boolean {
  if (end - start < CRC_SUFFIX_BYTES + 2) return false;
  const at = end - CRC_SUFFIX_BYTES;
  for (let i = 0; i < CRC_PREFIX.length; i++) if (bytes[at + i] !== CRC_PREFIX.charCodeAt(i)) return false;
  if (bytes[end - 2] !== 0x22 || bytes[end - 1] !== 0x7d) return false; // `"}`
  let stored = 0;
  for (let i = at + CRC_PREFIX.length; i < end - 2; i++) {
    const c = bytes[i]!;
    let digit: number;
    if (c >= 0x30 && c <= 0x39) digit = c - 0x30;
    else if (c >= 0x61 && c <= 0x66) digit = c - 0x61 + 10;
    else return false;
    stored = stored * 16 + digit;
  }
  return stored === crc32(bytes, start, at);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Decodes `bytes[start..end)`; a Buffer decodes in place, without a view object per line. */
function utf8(bytes: Uint8Array, start: number, end: number): string {
  if (Buffer.isBuffer(bytes)) return bytes.toString('utf8', start, end);
  return Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start).toString('utf8');
}

function parseLine(bytes: Uint8Array, start: number, end: number): Decoded<Record<string, unknown>> {
  if (!checksumMatches(bytes, start, end))
    return { ok: false, defect: 'checksum', detail: 'checksum mismatch' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(utf8(bytes, start, end));
  } catch (error) {
    return { ok: false, defect: 'json', detail: error instanceof Error ? error.message : 'unparsable' };
  }
  if (!isPlainObject(parsed)) return { ok: false, defect: 'shape', detail: 'a line must be a JSON object' };
  return { ok: true, value: parsed };
}

function isSeq(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** Decodes an event line `bytes[start..end)` (without its newline), saying why it fails. Never throws. */
export function decodeEventLine(bytes: Uint8Array, start: number, end: number): Decoded<DecodedLine> {
  const line = parseLine(bytes, start, end);
  if (!line.ok) return line;
  const value = eventLineOf(line.value);
  if (typeof value === 'string') return { ok: false, defect: 'shape', detail: value };
  return { ok: true, value };
}

/**
 * The scanner's decoder: the line, or undefined when it is not a valid event line. Same rules as
 * {@link decodeEventLine} without building a reason, since a load checks every line.
 */
export function readEventLine(bytes: Uint8Array, start: number, end: number): DecodedLine | undefined {
  if (!checksumMatches(bytes, start, end)) return undefined;
  const fast = readFramedFast(bytes, start, end - CRC_SUFFIX_BYTES);
  if (fast !== undefined) return fast;
  let parsed: unknown;
  try {
    parsed = JSON.parse(utf8(bytes, start, end));
  } catch {
    return undefined;
  }
  if (!isPlainObject(parsed)) return undefined;
  const value = eventLineOf(parsed);
  return typeof value === 'string' ? undefined : value;
}

/**
 * readEventLine's fast path for the framing this code writes: the fields after `data` (`start`,
 * `end`, `at`) are read from the bytes, backwards from the checksum, and only the event itself
 * is parsed (a load is mostly JSON.parse; the framing was a fifth of each line's parse and its
 * object). Undefined whenever anything differs from that exact framing (whitespace, escapes,
 * other number forms, a framing key inside the event): then the general path decides, so the
 * result is always the one a parse of the whole line gives. `bodyEnd` is where `,"crc":"` starts.
 * Exported for its tests only (not from the package): they check it is taken for the writer's
 * framing, since falling back to the general path is invisible in the result.
 */
export function readFramedFast(bytes: Uint8Array, start: number, bodyEnd: number): DecodedLine | undefined {
  const framing = FAST_FRAMING;
  if (!readFraming(bytes, start, bodyEnd, framing)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(`${utf8(bytes, start, framing.eventEnd)}}`);
  } catch {
    return undefined;
  }
  const event = framedEvent(parsed, framing);
  return event === undefined ? undefined : decodedLine(event, framing.last, framing.at, framing.first);
}

/** readFramedFast's framing, filled anew by every call (which finishes with it before it returns). */
const FAST_FRAMING: LineFraming = { last: 0, first: undefined, at: undefined, eventEnd: 0 };

/**
 * The event parsed apart from its `framing`, by the rules of a whole line; undefined when it breaks
 * one, or when the event holds a framing key of its own (which would win or lose against ours
 * differently in a parse of the whole line: such lines go the general way).
 */
export function framedEvent(parsed: unknown, framing: LineFraming): SessionEvent | undefined {
  if (
    !isPlainObject(parsed) ||
    Object.hasOwn(parsed, 'end') ||
    Object.hasOwn(parsed, 'start') ||
    Object.hasOwn(parsed, 'at')
  )
    return undefined;
  const { seq, type, time, data } = parsed;
  const wrong = lineRuleBroken(
    seq,
    type,
    time,
    Object.hasOwn(parsed, 'data'),
    framing.last,
    framing.at,
    framing.first,
  );
  return wrong === undefined
    ? { seq: seq as number, type: type as string, time: time as string, data: data as JsonValue }
    : undefined;
}

/** The event line in a parsed object, or what is wrong with it. */
function eventLineOf(line: Record<string, unknown>): DecodedLine | string {
  const { seq, type, time, data, end, at, start } = line;
  const wrong = lineRuleBroken(seq, type, time, Object.hasOwn(line, 'data'), end, at, start);
  if (wrong !== undefined) return wrong;
  const event = { seq: seq as number, type: type as string, time: time as string, data: data as JsonValue };
  return decodedLine(event, end as number, at, start);
}

/** The decoded line of a valid `event` and its framing. */
function decodedLine(event: SessionEvent, last: number, at: unknown, start: unknown): DecodedLine {
  const value: DecodedLine = { event, end: last };
  if (typeof at === 'string') value.at = at;
  if (start !== undefined) value.start = start as number;
  return value;
}

/** Which rule of an event line its fields break (`hasData`: the line has its own `data`), if any. */
function lineRuleBroken(
  seq: unknown,
  type: unknown,
  time: unknown,
  hasData: boolean,
  last: unknown,
  at: unknown,
  start: unknown,
): string | undefined {
  if (!isSeq(seq) || !isSeq(last) || last < seq) return 'bad seq or end';
  if (start !== undefined && (!isSeq(start) || start >= seq)) return 'bad start';
  if (typeof type !== 'string' || type.length === 0 || typeof time !== 'string' || !hasData) {
    return 'an event needs type, time and data';
  }
  if (seq === last && typeof at !== 'string') return 'the closing line of a batch needs `at`';
  if (typeof at === 'string' && !Number.isFinite(Date.parse(at))) return '`at` is not a time';
  return undefined;
}

/** Result of decoding a header line. */
export type DecodedHeader =
  | { ok: true; value: LogHeader }
  | { ok: false; defect: LineDefect | 'not-a-log'; detail: string }
  | { ok: false; defect: 'newer-version'; version: number; detail: string };

/**
 * Decodes a header line. A header from a newer version is recognised before its checksum is
 * checked, since a newer version may frame lines differently.
 */
export function decodeHeaderLine(bytes: Uint8Array, start: number, end: number): DecodedHeader {
  const line = parseLine(bytes, start, end);
  // Parsed whole already when its checksum matches (the same bytes a probe would parse).
  const newer = newerVersion(line.ok ? line.value : probeHeader(bytes, start, end));
  if (newer !== undefined) return newer;
  if (!line.ok) return line;
  const { format, version, meta, init } = line.value;
  if (format !== FORMAT_NAME || !isSeq(version) || version < 1 || version > FORMAT_VERSION) {
    return { ok: false, defect: 'not-a-log', detail: 'the first line is not a tidemark session header' };
  }
  const parsedMeta = parseMeta(meta, version);
  if (parsedMeta === undefined) return { ok: false, defect: 'shape', detail: 'the header meta is malformed' };
  return { ok: true, value: { version, meta: parsedMeta, init: parseInit(init) } };
}

/** The header line parsed without its checksum checked, or undefined when it is no JSON. */
function probeHeader(bytes: Uint8Array, start: number, end: number): unknown {
  try {
    return JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start).toString('utf8'));
  } catch {
    return undefined;
  }
}

/** The answer for a header of a version newer than this code's, undefined for any other value. */
function newerVersion(probe: unknown): DecodedHeader | undefined {
  if (!isPlainObject(probe) || probe.format !== FORMAT_NAME || typeof probe.version !== 'number')
    return undefined;
  if (probe.version <= FORMAT_VERSION) return undefined;
  return {
    ok: false,
    defect: 'newer-version',
    version: probe.version,
    detail: `format version ${probe.version}`,
  };
}

function parseMeta(value: unknown, version: number): SessionMeta | undefined {
  if (!isPlainObject(value)) return undefined;
  const { id, createdAt, cwd, parent } = value;
  // createdAt must be a time: appends compute the next `at` from it.
  if (typeof id !== 'string' || typeof createdAt !== 'string' || !Number.isFinite(Date.parse(createdAt)))
    return undefined;
  const meta: SessionMeta = { id, createdAt, formatVersion: version };
  if (cwd !== undefined) {
    if (typeof cwd !== 'string') return undefined;
    meta.cwd = cwd;
  }
  if (parent !== undefined) {
    if (!isPlainObject(parent) || typeof parent.id !== 'string' || typeof parent.seq !== 'number')
      return undefined;
    meta.parent = { id: parent.id, seq: parent.seq };
  }
  return meta;
}

/** Keeps only well-typed summary fields of a stored patch (a hostile file cannot inject others). */
export function parseInit(value: unknown): SummaryPatch {
  const out: SummaryPatch = {};
  if (!isPlainObject(value)) return out;
  if (typeof value.title === 'string') out.title = value.title;
  if (typeof value.firstPrompt === 'string') out.firstPrompt = value.firstPrompt;
  if (Array.isArray(value.tags) && value.tags.every((t) => typeof t === 'string'))
    out.tags = value.tags as string[];
  if (isPlainObject(value.attrs)) out.attrs = value.attrs as { [key: string]: JsonValue };
  return out;
}
