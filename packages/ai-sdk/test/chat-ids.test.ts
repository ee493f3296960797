// Chat ids map to session ids injectively: every chat id that fits has a valid session id that
// decodes back to it, and plain ids (generateId(), UUIDs) are their own session ids.
import { isValidId } from '@tidemark/core';
import { generateId } from 'ai';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chatIdOfSession, sessionIdOfChat } from '../src/index.js';

describe('chat ids', () => {
  it('maps every chat id that fits to a valid session id that decodes back to it', () => {
    const chatIds = fc.oneof(
      fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }),
      fc.string({
        unit: fc.constantFrom('.', '_', '-', 'a', '/', ' ', 'é', '2', 'e'),
        minLength: 1,
        maxLength: 40,
      }),
    );
    fc.assert(
      fc.property(chatIds, (chatId) => {
        let sessionId: string;
        try {
          sessionId = sessionIdOfChat(chatId);
        } catch (error) {
          expect(String(error)).toMatch(/too long/);
          return;
        }
        expect(isValidId(sessionId)).toBe(true);
        expect(chatIdOfSession(sessionId)).toBe(chatId);
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps plain ids as they are and escapes the rest, a leading escape included', () => {
    const id = generateId();
    expect(sessionIdOfChat(id)).toBe(id);
    expect(sessionIdOfChat('a.b')).toBe('a.2eb');
    expect(sessionIdOfChat('a.2eb')).toBe('a.2e2eb');
    expect(sessionIdOfChat('.hidden')).toBe('_..2ehidden');
    expect(sessionIdOfChat('_.2ehidden')).toBe('_.2e2ehidden');
    expect(sessionIdOfChat('../etc')).toBe('_..2e.2e.2fetc');
  });

  it('names no chat for a session id that is not a canonical encoding', () => {
    for (const sessionId of ['a.2', 'a.zz', 'a.41', '_.', '.x', 'a.c3'])
      expect(chatIdOfSession(sessionId)).toBeUndefined();
  });
});
