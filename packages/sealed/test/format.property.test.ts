import type { JsonValue } from '@tidemark/core';
import { jsonEqual } from '@tidemark/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { openEvent, SEALED_KEY, sealEvent, sealedFailureOf } from '../src/index.js';
import { keyring, T } from './helpers.js';

const json = fc.jsonValue({ maxDepth: 4 }) as fc.Arbitrary<JsonValue>;

describe('the sealed format, for arbitrary data', () => {
  it('opens what it sealed, and seals the same event to the same bytes', () => {
    fc.assert(
      fc.property(json, fc.nat(1000), (data, seq) => {
        const event = { seq, type: 'tool/result', time: T, data };
        const sealed = sealEvent(keyring, 's', event);
        expect(sealEvent(keyring, 's', event)).toEqual(sealed);
        const opened = openEvent(keyring, 's', sealed);
        expect(jsonEqual(opened.data, JSON.parse(JSON.stringify(data)) as JsonValue)).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it('is CORRUPT after any single-bit flip of the sealed value', () => {
    fc.assert(
      fc.property(json, fc.nat(), fc.integer({ min: 0, max: 6 }), (data, at, bit) => {
        const sealed = sealEvent(keyring, 's', { seq: 3, type: 'x', time: T, data });
        const text = (sealed.data as Record<string, string>)[SEALED_KEY]!;
        const i = at % text.length;
        const flipped =
          text.slice(0, i) + String.fromCharCode(text.charCodeAt(i) ^ (1 << bit)) + text.slice(i + 1);
        let error: unknown;
        try {
          openEvent(keyring, 's', { ...sealed, data: { [SEALED_KEY]: flipped } });
        } catch (e) {
          error = e;
        }
        expect(error).toMatchObject({ code: 'CORRUPT', sessionId: 's', location: { seq: 3 } });
        expect(sealedFailureOf(error)).toBeDefined();
      }),
      { numRuns: 300 },
    );
  });
});
