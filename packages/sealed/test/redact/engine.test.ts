import { isTidemarkError } from '@tidemark/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  composeRedactors,
  defaultRedactor,
  mergeCounts,
  type RedactionRule,
  redactJson,
  redactorFromRules,
} from '../../src/redact/index.js';
import { fake } from './fixtures.js';

describe('redactJson', () => {
  it('returns the same reference when nothing changed', () => {
    const value = { a: ['plain', 1, null, { b: 'text', c: true }], password_hint: 'x' };
    const result = redactJson(value, defaultRedactor);
    expect(result.value).toBe(value);
    expect(result.counts).toEqual({});
  });

  it('redacts every string, leaves keys and untouched branches alone, and adds up counts', () => {
    const untouched = { note: 'fine' };
    const value = {
      [fake.ghp]: 'key is left alone',
      env: [`GITHUB_TOKEN=${fake.ghp}`, { deep: [`AWS_ACCESS_KEY_ID=${fake.awsKeyId}`, fake.ghs] }],
      untouched,
    };
    const result = redactJson(value, defaultRedactor);
    expect(result.counts).toEqual({ 'github-token': 2, 'aws-access-key-id': 1 });
    const out = result.value as typeof value;
    expect(Object.keys(out)).toEqual(Object.keys(value));
    expect(out.untouched).toBe(untouched);
    expect(JSON.stringify(out)).not.toContain(fake.ghs);
    expect(value.env[0]).toBe(`GITHUB_TOKEN=${fake.ghp}`); // the input is not mutated
  });
});

describe('mergeCounts and composeRedactors', () => {
  it('adds counts without changing the inputs', () => {
    const a = { jwt: 1 };
    expect(mergeCounts(a, { jwt: 2, 'x-y': 1 })).toEqual({ jwt: 3, 'x-y': 1 });
    expect(a).toEqual({ jwt: 1 });
  });

  it('runs redactors in order and merges their counts', () => {
    const custom = redactorFromRules([{ kind: 'ticket', pattern: /TICKET-\d+/g }]);
    const both = composeRedactors(custom, defaultRedactor);
    expect(both.redactText(`TICKET-42 GITHUB_TOKEN=${fake.ghp}`)).toEqual({
      text: '[redacted:ticket] GITHUB_TOKEN=[redacted:github-token]',
      counts: { ticket: 1, 'github-token': 1 },
    });
  });
});

describe('redactorFromRules', () => {
  it('replaces only the named group secret when there is one', () => {
    const r = redactorFromRules([{ kind: 'pin', pattern: /pin=(?<secret>\d{4})/g }]);
    expect(r.redactText('pin=1234 pin=9')).toEqual({ text: 'pin=[redacted:pin] pin=9', counts: { pin: 1 } });
  });

  it('never redacts a marker', () => {
    const r = redactorFromRules([{ kind: 'word', pattern: /redacted/g }]);
    expect(r.redactText('[redacted:jwt] redacted')).toEqual({
      text: '[redacted:jwt] [redacted:word]',
      counts: { word: 1 },
    });
  });

  const bad: Array<[string, unknown[], RegExp]> = [
    [
      'no g flag',
      [
        { kind: 'a', pattern: /a/g },
        { kind: 'b', pattern: /b/ },
      ],
      /rule 1: .*g flag/,
    ],
    ['a bad kind', [{ kind: 'Bad Kind', pattern: /a/g }], /rule 0: kind "Bad Kind"/],
    ['a too-long kind', [{ kind: 'a'.repeat(41), pattern: /a/g }], /rule 0: kind/],
    ['a pattern that is not a RegExp', [{ kind: 'a', pattern: 'a' }], /rule 0: pattern .*RegExp/],
    ['a sticky pattern', [{ kind: 'a', pattern: /a/gy }], /rule 0: .*y flag/],
  ];
  for (const [name, rules, message] of bad) {
    it(`rejects ${name} with INVALID naming the rule`, () => {
      let caught: unknown;
      try {
        redactorFromRules(rules as RedactionRule[]);
      } catch (error) {
        caught = error;
      }
      expect(isTidemarkError(caught) && caught.code).toBe('INVALID');
      expect((caught as Error).message).toMatch(message);
    });
  }
});

describe('properties', () => {
  it('text over an alphabet that cannot form a secret comes back identical', () => {
    // No `=`, `:`, `-`, `_`, `/` or uppercase: no assignment, URL, PEM line, or vendor prefix.
    const safe = fc.string({
      unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789 .,!?\n\t'.split('')),
    });
    fc.assert(
      fc.property(safe, (text) => {
        expect(defaultRedactor.redactText(text)).toEqual({ text, counts: {} });
      }),
      { numRuns: 300 },
    );
  });

  it('a value whose closing quote opens the next assignment is redacted the same way twice', () => {
    // Found by the property below in CI: the second pass saw the marker's `]` before the quote
    // where the first pass had seen the secret's last letter, and redacted one secret more.
    for (const text of [
      '"token": "@host"token": "@host"',
      '"token": "Authorization: Bearer "token": "Authorization: Bearer "',
    ]) {
      const once = defaultRedactor.redactText(text);
      expect(once.counts['secret-assignment'], text).toBe(1);
      expect(defaultRedactor.redactText(once.text), text).toEqual({ text: once.text, counts: {} });
    }
  });

  it('redacting the output again changes nothing', () => {
    const parts = fc.constantFrom(
      fake.ghp,
      fake.jwt,
      fake.awsKeyId,
      fake.pemRsa,
      'password=',
      'hunter2',
      ' ',
      '\n',
      '"token": "',
      '"',
      'https://u:',
      'p4ss',
      '@host',
      'Authorization: Bearer ',
      fake.bearer,
      'sk-',
      fake.openai,
      'plain',
      "'",
      '\\"',
      '!',
      '=',
      ': ',
      '[redacted:x]',
      'api_key',
      "'pw': '",
    );
    fc.assert(
      fc.property(fc.array(parts, { maxLength: 24 }), (list) => {
        const once = defaultRedactor.redactText(list.join(''));
        expect(defaultRedactor.redactText(once.text)).toEqual({ text: once.text, counts: {} });
      }),
      { numRuns: 300 },
    );
  });
});
