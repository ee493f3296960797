// The sealed format, version 1 (`ts1`), as pure functions over events and summary fields (the
// text of sealed values is parsed in envelope.ts; batches sealed as one, `ts2`, are in batch.ts).
//
// A sealed value is the text `ts1.<keyId>.<iv>.<ct>`: iv is 12 bytes, ct the AES-256-GCM
// ciphertext followed by its 16-byte tag, both base64url without padding. An event keeps seq, type
// and time in clear and its data becomes `{ "tidemark:sealed": "<sealed value>" }`; the plaintext
// is the UTF-8 of JSON.stringify(data). The associated data binds a record to its place:
//   event:   ts1 \0 event \0 <sessionId> \0 <seq> \0 <type> \0 <time> \0 <keyId>
//   summary: ts1 \0 <field> \0 <sessionId> \0 <keyId>            (field: title, firstPrompt, attrs)
// Only `type` can hold a NUL, and every other part cannot, so the framing is unambiguous.
// The IV is synthetic: the first 12 bytes of HMAC-SHA256(ivKey, u32be(len aad) || aad || plaintext),
// so sealing the same event twice gives the same bytes (an in-doubt append retried with the same
// events is still an idempotent retry for the backend), and different plaintexts or places never
// share an IV.
import crypto, { createCipheriv, createDecipheriv, createHash } from 'node:crypto';
import {
  dataJsonOf,
  type JsonValue,
  MAX_TEXT_LENGTH,
  type PreparedEvent,
  type SessionEvent,
  type SessionSummary,
  type SummaryPatch,
  TidemarkError,
} from '@tidemark/core';
import { type SealedFailure, type SealedPlace, sealedCorrupt } from './errors.js';

export {
  BATCH_SEALED_VERSION,
  type Parsed,
  type ParsedEvent,
  type ParsedHead,
  type ParsedMember,
  SEALED_VERSION,
} from './envelope.js';

import {
  IV_BYTES,
  type Parsed,
  type ParsedEvent,
  type ParsedHead,
  parseSealed,
  SEALED_VERSION,
  TAG_BYTES,
} from './envelope.js';
import { type DerivedKeys, derivedKeys, HMAC_BLOCK_BYTES, type Keyring } from './keyring.js';

/** The one key of a sealed event's `data` (and of sealed `attrs`). */
export const SEALED_KEY = 'tidemark:sealed';
/** The attrs entry where redaction counts are kept (inside the sealed attrs). */
export const REDACTIONS_ATTR = 'tidemark:redactions';

/** Summary fields that are sealed. */
export type SealedField = 'title' | 'firstPrompt' | 'attrs';

/**
 * SHA-256 of `data`, as a `binary` (latin1) string, one character per byte: Node's one-shot
 * `crypto.hash` where it has it (20.12 and later), else a Hash object. The one-shot call makes no
 * object to set up, track and collect, which was a good part of what sealing an event cost.
 */
const sha256: (data: Uint8Array) => string =
  typeof crypto.hash === 'function'
    ? (data) => crypto.hash('sha256', data, 'binary')
    : (data) => createHash('sha256').update(data).digest('binary');

/** Where HMAC's inner input puts the AAD: after the key's inner pad and the AAD's length. */
const AAD_AT = HMAC_BLOCK_BYTES + 4;
/** The largest seal done in {@link scratch}; larger ones get a buffer of their own. */
const SCRATCH_BYTES = 16 * 1024;
/**
 * HMAC's inner input, `ipad || u32be(len aad) || aad || plaintext`, laid out once per seal so that
 * the AAD and plaintext are encoded once and handed to the hash and the cipher as views. Reused:
 * sealing is synchronous, so no two seals share it. Zeroed after each seal: it lives as long as the
 * process, and would otherwise keep the last plaintext (and the key's inner pad) readable in it.
 */
