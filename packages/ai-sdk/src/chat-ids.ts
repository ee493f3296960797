import { isValidId, loneSurrogateIndex, TidemarkError } from '@tidemark/core';

/**
 * Chat ids come from the application or the browser (`useChat` makes its own), so they may hold
 * any character; session ids may not (they become file names). The mapping keeps every character
 * of `[A-Za-z0-9_-]` as it is and writes every other UTF-8 byte, the dot included, as `.` and two
 * lowercase hex digits, so a dot in a session id always opens an escape and decoding is unique.
 * A chat id whose first character needs escaping would give a session id starting with a dot,
 * which is not allowed: it gets the prefix `_.`, and `_..` can never come out of the plain form
 * (a dot there is always followed by hex digits). A typical chat id (`generateId()`, a UUID)
 * therefore is its own session id, and `tidemark show <chatId>` just works.
 */
const PLAIN = /^[A-Za-z0-9_-]$/;
const LEADING_ESCAPE_PREFIX = '_.';

function escapeChatId(chatId: string): string {
  let out = '';
  for (const char of chatId) {
    if (PLAIN.test(char)) {
      out += char;
      continue;
    }
    for (const byte of Buffer.from(char, 'utf8')) out += `.${byte.toString(16).padStart(2, '0')}`;
  }
  return out;
}

/**
 * The session id that stores the chat `chatId`. Injective: two different chat ids never share a
 * session.
 * @throws TidemarkError INVALID when `chatId` is not a non-empty well-formed string, or is too
 *   long to fit a session id (128 characters after escaping).
 */
export function sessionIdOfChat(chatId: unknown): string {
  if (typeof chatId !== 'string' || chatId === '') {
    throw new TidemarkError('INVALID', `chatId: expected a non-empty string, got ${describe(chatId)}`);
  }
  if (loneSurrogateIndex(chatId) !== -1) {
    throw new TidemarkError('INVALID', `chatId: ${JSON.stringify(chatId)} holds a lone UTF-16 surrogate`);
  }
  const escaped = escapeChatId(chatId);
  const sessionId = escaped.startsWith('.') ? `${LEADING_ESCAPE_PREFIX}${escaped}` : escaped;
  const length = sessionId.length;
  if (!isValidId(sessionId)) {
    throw new TidemarkError(
      'INVALID',
      `chatId: ${JSON.stringify(chatId.length > 60 ? `${chatId.slice(0, 60)}…` : chatId)} is too long: ` +
        `its session id would have ${length} characters (at most 128; characters other than ` +
        'A-Z a-z 0-9 _ - take 3 per UTF-8 byte)',
    );
  }
  return sessionId;
}

/**
 * The chat id stored in session `sessionId`, the inverse of {@link sessionIdOfChat}; undefined
 * when `sessionId` is not the image of any chat id.
 */
export function chatIdOfSession(sessionId: string): string | undefined {
  if (!isValidId(sessionId)) return undefined;
  const body = sessionId.startsWith(`${LEADING_ESCAPE_PREFIX}.`) ? sessionId.slice(2) : sessionId;
  const bytes: number[] = [];
  for (let i = 0; i < body.length; ) {
    if (body[i] === '.') {
      const hex = body.slice(i + 1, i + 3);
      if (!/^[0-9a-f]{2}$/.test(hex)) return undefined;
      bytes.push(Number.parseInt(hex, 16));
      i += 3;
    } else {
      bytes.push(body.charCodeAt(i));
      i += 1;
    }
  }
  const chatId = new TextDecoder('utf-8', { fatal: false }).decode(new Uint8Array(bytes));
  // Only a canonical encoding names a chat: this rejects escaped plain characters, invalid UTF-8
  // and a plain form that should have had the prefix, so the two functions stay inverses.
  try {
    return sessionIdOfChat(chatId) === sessionId ? chatId : undefined;
  } catch {
    return undefined;
  }
}

/** A short description of an unexpected value, for error messages. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  return typeof value;
}
