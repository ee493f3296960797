/**
 * The default, precision-first secret patterns. Each is a global regex that runs in linear time:
 * every unbounded run is a single character class, starts behind a one-character lookbehind that
 * refuses to start inside a run of the same class (so no run is rescanned from each of its
 * positions), and is followed by something outside its class (so giving characters back costs one
 * step each). Alternatives inside a repeated group start with disjoint characters. Anything that a
 * regex cannot say cheaply (a JWT header that decodes to JSON, a key name that means a secret, a
 * value that is a placeholder) is checked on the match, in `span`.
 *
 * Shapes follow public rule sets (read, not copied): gitleaks' default config
 * (github.com/gitleaks/gitleaks config/gitleaks.toml) and GitHub's token-format announcement
 * ("Behind GitHub's new authentication token formats", github.blog 2021-04-05).
 */
import { type CompiledRule, secretSpan } from './engine.js';

type Span = readonly [number, number];

/** The span of the named group `name`, when it took part in the match. */
function groupSpan(m: RegExpExecArray, name: string): Span | undefined {
  return m.indices?.groups?.[name];
}

/** Values that are not secrets: empty, literals, placeholders, masks, markers. */
export function isTrivialValue(value: string): boolean {
  const v = value.trim();
  if (v.length === 0) return true;
  if (/^(?:null|nil|none|true|false|undefined|yes|no|on|off)$/i.test(v)) return true;
  if (v.includes('[redacted:')) return true;
  // Placeholders: $VAR, ${VAR}, {{ var }}, <your-token>, %VAR%, @VAR@.
  if (/^\$\{?[A-Za-z_][A-Za-z0-9_]*\}?$/.test(v)) return true;
  if (v.startsWith('${') || v.startsWith('{{') || v.startsWith('$(')) return true;
  if (/^<[^<>]*>$/.test(v) || /^%[A-Za-z_][A-Za-z0-9_]*%$/.test(v) || /^@[A-Za-z_]+@$/.test(v)) return true;
  // A mask: one character repeated (****, xxxxxxxx, ....).
  if (/^(.)\1*$/.test(v)) return true;
  return false;
}

/** A code expression rather than a literal: a dotted member path such as `process.env.TOKEN`. */
function isMemberPath(value: string): boolean {
  return /^[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)+$/.test(value);
}

const KEYWORDS = [
  'password',
  'passwd',
  'pwd',
  'secret',
  'token',
  'api_key',
  'apikey',
  'access_key',
  'accesskey',
  'private_key',
  'privatekey',
  'client_secret',
];
/** Last name segments that describe a secret rather than hold one (`token_type`, `password_file`). */
const DESCRIPTORS = new Set([
  'at',
  'count',
  'counts',
  'dir',
  'enabled',
  'endpoint',
  'env',
  'expiration',
  'expires',
  'expiry',
  'field',
  'file',
  'format',
  'header',
  'hint',
  'id',
  'ids',
  'in',
  'kind',
  'label',
  'len',
  'length',
  'limit',
  'max',
  'min',
  'mode',
  'name',
  'names',
  'path',
  'policy',
  'prefix',
  'required',
  'size',
  'ttl',
  'type',
  'types',
  'uri',
  'url',
  'var',
]);

/** What a key name says of its value: 'secret', 'token-only' (a count is not a secret), or no. */
export function secretKeyClass(key: string): 'secret' | 'token-only' | undefined {
  const norm = key.replace(/[-.]/g, '_').toLowerCase();
  if (norm === 'pwd' || norm === 'oldpwd') return undefined; // the shell's working directories
  let strong = false;
  let token = false;
  for (const word of KEYWORDS) {
    let from = 0;
    for (let i = norm.indexOf(word, from); i >= 0; i = norm.indexOf(word, from)) {
      from = i + 1;
      if (word === 'token') {
        // `tokens`, `tokenizer`: counts and tools, not tokens. `accessToken` still counts.
        const after = key.charAt(i + word.length);
        if (/[a-z]/.test(after)) continue;
        token = true;
      } else {
        strong = true;
      }
    }
  }
  if (!strong && !token) return undefined;
  const segments = key
    .split(/[_.-]|(?<=[a-z0-9])(?=[A-Z])/)
    .filter((s) => s.length > 0)
    .map((s) => s.toLowerCase());
  const lastSegment = segments[segments.length - 1];
  if (lastSegment !== undefined && DESCRIPTORS.has(lastSegment)) return undefined;
  return strong ? 'secret' : 'token-only';
}

