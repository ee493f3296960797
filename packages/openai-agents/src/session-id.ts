import { ID_PATTERN, TidemarkError } from '@tidemark/core';

// Letters, digits and '-' stand for themselves; every other character, '_' and '.' included, is
// written as '_' and two hex digits per UTF-8 byte. '_' only ever starts an escape, so the mapping
// is injective, and the result never starts with '.', so it is always a valid tidemark id when it
// fits in 128 characters. Typical ids (UUIDs, 'user-42') map to themselves.
const PLAIN = /^[A-Za-z0-9-]$/;

/**
 * The tidemark session id of an OpenAI Agents session id.
 * @throws TidemarkError INVALID when the id is not a non-empty string or is too long once encoded.
 */
export function tidemarkIdOf(sessionId: unknown): string {
  if (typeof sessionId !== 'string' || sessionId.length === 0) {
    throw new TidemarkError('INVALID', 'sessionId: must be a non-empty string');
  }
  // A lone surrogate has no UTF-8 form: two different ones would encode alike.
  if (/\p{Surrogate}/u.test(sessionId))
    throw new TidemarkError('INVALID', 'sessionId: has a lone UTF-16 surrogate');
  let out = '';
  for (const char of sessionId) {
    if (PLAIN.test(char)) {
      out += char;
      continue;
    }
    for (const byte of Buffer.from(char, 'utf8')) out += `_${byte.toString(16).padStart(2, '0')}`;
  }
  if (!ID_PATTERN.test(out)) {
    throw new TidemarkError(
      'INVALID',
      `sessionId: encodes to ${out.length} characters, more than the 128 a tidemark id may have (letters, digits and '-' take one, other characters three per UTF-8 byte)`,
    );
  }
  return out;
}

/** The OpenAI Agents session id a tidemark id made by {@link tidemarkIdOf} stands for. */
export function sessionIdOf(tidemarkId: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < tidemarkId.length; i++) {
    if (tidemarkId[i] === '_') {
      bytes.push(Number.parseInt(tidemarkId.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(tidemarkId.charCodeAt(i));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}
