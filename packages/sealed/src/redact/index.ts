/**
 * Opt-in redaction before sealing: precision-first secret patterns that replace each secret found
 * with a visible marker `[redacted:<kind>]`, and helpers to apply a redactor over JSON values.
 * Redaction is lossy: what it replaces is gone from what is stored.
 * @packageDocumentation
 */
import { type Redactor, redactorOf } from './engine.js';
import { DEFAULT_RULES } from './patterns.js';

export {
  composeRedactors,
  marker,
  mergeCounts,
  type RedactionResult,
  type RedactionRule,
  type Redactor,
  type RedactTextResult,
  redactJson,
  redactorFromRules,
} from './engine.js';
export { DEFAULT_KINDS } from './patterns.js';

/**
 * The default redactor: PEM private keys, AWS access key ids and (named) secret keys, GitHub,
 * OpenAI, Anthropic, Slack, Stripe live and Google API keys, JWTs, `Authorization: Bearer` tokens,
 * passwords in URLs, and `key=value` / `key: value` / `"key": "value"` secrets whose key names a
 * secret. Each pattern is linear-time; see README-section.md for what each leaves alone.
 */
export const defaultRedactor: Redactor = redactorOf(DEFAULT_RULES);
