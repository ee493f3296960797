import { describe, expect, it } from 'vitest';
import { applyRules } from '../../src/redact/engine.js';
import { DEFAULT_RULES } from '../../src/redact/patterns.js';

/**
 * Each pattern on a 1 MB input made of its own prefix repeated: the shape that makes a
 * backtracking regex rescan the rest of the input from every start. The test only requires the
 * run to complete (a quadratic pattern would not, on 1 MB); no timing is asserted.
 */
const prefixes: Record<string, string[]> = {
  'pem-private-key': ['-----BEGIN RSA PRIVATE KEY-----\n', '-----BEGIN PRIVATE KEY-----\nMIIE', '-----'],
  'aws-access-key-id': ['AKIA', 'AKIAAAAA'],
  'aws-secret-key': ['aws_secret_access_key = ', 'aws_secret_access_key=AAAA'],
  'github-token': ['ghp_', 'github_pat_', 'ghp_a'],
  'openai-key': ['sk-', 'sk-aB1'],
  'anthropic-key': ['sk-ant-', 'sk-ant-a'],
  'slack-token': ['xoxb-', 'xoxb-1-', 'xoxb-12'],
  'stripe-key': ['sk_live_', 'rk_live_a'],
  'google-api-key': ['AIza', 'AIzaB'],
  jwt: ['eyJ', 'eyJhbGciOi.', 'eyJhbGciOi.eyJ'],
  'bearer-token': ['Authorization: Bearer ', 'authorization: bearer a', 'Authorization:'],
  'url-credentials': ['https://u:', 'a://', 'https://user:pa', 'x:'],
  'secret-assignment': [
    'password=',
    '"password": "',
    'token: ',
    "secret='",
    'a-',
    '\\"password\\": \\"',
    'api_key',
  ],
};

const ONE_MB = 1 << 20;

function repeatTo(prefix: string, size: number): string {
  return prefix.repeat(Math.ceil(size / prefix.length)).slice(0, size);
}

describe('every default pattern completes on 1 MB of its prefix repeated', () => {
  it('has adversarial prefixes for every kind', () => {
    expect(Object.keys(prefixes).sort()).toEqual(DEFAULT_RULES.map((r) => r.kind).sort());
  });

  for (const [kind, list] of Object.entries(prefixes)) {
    it(kind, () => {
      const rule = DEFAULT_RULES.find((r) => r.kind === kind);
      expect(rule).toBeDefined();
      for (const prefix of list) {
        const result = applyRules(repeatTo(prefix, ONE_MB), rule === undefined ? [] : [rule]);
        expect(typeof result.text).toBe('string');
      }
    });
  }
});