const scratch = Buffer.allocUnsafe(SCRATCH_BYTES);
/** The synthetic IV of the seal in progress (createCipheriv copies it). */
const ivBytes = Buffer.alloc(IV_BYTES);
/** Characters of the IV in base64url. */
const IV_TEXT = 16;

/**
 * Seals `plaintext` (text, sealed as its UTF-8) with `aad` (text, bound as its UTF-8) into
 * `<iv>.<ciphertext and tag>`, both base64url. The IV is
 * HMAC-SHA256(ivKey, u32be(len aad) || aad || plaintext) cut to 12 bytes, computed as RFC 2104
 * defines it: H(opad || H(ipad || message)), from the pads derived with the key.
 */
export function sealBody(keys: DerivedKeys, aad: string, plaintext: string): string {
  // 3 bytes of UTF-8 at most per UTF-16 unit: `write` never runs out of room (it would cut).
  const room = AAD_AT + 3 * (aad.length + plaintext.length);
  const input = room <= SCRATCH_BYTES ? scratch : Buffer.allocUnsafe(room);
  keys.ipad.copy(input, 0);
  const aadEnd = AAD_AT + input.write(aad, AAD_AT, 'utf8');
  input.writeUInt32BE(aadEnd - AAD_AT, HMAC_BLOCK_BYTES);
  const end = aadEnd + input.write(plaintext, aadEnd, 'utf8');
  keys.outer.write(sha256(input.subarray(0, end)), HMAC_BLOCK_BYTES, 'latin1');
  ivBytes.write(sha256(keys.outer), 0, IV_BYTES, 'latin1');
  const cipher = createCipheriv('aes-256-gcm', keys.enc, ivBytes);
  cipher.setAAD(input.subarray(AAD_AT, aadEnd));
  const ct = cipher.update(input.subarray(aadEnd, end));
  cipher.final();
  const tag = cipher.getAuthTag();
  // iv || ct || tag, base64url-encoded in one pass, over the input (no longer needed, and larger:
  // ct is as long as the plaintext, which followed 68 bytes): 12 bytes are exactly 16 characters,
  // so the IV's text ends where the ciphertext's starts.
  ivBytes.copy(input, 0);
  ct.copy(input, IV_BYTES);
  tag.copy(input, IV_BYTES + ct.length);
  const text = input.toString('base64url', 0, IV_BYTES + ct.length + TAG_BYTES);
  if (input === scratch) scratch.fill(0, 0, end);
  return `${text.slice(0, IV_TEXT)}.${text.slice(IV_TEXT)}`;
}

/** A `ts1` sealed value: {@link sealBody} under the key `keyId`. */
function sealBytes(keyId: string, keys: DerivedKeys, aad: string, plaintext: string): string {
  return `${SEALED_VERSION}.${keyId}.${sealBody(keys, aad, plaintext)}`;
}

type Opened = { ok: true; plaintext: Buffer } | { ok: false; failure: SealedFailure; detail: string };

export function openBytes(keyring: Keyring, parsed: Parsed | ParsedHead, aad: string): Opened {
  const keys = derivedKeys(keyring, parsed.keyId);
  if (keys === undefined) {
    return {
      ok: false,
      failure: 'unknown-key',
      detail: `sealed under key id ${JSON.stringify(parsed.keyId)}, which the keyring lacks (it has ${keyring.ids().join(', ')})`,
    };
  }
  const decipher = createDecipheriv('aes-256-gcm', keys.enc, parsed.iv);
  decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(parsed.ct.subarray(parsed.ct.length - TAG_BYTES));
  try {
    const head = decipher.update(parsed.ct.subarray(0, parsed.ct.length - TAG_BYTES));
    const tail = decipher.final();
    return { ok: true, plaintext: tail.length === 0 ? head : Buffer.concat([head, tail]) };
  } catch {
    return {
      ok: false,
      failure: 'tampered',
      detail:
        'sealed record fails authentication (changed, or moved from another session, seq, type, time or key)',
    };
  }
}

