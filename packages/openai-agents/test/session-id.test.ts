// Framework session ids map to tidemark ids injectively, and back.
import { isValidId } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { sessionIdOf, tidemarkIdOf } from '../src/index.js';

describe('tidemarkIdOf', () => {
  it('leaves letters, digits and dashes alone and escapes everything else', () => {
    expect(tidemarkIdOf('0192f0c4-7f3a-7c2e-9b1d-3a4b5c6d7e8f')).toBe('0192f0c4-7f3a-7c2e-9b1d-3a4b5c6d7e8f');
    expect(tidemarkIdOf('user_42')).toBe('user_5f42');
    expect(tidemarkIdOf('.hidden')).toBe('_2ehidden');
    expect(tidemarkIdOf('a/b c')).toBe('a_2fb_20c');
  });

  it('maps distinct ids to distinct valid ids that map back', () => {
    const ids = [
      'a_2f',
      'a/',
      'a_5f2f',
      '_',
      '.',
      '..',
      'é',
      'e\u0301',
      '日本',
      '🙂',
      'x'.repeat(128),
      'a-b',
      'a_b',
      'a.b',
    ];
    const mapped = ids.map(tidemarkIdOf);
    expect(new Set(mapped).size).toBe(ids.length);
    for (const [i, id] of mapped.entries()) {
      expect(isValidId(id)).toBe(true);
      expect(sessionIdOf(id)).toBe(ids[i]);
    }
  });
});
