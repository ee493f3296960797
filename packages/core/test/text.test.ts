// Text the contract stores as text (type, cwd, title, firstPrompt, tags) must be well-formed
// Unicode: a lone UTF-16 surrogate survives JSON but not a UTF-8 text column, so one backend would
// store what another changes. `attrs` has a size limit: summaries are small records.
import { describe, expect, it } from 'vitest';
import {
  FIRST_PROMPT_LENGTH,
  isTidemarkError,
  loneSurrogateIndex,
  MAX_ATTRS_BYTES,
  prepareEvent,
  promptOf,
  sliceWellFormed,
  toWellFormed,
  validateCreate,
  validatePatch,
} from '../src/index.js';

const errorOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
};
const T = '2026-01-01T00:00:00.000Z';
const HIGH = '\ud83d';
const LOW = '\ude00';
const PAIR = `${HIGH}${LOW}`; // 😀

describe('lone surrogates', () => {
  it('finds the first lone half, and none in well-formed text', () => {
    expect(loneSurrogateIndex('plain')).toBe(-1);
    expect(loneSurrogateIndex(`a${PAIR}b${PAIR}`)).toBe(-1);
    expect(loneSurrogateIndex(`ab${HIGH}`)).toBe(2);
    expect(loneSurrogateIndex(`${LOW}x`)).toBe(0);
    expect(loneSurrogateIndex(`${PAIR}${HIGH}${HIGH}${LOW}`)).toBe(2);
    expect(loneSurrogateIndex(`${LOW}${HIGH}`)).toBe(0); // reversed halves are two lone ones
  });

  it('are INVALID in an event type, naming the field and the index; data keeps them', () => {
    const error = errorOf(() =>
      prepareEvent({ seq: 0, type: `tool${HIGH}`, time: T, data: null }, 'events[0]'),
    );
    expect(isTidemarkError(error, 'INVALID')).toBe(true);
    expect((error as Error).message).toContain('events[0].type');
    expect((error as Error).message).toContain('index 4');
    const prepared = prepareEvent({ seq: 0, type: 'x', time: T, data: { text: `a${HIGH}` } }, 'e');
    expect(prepared.event.data).toEqual({ text: `a${HIGH}` });
  });

  it('are INVALID in cwd, title, firstPrompt and tags; attrs keep them', () => {
    for (const run of [
      () => validateCreate({ cwd: `/w${LOW}` }, () => 'id'),
      () => validateCreate({ title: `t${HIGH}` }, () => 'id'),
      () => validatePatch({ firstPrompt: `p${HIGH}` }),
      () => validatePatch({ tags: ['ok', `t${LOW}`] }),
    ]) {
      const error = errorOf(run);
      expect(isTidemarkError(error, 'INVALID')).toBe(true);
      expect((error as Error).message).toMatch(/lone UTF-16 surrogate at index \d+/);
    }
    expect(validatePatch({ title: `t${PAIR}`, attrs: { x: `a${HIGH}` } })).toEqual({
      title: `t${PAIR}`,
      attrs: { x: `a${HIGH}` },
    });
  });

  it('a derived first prompt never splits a pair at the length limit and never holds a lone half', () => {
    for (let at = FIRST_PROMPT_LENGTH - 4; at <= FIRST_PROMPT_LENGTH + 1; at++) {
      const text = `${'a'.repeat(at)}${PAIR}${'b'.repeat(20)}`;
      const prompt = promptOf({ seq: 0, type: 'user/message', time: T, data: text })!;
      expect(prompt.length).toBeLessThanOrEqual(FIRST_PROMPT_LENGTH);
      expect(loneSurrogateIndex(prompt)).toBe(-1);
      expect(text.startsWith(prompt.replace(/…$/, ''))).toBe(true);
    }
    const prompt = promptOf({ seq: 0, type: 'user/message', time: T, data: { text: `hi ${HIGH} there` } });
    expect(prompt).toBe('hi \ufffd there');
  });

  it('helpers: sliceWellFormed and toWellFormed', () => {
    expect(sliceWellFormed(`a${PAIR}`, 2)).toBe('a');
    expect(sliceWellFormed(`a${PAIR}`, 3)).toBe(`a${PAIR}`);
    expect(sliceWellFormed('abc', 2)).toBe('ab');
    expect(toWellFormed(`x${HIGH}y${PAIR}${LOW}`)).toBe(`x\ufffdy${PAIR}\ufffd`);
  });
});

describe('attrs size', () => {
  it('accepts attrs up to the limit and refuses larger ones with the size', () => {
    const fits = { blob: 'x'.repeat(MAX_ATTRS_BYTES - '{"blob":""}'.length) };
    expect(validatePatch({ attrs: fits }).attrs).toEqual(fits);
    const error = errorOf(() => validatePatch({ attrs: { blob: 'x'.repeat(MAX_ATTRS_BYTES) } }));
    expect(isTidemarkError(error, 'INVALID')).toBe(true);
    expect((error as Error).message).toContain('update: attrs');
    expect((error as Error).message).toContain(String(MAX_ATTRS_BYTES));
  });
});