function eventAad(sessionId: string, event: SessionEvent, keyId: string): string {
  return `${SEALED_VERSION}\0event\0${sessionId}\0${event.seq}\0${event.type}\0${event.time}\0${keyId}`;
}

function fieldAad(sessionId: string, field: SealedField, keyId: string): string {
  return `${SEALED_VERSION}\0${field}\0${sessionId}\0${keyId}`;
}

export function currentKeys(keyring: Keyring): DerivedKeys {
  const keys = derivedKeys(keyring, keyring.currentId);
  if (keys === undefined) throw new TidemarkError('INVALID', 'keyring: the current key is missing');
  return keys;
}

/** The sealed value inside `data` (`{ "tidemark:sealed": value }` and nothing else), if that is its shape. */
export function sealedValueOf(data: JsonValue): JsonValue | undefined {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return undefined;
  let value: JsonValue | undefined;
  let count = 0;
  for (const key in data) {
    count++;
    if (key === SEALED_KEY) value = data[key];
  }
  return count === 1 ? value : undefined;
}

/**
 * True when `data` has the shape of sealed event data (a record of either form, `ts1` or `ts2`)
 * or of sealed attrs, with a well-formed sealed value.
 */
export function isSealedData(data: JsonValue): boolean {
  const value = sealedValueOf(data);
  return typeof value === 'string' && typeof parseSealed(value, true) !== 'string';
}

/** True when `text` is a well-formed sealed value (a sealed title or firstPrompt). */
export function isSealedText(text: string): boolean {
  return typeof text === 'string' && typeof parseSealed(text) !== 'string';
}

/** The key id a sealed value (event data, sealed attrs, or sealed text) was sealed under; undefined when not sealed. */
export function sealedKeyId(value: JsonValue | string): string | undefined {
  const text = typeof value === 'string' ? value : sealedValueOf(value);
  if (typeof text !== 'string') return undefined;
  const parsed = parseSealed(text, typeof value !== 'string');
  return typeof parsed === 'string' ? undefined : parsed.keyId;
}

/** Seals one event's `data` under the keyring's current key. The event must be valid JSON. */
export function sealEvent(keyring: Keyring, sessionId: string, event: SessionEvent): SessionEvent {
  return sealDataJson(keyring, sessionId, event, JSON.stringify(event.data));
}

/**
 * {@link sealEvent} of `event`: the event core prepared, or what redaction made of it. The prepared
 * event's data is sealed from the JSON `prepareEvent` already made (`dataJsonOf`), not serialized
 * again. The same bytes as sealEvent.
 */
export function sealPrepared(
  keyring: Keyring,
  sessionId: string,
  prepared: PreparedEvent,
  event: SessionEvent = prepared.event,
): SessionEvent {
  return sealDataJson(keyring, sessionId, event, preparedJson(prepared, event));
}

/** The data JSON of `event`: as core prepared it when `event` is the prepared one, else serialized. */
export function preparedJson(prepared: PreparedEvent, event: SessionEvent): string {
  return event === prepared.event ? dataJsonOf(prepared) : JSON.stringify(event.data);
}

export function sealDataJson(
  keyring: Keyring,
  sessionId: string,
  event: SessionEvent,
  json: string,
): SessionEvent {
  const keyId = keyring.currentId;
  const sealed = sealBytes(keyId, currentKeys(keyring), eventAad(sessionId, event, keyId), json);
  return { seq: event.seq, type: event.type, time: event.time, data: { [SEALED_KEY]: sealed } };
}

/** Parses a stored sealed value, or throws CORRUPT (plaintext / malformed) naming the place. */
function parseStored(
  value: JsonValue | undefined,
  sessionId: string,
  place: SealedPlace,
  what: string,
): Parsed {
  return parseStoredAny(value, sessionId, place, what, false) as Parsed;
}