/** True when only spaces or tabs stand between `index` and the start of its line. */
function atLineStart(input: string, index: number): boolean {
  let i = index - 1;
  while (i >= 0 && (input[i] === ' ' || input[i] === '\t' || input[i] === '-')) i--;
  return i < 0 || input[i] === '\n' || input[i] === '\r';
}

/** Letters and digits mixed, as in random keys; prose and kebab-case identifiers fail it. */
function looksRandom(body: string): boolean {
  return /[0-9]/.test(body) && /[A-Z]/.test(body) && /[a-z]/.test(body);
}

/** A JWT's first part decodes to a JSON object with an `alg`. */
function isJwtHeader(part: string): boolean {
  try {
    const header: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return (
      header !== null && typeof header === 'object' && typeof (header as { alg?: unknown }).alg === 'string'
    );
  } catch {
    return false;
  }
}

/** The span of group `secret` unless its value is trivial. */
function nonTrivialSecret(m: RegExpExecArray): Span | undefined {
  const value = m.groups?.secret;
  if (value === undefined || isTrivialValue(value)) return undefined;
  return groupSpan(m, 'secret');
}

/** The default rules, in the order they run: whole blocks, vendor shapes, then context rules. */
export const DEFAULT_RULES: readonly CompiledRule[] = [
  {
    // PEM private keys, the whole block (gitleaks `private-key`; RFC 7468 labels). The body may
    // not contain `-----`, so a BEGIN never reaches past the next boundary line.
    kind: 'pem-private-key',
    pattern:
      /-----BEGIN (?:(?:RSA|EC|DSA|OPENSSH|ENCRYPTED) )?PRIVATE KEY-----(?:[^-]|-(?!----))*-----END (?:(?:RSA|EC|DSA|OPENSSH|ENCRYPTED) )?PRIVATE KEY-----/dg,
    span: secretSpan,
  },
  {
    // AWS access key ids: AKIA (long-term) / ASIA (temporary) + 16 (gitleaks `aws-access-token`,
    // which narrows the 16 to base32 [A-Z2-7]; kept to uppercase alnum here).
    kind: 'aws-access-key-id',
    pattern: /(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])/dg,
    span: secretSpan,
  },
  {
    // GitHub: ghp_ gho_ ghu_ ghs_ ghr_ + 36 base62; github_pat_ + 82 (22 + `_` + 59) (gitleaks
    // `github-pat`, `github-oauth`, `github-app-token`, `github-refresh-token`,
    // `github-fine-grained-pat`; GitHub's token-format post).
    kind: 'github-token',
    pattern: /(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{82})(?![A-Za-z0-9_])/dg,
    span: secretSpan,
  },
  {
    // Anthropic: sk-ant- + (api03-|admin01-|…) body (gitleaks `anthropic-api-key`:
    // sk-ant-api03- + 93 + AA). Any version, 32+ characters after the prefix.
    kind: 'anthropic-key',
    pattern: /(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{32,}/dg,
    span: (m) => (isTrivialValue(m[0].slice(7)) ? undefined : secretSpan(m)),
  },
  {
    // OpenAI: sk- / sk-proj- / sk-svcacct- / sk-admin- + a long base62/url-safe body (gitleaks
    // `openai-api-key` also asks for the T3BlbkFJ infix; here: 20+ characters that mix upper,
    // lower and digits, so `sk-` in prose or a kebab-case name is left alone).
    kind: 'openai-key',
    pattern: /(?<![A-Za-z0-9_-])sk-(?!ant-)[A-Za-z0-9_-]{20,}/dg,
    span: (m) => (looksRandom(m[0].slice(3)) ? secretSpan(m) : undefined),
  },
  {
    // Slack: xoxb- / xoxp- / xoxa- / xoxr- / xoxs- + digits + `-` + the rest (gitleaks
    // `slack-bot-token`, `slack-user-token`, `slack-legacy-*`).
    kind: 'slack-token',
    pattern: /(?<![A-Za-z0-9_-])xox[abprs]-[0-9]{1,20}-[A-Za-z0-9-]{10,}/dg,
    span: secretSpan,
  },
  {
    // Stripe live secret and restricted keys (gitleaks `stripe-access-token`); test keys stay.
    kind: 'stripe-key',
    pattern: /(?<![A-Za-z0-9_])[sr]k_live_[A-Za-z0-9]{16,}/dg,
    span: secretSpan,
  },
  {
    // Google API keys: AIza + 35 (gitleaks `gcp-api-key`).
    kind: 'google-api-key',
    pattern: /(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])/dg,
    span: secretSpan,
  },
  {
    // JWTs: three base64url parts, the first two JSON objects (`eyJ` = `{"`) (gitleaks `jwt`);
    // the header must decode to JSON with an `alg`.
    kind: 'jwt',
    pattern: /(?<![A-Za-z0-9_-])(?<header>eyJ[A-Za-z0-9_-]{5,})\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{8,}/dg,
    span: (m) => (isJwtHeader(m.groups?.header ?? '') ? secretSpan(m) : undefined),
  },
  {
    // `Authorization: Bearer <token>` in headers, curl -H, JSON (gitleaks `curl-auth-header`);
    // the token68 characters of RFC 6750. `Bearer` alone in prose is left alone.
    kind: 'bearer-token',
    pattern:
      /\bauthorization["']?[ \t]{0,5}[:=][ \t]{0,5}["']?[ \t]{0,5}bearer[ \t]{1,5}(?<secret>[A-Za-z0-9._~+/-]{8,}=*)/dgi,
    span: nonTrivialSecret,
  },
  {
    // Credentials in URLs, scheme://user:password@host (RFC 3986 userinfo): only the password
    // goes; scheme, user and host stay.
    kind: 'url-credentials',
    pattern:
      /(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}:\/\/[^\s:@/?#[\]"'<>]{0,256}:(?<secret>[^\s@/?#[\]"'<>]{1,256})(?=@[A-Za-z0-9[])/dg,
    span: nonTrivialSecret,
  },
  {
    // AWS secret access keys (40 base64 characters) only after their name, as in
    // ~/.aws/credentials, env files and `aws sts` JSON (gitleaks `aws-secret-key`-style context).
    kind: 'aws-secret-key',
    pattern:
      /(?<![A-Za-z0-9])(?:aws[_-]?secret[_-]?(?:access[_-]?)?key|secret[_-]?access[_-]?key)["']?[ \t]{0,5}[:=][ \t]{0,5}["']?(?<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])/dgi,
    span: secretSpan,
  },
  {
    // `key=value`, `key: value`, `"key": "value"` where the key names a secret (gitleaks
    // `generic-api-key` idea, with a narrower key list and no entropy guess). Quoted values may sit
    // anywhere; a bare value after `:` only on a YAML-like line of its own; bare values that are
    // code (`process.env.X`, `getToken(`) and placeholders stay.
    kind: 'secret-assignment',
    pattern:
      /(?<![A-Za-z0-9_.])(?<q>\\?["']?)(?<key>[A-Za-z][A-Za-z0-9_.-]{0,63})\k<q>(?<sep>[ \t]{0,3}(?::=|[:=])[ \t]{0,3})(?:"(?<dq>(?:[^"\\\r\n]|\\.){0,512})"|'(?<sq>[^'\r\n]{0,512})'|\\"(?<eq>[^"\\\r\n]{0,512})\\"|(?<bare>[^\s"'`,;&<>(){}[\]=:\\][^\s"'`,;&<>(){}[\]\\]{0,511}))/dg,
    span: (m, input) => {
      const groups = m.groups ?? {};
      const keyClass = secretKeyClass(groups.key ?? '');
      if (keyClass === undefined) return undefined;
      const name = ['dq', 'sq', 'eq', 'bare'].find((g) => groups[g] !== undefined);
      if (name === undefined) return undefined;
      const value = groups[name] as string;
      if (isTrivialValue(value)) return undefined;
      if (keyClass === 'token-only' && /^[0-9]+$/.test(value)) return undefined;
      if (name === 'bare') {
        const span = groupSpan(m, 'bare');
        if (span === undefined) return undefined;
        if (input[span[1]] === '(' || isMemberPath(value)) return undefined;
        if (
          (groups.sep ?? '').includes(':') &&
          !(groups.sep ?? '').includes('=') &&
          !atLineStart(input, m.index)
        ) {
          return undefined;
        }
        return span;
      }
      return groupSpan(m, name);
    },
  },
];

/** The stable kinds of the default rules, in the order they run. */
export const DEFAULT_KINDS: readonly string[] = DEFAULT_RULES.map((r) => r.kind);
