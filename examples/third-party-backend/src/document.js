// The bytes of one session file: a SHA-256 of the body on the first line, then the body, a JSON
// object with the meta, the summary and every event. The checksum is what turns a flipped byte
// into CORRUPT: without it a changed digit inside an event's data would still parse, and the
// store would hand back a silently different history.
import { createHash } from 'node:crypto';
import { errors } from '@tidemark/core';

/** The format name and version stamped in every file (and on meta, as `formatVersion`). */
export const FORMAT = 'json-dir';
export const FORMAT_VERSION = 1;

/**
 * @typedef {import('@tidemark/core').SessionMeta} SessionMeta
 * @typedef {import('@tidemark/core').SessionSummary} SessionSummary
 * @typedef {import('@tidemark/core').SessionEvent} SessionEvent
 * @typedef {{ meta: SessionMeta, summary: SessionSummary, events: SessionEvent[] }} SessionDocument
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/** @param {string} text */
function sha256(text) {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * Serializes a session. Events are written as `JSON.stringify` gives them, which is what the
 * contract's round trip expects (key order kept, `__proto__` an ordinary key).
 * @param {SessionDocument} doc
 * @returns {Uint8Array}
 */
export function encodeDocument(doc) {
  const body = JSON.stringify({
    format: FORMAT,
    version: FORMAT_VERSION,
    meta: doc.meta,
    summary: doc.summary,
    events: doc.events,
  });
  return encoder.encode(`${sha256(body)}\n${body}\n`);
}

/**
 * Parses a session file. Anything but a whole, checksummed file of this format is CORRUPT naming
 * the file; a newer version is UNSUPPORTED_FORMAT.
 * @param {Uint8Array} bytes
 * @param {string} file - the path, for the error's location
 * @param {string} id
 * @returns {SessionDocument}
 */
export function decodeDocument(bytes, file, id) {
  /** @param {string} why @param {unknown} [cause] */
  const corrupt = (why, cause) => errors.corrupt(`session file ${file}: ${why}`, { file }, id, cause);
  let text;
  try {
    text = decoder.decode(bytes);
  } catch (error) {
    throw corrupt('not UTF-8', error);
  }
  const newline = text.indexOf('\n');
  if (newline !== 64 || !text.endsWith('\n')) throw corrupt('not a whole session file');
  const body = text.slice(newline + 1, -1);
  if (sha256(body) !== text.slice(0, newline)) throw corrupt('checksum mismatch');
  let parsed;
  try {
    parsed = JSON.parse(body);
  } catch (error) {
    throw corrupt('body is not JSON', error);
  }
  if (parsed?.format !== FORMAT || !Number.isSafeInteger(parsed.version))
    throw corrupt('not a json-dir file');
  if (parsed.version > FORMAT_VERSION) throw errors.unsupportedFormat(parsed.version, FORMAT_VERSION, id);
  if (parsed.meta?.id !== id || !Array.isArray(parsed.events) || typeof parsed.summary !== 'object')
    throw corrupt('meta, summary or events missing');
  return { meta: parsed.meta, summary: parsed.summary, events: parsed.events };
}