function parseStoredAny(
  value: JsonValue | undefined,
  sessionId: string,
  place: SealedPlace,
  what: string,
  batch: boolean,
): ParsedEvent {
  if (value === undefined) {
    throw sealedCorrupt('plaintext', sessionId, place, `${what} is not sealed (plaintext in a sealed store)`);
  }
  if (typeof value !== 'string') {
    throw sealedCorrupt(
      'malformed',
      sessionId,
      place,
      `${what} has a malformed sealed envelope: not a string`,
    );
  }
  const parsed = parseSealed(value, batch);
  if (typeof parsed === 'string') {
    throw sealedCorrupt('malformed', sessionId, place, `${what} has a malformed sealed envelope: ${parsed}`);
  }
  return parsed;
}

/** The sealed value of a stored event's data, of either form, or CORRUPT naming its seq. */
export function parseStoredEvent(sessionId: string, event: SessionEvent): ParsedEvent {
  const place = { seq: event.seq };
  return parseStoredAny(
    storedValue(event.data, sessionId, place, 'event data'),
    sessionId,
    place,
    'event data',
    true,
  );
}

function parseStoredData(data: JsonValue, sessionId: string, place: SealedPlace, what: string): Parsed {
  return parseStored(storedValue(data, sessionId, place, what), sessionId, place, what);
}

/** The value under the sealed key of stored data; CORRUPT when the key is there with others. */
function storedValue(
  data: JsonValue,
  sessionId: string,
  place: SealedPlace,
  what: string,
): JsonValue | undefined {
  const value = sealedValueOf(data);
  if (
    value === undefined &&
    typeof data === 'object' &&
    data !== null &&
    !Array.isArray(data) &&
    SEALED_KEY in data
  ) {
    throw sealedCorrupt('malformed', sessionId, place, `${what} has a malformed sealed envelope: extra keys`);
  }
  return value;
}

export function openJson(
  keyring: Keyring,
  parsed: Parsed | ParsedHead,
  aad: string,
  sessionId: string,
  place: SealedPlace,
  what: string,
): JsonValue {
  const opened = openBytes(keyring, parsed, aad);
  if (!opened.ok) throw sealedCorrupt(opened.failure, sessionId, place, `${what}: ${opened.detail}`);
  try {
    return JSON.parse(opened.plaintext.toString('utf8')) as JsonValue;
  } catch {
    throw sealedCorrupt('malformed', sessionId, place, `${what}: the opened plaintext is not JSON`);
  }
}

/**
 * Opens one event sealed on its own (`ts1`), parsed by {@link parseStoredEvent}.
 * @throws TidemarkError CORRUPT with `sessionId` and `location.seq`: tampered, unknown key id or
 *   malformed (see {@link SealedFailure}).
 */
export function openRecord(
  keyring: Keyring,
  sessionId: string,
  event: SessionEvent,
  parsed: Parsed,
): SessionEvent {
  const place = { seq: event.seq };
  const data = openJson(
    keyring,
    parsed,
    eventAad(sessionId, event, parsed.keyId),
    sessionId,
    place,
    'event data',
  );
  return { seq: event.seq, type: event.type, time: event.time, data };
}

/**
 * Checks that an event has the sealed shape, without keys (a store opened without keys shows
 * sealed data as it is, but still refuses plaintext).
 * @throws TidemarkError CORRUPT (plaintext / malformed) with `sessionId` and `location.seq`.
 */
export function checkSealedEvent(sessionId: string, event: SessionEvent): SessionEvent {
  parseStoredEvent(sessionId, event);
  return event;
}

/** Seals a text field (`title`, `firstPrompt`); INVALID naming the field when the sealed text exceeds the backend's limit. */
export function sealText(
  keyring: Keyring,
  sessionId: string,
  field: 'title' | 'firstPrompt',
  text: string,
  what = 'update',
): string {
  const keyId = keyring.currentId;
  const sealed = sealBytes(
    keyId,
    currentKeys(keyring),
    fieldAad(sessionId, field, keyId),
    JSON.stringify(text),
  );
  if (sealed.length > MAX_TEXT_LENGTH) {
    throw new TidemarkError(
      'INVALID',
      `${what}: ${field} is too long to seal: ${text.length} characters are ${sealed.length} sealed, over the limit of ${MAX_TEXT_LENGTH} (about ${maxSealableTextBytes()} bytes of UTF-8 fit)`,
      { sessionId },
    );
  }
  return sealed;
}

