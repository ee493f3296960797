// Thread ids are arbitrary strings; session ids are 1 to 128 characters of [A-Za-z0-9._-]. The
// mapping is injective by construction: three prefixes that differ in their third character, so
// no id of one form can equal an id of another.
import { createHash } from 'node:crypto';

/** Prefix of a thread id used as it is (it is already a valid id tail). */
const RAW_PREFIX = 'lg-';
/** Prefix of a thread id encoded as base64url of its UTF-8 bytes. */
const ENCODED_PREFIX = 'lgx-';
/** Prefix of a thread id too long to encode: the SHA-256 of its UTF-8 bytes, in hex. */
const HASHED_PREFIX = 'lgh-';
const MAX_ID_LENGTH = 128;
const RAW_TAIL = /^[A-Za-z0-9._-]+$/;

/**
 * The session id of a LangGraph thread.
 *
 * - `lg-<thread id>` when the thread id is made of `[A-Za-z0-9._-]` and fits (up to 125 characters);
 * - `lgx-<base64url of the UTF-8 bytes>` when that fits in 128 characters (thread ids of up to 93 bytes);
 * - `lgh-<sha-256 hex>` otherwise. The session's summary keeps the thread id, and every load
 *   checks it, so a hash collision would be reported, never merged.
 */
export function sessionIdOfThread(threadId: string): string {
  if (RAW_TAIL.test(threadId) && RAW_PREFIX.length + threadId.length <= MAX_ID_LENGTH) {
    return RAW_PREFIX + threadId;
  }
  const encoded = Buffer.from(threadId, 'utf8').toString('base64url');
  if (ENCODED_PREFIX.length + encoded.length <= MAX_ID_LENGTH) return ENCODED_PREFIX + encoded;
  return HASHED_PREFIX + createHash('sha256').update(threadId, 'utf8').digest('hex');
}

/** True when `sessionId` has the form of a thread's session (any of the three prefixes). */
export function isThreadSessionId(sessionId: string): boolean {
  return (
    sessionId.startsWith(RAW_PREFIX) ||
    sessionId.startsWith(ENCODED_PREFIX) ||
    sessionId.startsWith(HASHED_PREFIX)
  );
}

/** True for a hashed thread id's session: only its summary tells which thread it holds. */
export function isHashedSessionId(sessionId: string): boolean {
  return sessionId.startsWith(HASHED_PREFIX);
}
