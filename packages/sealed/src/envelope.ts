// What a sealed value looks like, as text: the record sealed on its own (`ts1`), and the first and
// later records of a batch sealed as one (`ts2`, see batch.ts); parsed strictly, so that every
// character of a stored value matters (a flipped bit never parses to the same value).
import { KEY_ID_PATTERN } from './keyring.js';

/** The format version tag that starts every record sealed on its own, and every sealed summary field. */
export const SEALED_VERSION = 'ts1';
/** Bytes of an IV. */
export const IV_BYTES = 12;
/** Bytes of a GCM tag. */
export const TAG_BYTES = 16;

/** A parsed sealed value of one record (`ts1`): what a record, title, firstPrompt or attrs holds. */
export interface Parsed {
  kind: 'record';
  keyId: string;
  iv: Buffer;
  ct: Buffer;
}

/** The first record of a batch sealed as one (`ts2`, see batch.ts): the whole batch's ciphertext. */
export interface ParsedHead {
  kind: 'head';
  keyId: string;
  /** Records in the batch (at least 2): this one and the `count - 1` after it. */
  count: number;
  iv: Buffer;
  /** The IV as stored (base64url), which each member repeats. */
  ivText: string;
  ct: Buffer;
}

/**
 * Another record of a batch sealed as one: its index in the batch (1 to count - 1) and the head's
 * IV as stored (base64url), which names the batch's content: the IV is synthetic, an HMAC of the
 * batch's place and plaintext.
 */
export interface ParsedMember {
  kind: 'member';
  keyId: string;
  index: number;
  iv: string;
}

/** Any sealed event value. */
export type ParsedEvent = Parsed | ParsedHead | ParsedMember;

/** The version tag of records sealed a batch at a time (see batch.ts). */
export const BATCH_SEALED_VERSION = 'ts2';
/** A decimal count or index: no sign, no leading zero. */
const DECIMAL = /^[1-9][0-9]{0,8}$/;

/** Why a text is not a well-formed sealed value, or its parts (`ts1`, or with `batch` also `ts2`). */
export function parseSealed(text: string, batch = false): ParsedEvent | string {
  const parts = text.split('.');
  if (batch && parts[0] === BATCH_SEALED_VERSION) return parseBatchSealed(parts);
  if (parts[0] !== SEALED_VERSION) {
    return `not in sealed format ${SEALED_VERSION} (starts ${JSON.stringify(text.slice(0, 8))})`;
  }
  if (parts.length !== 4) return 'expected 4 dot-separated parts';
  const keyId = parts[1]!;
  if (!KEY_ID_PATTERN.test(keyId)) return 'bad key id';
  const iv = decodeBase64url(parts[2]!);
  if (iv === undefined || iv.length !== IV_BYTES) return 'bad iv';
  const ct = decodeBase64url(parts[3]!);
  if (ct === undefined || ct.length < TAG_BYTES) return 'bad ciphertext';
  return { kind: 'record', keyId, iv, ct };
}

/** `ts2.<keyId>.<count>.<iv>.<ct>` (a batch's first record) or `ts2.<keyId>.@<index>.<iv>` (another). */
function parseBatchSealed(parts: readonly string[]): ParsedHead | ParsedMember | string {
  const keyId = parts[1] ?? '';
  if (!KEY_ID_PATTERN.test(keyId)) return 'bad key id';
  if (parts.length === 4) {
    const index = parts[2]!;
    if (index[0] !== '@' || !DECIMAL.test(index.slice(1))) return 'bad batch index';
    const iv = decodeBase64url(parts[3]!);
    if (iv === undefined || iv.length !== IV_BYTES) return 'bad iv';
    return { kind: 'member', keyId, index: Number(index.slice(1)), iv: parts[3]! };
  }
  if (parts.length !== 5) return 'expected 4 or 5 dot-separated parts';
  if (!DECIMAL.test(parts[2]!) || parts[2] === '1') return 'bad batch count';
  const iv = decodeBase64url(parts[3]!);
  if (iv === undefined || iv.length !== IV_BYTES) return 'bad iv';
  const ct = decodeBase64url(parts[4]!);
  if (ct === undefined || ct.length < TAG_BYTES) return 'bad ciphertext';
  return { kind: 'head', keyId, count: Number(parts[2]), iv, ivText: parts[3]!, ct };
}

const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/**
 * Strict base64url without padding: only the alphabet, and the unused low bits of the last
 * character zero, so that every bit of the text matters (a flipped bit is never decoded away).
 */
function decodeBase64url(text: string): Buffer | undefined {
  const rest = text.length % 4;
  if (rest === 1 || text.length === 0) return undefined;
  if (rest !== 0) {
    const last = B64URL.indexOf(text[text.length - 1]!);
    if (last === -1 || (last & (rest === 2 ? 0x0f : 0x03)) !== 0) return undefined;
  }
  const bytes = Buffer.from(text, 'base64url');
  // Node skips characters outside the alphabet: a decoded length short of what the text's length
  // gives means one was there. '+', '/' and '=' are refused too (no regex over long texts on load).
  if (bytes.length !== Math.floor((text.length * 3) / 4)) return undefined;
  if (text.includes('+') || text.includes('/') || text.includes('=')) return undefined;
  return bytes;
}