/** Roughly the most UTF-8 bytes of a title or firstPrompt that still fit sealed (with a 64-character key id). */
export function maxSealableTextBytes(): number {
  const overhead = SEALED_VERSION.length + 3 + 64 + 16; // dots, key id, iv
  return Math.floor(((MAX_TEXT_LENGTH - overhead) * 3) / 4) - TAG_BYTES - 2; // 2: JSON quotes
}

/** Seals a whole attrs object as `{ "tidemark:sealed": "<sealed value>" }`. */
export function sealAttrs(
  keyring: Keyring,
  sessionId: string,
  attrs: { [key: string]: JsonValue },
): { [key: string]: JsonValue } {
  const keyId = keyring.currentId;
  const plaintext = JSON.stringify(attrs);
  return {
    [SEALED_KEY]: sealBytes(keyId, currentKeys(keyring), fieldAad(sessionId, 'attrs', keyId), plaintext),
  };
}

/**
 * Seals the content-bearing fields of a summary patch (`title`, `firstPrompt`, `attrs`); `tags`
 * stay in clear. Fields that are undefined stay undefined.
 */
export function sealSummaryFields(
  keyring: Keyring,
  sessionId: string,
  patch: SummaryPatch,
  what = 'update',
): SummaryPatch {
  const out: SummaryPatch = {};
  if (patch.title !== undefined) out.title = sealText(keyring, sessionId, 'title', patch.title, what);
  if (patch.firstPrompt !== undefined)
    out.firstPrompt = sealText(keyring, sessionId, 'firstPrompt', patch.firstPrompt, what);
  if (patch.tags !== undefined) out.tags = [...patch.tags];
  if (patch.attrs !== undefined) out.attrs = sealAttrs(keyring, sessionId, patch.attrs);
  return out;
}

function openTextField(
  keyring: Keyring | undefined,
  sessionId: string,
  field: 'title' | 'firstPrompt',
  value: string,
): string {
  const place = { field };
  const parsed = parseStored(value, sessionId, place, field);
  if (keyring === undefined) return value;
  const text = openJson(keyring, parsed, fieldAad(sessionId, field, parsed.keyId), sessionId, place, field);
  if (typeof text !== 'string')
    throw sealedCorrupt('malformed', sessionId, place, `${field}: the opened value is not text`);
  return text;
}

function openAttrsField(
  keyring: Keyring | undefined,
  sessionId: string,
  attrs: { [key: string]: JsonValue },
): { [key: string]: JsonValue } {
  const place = { field: 'attrs' as const };
  const parsed = parseStoredData(attrs, sessionId, place, 'attrs');
  if (keyring === undefined) return attrs;
  const value = openJson(
    keyring,
    parsed,
    fieldAad(sessionId, 'attrs', parsed.keyId),
    sessionId,
    place,
    'attrs',
  );
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw sealedCorrupt('malformed', sessionId, place, 'attrs: the opened value is not an object');
  }
  return value;
}

/**
 * Opens the sealed fields of a summary. Without a keyring the sealed values are returned as they
 * are, after checking their shape.
 * @throws TidemarkError CORRUPT with `sessionId` and `location.field`.
 */
export function openSummary(keyring: Keyring | undefined, summary: SessionSummary): SessionSummary {
  const out: SessionSummary = { ...summary };
  if (summary.title !== undefined) out.title = openTextField(keyring, summary.id, 'title', summary.title);
  if (summary.firstPrompt !== undefined)
    out.firstPrompt = openTextField(keyring, summary.id, 'firstPrompt', summary.firstPrompt);
  if (summary.attrs !== undefined) out.attrs = openAttrsField(keyring, summary.id, summary.attrs);
  return out;
}
