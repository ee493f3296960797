/**
 * The redaction engine: applies rules (a kind and a global regex) to text, replaces what they find
 * with a visible marker `[redacted:<kind>]`, and counts the replacements by kind. Pure functions.
 */
import { type JsonValue, TidemarkError } from '@tidemark/core';

/** What {@link Redactor.redactText} returns. */
export interface RedactTextResult {
  /** The text with every secret found replaced by `[redacted:<kind>]`. */
  text: string;
  /** How many secrets of each kind were replaced (kinds with none are absent). */
  counts: Record<string, number>;
}

/** Rewrites text before it is sealed or stored. */
export interface Redactor {
  /** The text with every secret replaced by a marker, and how many of each kind were replaced. */
  redactText(text: string): RedactTextResult;
}

/** What {@link redactJson} returns. */
export interface RedactionResult {
  /** The redacted value; the very same reference as the input when nothing was redacted. */
  value: JsonValue;
  /** How many secrets of each kind were replaced, over every string in the value. */
  counts: Record<string, number>;
}

/** A user rule for {@link redactorFromRules}. */
export interface RedactionRule {
  /** The marker's kind: lowercase letters, digits and `-`, 1 to 40 characters. */
  kind: string;
  /**
   * A regex with the `g` flag. The whole match is replaced, or only the named group `secret` when
   * the pattern has one (so `token=(?<secret>\w+)` keeps `token=`). Keep it linear-time: no nested
   * quantifiers, a left boundary before unbounded runs.
   */
  pattern: RegExp;
}

/** A compiled rule: `span` says which part of a match to replace, or undefined to keep the match. */
export interface CompiledRule {
  readonly kind: string;
  /** Global regex with the `d` flag (match indices). */
  readonly pattern: RegExp;
  /** The [start, end) to replace within `input`, or undefined to leave this match alone. */
  span(match: RegExpExecArray, input: string): readonly [number, number] | undefined;
}

/** `[redacted:<kind>]`, the visible marker. */
export function marker(kind: string): string {
  return `[redacted:${kind}]`;
}

const KIND = /^[a-z0-9-]{1,40}$/;
/** Matches the markers already in a text; fixed shape, so linear. */
const MARKER = /\[redacted:[a-z0-9-]{1,40}\]/g;

/** Default span: the named group `secret` if it took part in the match, else the whole match. */
export function secretSpan(match: RegExpExecArray): readonly [number, number] | undefined {
  const group = match.indices?.groups?.secret;
  if (group !== undefined) return group;
  if (match.groups !== undefined && 'secret' in match.groups) return undefined;
  return [match.index, match.index + match[0].length];
}

/** Adds the `d` flag (match indices) to a global regex, keeping its source and other flags. */
export function withIndices(pattern: RegExp): RegExp {
  return pattern.flags.includes('d') ? new RegExp(pattern) : new RegExp(pattern.source, `${pattern.flags}d`);
}

/** Spans of the markers in `text`, in order. */
function markerSpans(text: string): Array<[number, number]> {
  const spans: Array<[number, number]> = [];
  if (!text.includes('[redacted:')) return spans;
  MARKER.lastIndex = 0;
  for (let m = MARKER.exec(text); m !== null; m = MARKER.exec(text)) {
    spans.push([m.index, m.index + m[0].length]);
  }
  return spans;
}

/**
 * Applies one rule to `text`. A match that overlaps a marker already there is left alone, so a
 * marker is never redacted again. Redacting twice changes nothing more because the second pass
 * must see what the first saw around each secret:
 * - a marker stands for the secret it replaced, a run of word characters, so no match starts right
 *   where a marker ends (or where this pass has just replaced one). Every rule's left boundary
 *   refuses a word character before it; the marker's `]` would not, and `"token": "a"token": "b"`
 *   had its second half redacted only on the second pass, through the first value's closing quote;
 * - after a replacement the scan goes on right after the replaced span, not after the whole match,
 *   so a closing quote left after a marker is tried on both passes alike.
 */
function applyRule(text: string, rule: CompiledRule): { text: string; count: number } {
  const pattern = rule.pattern;
  const markers = markerSpans(text);
  let mi = 0;
  let out = '';
  let last = 0;
  let count = 0;
  pattern.lastIndex = 0;
  for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
    const start = m.index;
    const end = start + m[0].length;
    if (end === start) {
      pattern.lastIndex = start + 1; // an empty match: step on, never loop
      continue;
    }
    while (mi < markers.length && (markers[mi] as [number, number])[1] <= start) mi++;
    const overlapsMarker = mi < markers.length && (markers[mi] as [number, number])[0] < end;
    const afterMarker = mi > 0 && (markers[mi - 1] as [number, number])[1] === start;
    const span = overlapsMarker || afterMarker ? undefined : rule.span(m, text);
    if (span === undefined || span[1] <= span[0] || span[0] < last) {
      // Rejected: look again from the next character, so a secret inside the rejected match (a
      // `"password": "…"` inside the JSON string value of an ordinary key) is still found. The
      // start only moves forward, so each position is tried at most once: still linear.
      pattern.lastIndex = start + 1;
      continue;
    }
    out += text.slice(last, span[0]) + marker(rule.kind);
    last = span[1];
    count++;
    // Go on right after the span; no match may start at its end (it is a marker's end now), so
    // look from the next character.
    pattern.lastIndex = span[1] + 1;
  }
  if (count === 0) return { text, count };
  return { text: out + text.slice(last), count };
}

/** Runs `rules` one after another over `text`. */
export function applyRules(text: string, rules: readonly CompiledRule[]): RedactTextResult {
  let current = text;
  const counts: Record<string, number> = {};
  for (const rule of rules) {
    const { text: next, count } = applyRule(current, rule);
    if (count > 0) {
      counts[rule.kind] = (counts[rule.kind] ?? 0) + count;
      current = next;
    }
  }
  return { text: current, counts };
}

/** A {@link Redactor} over compiled rules. */
export function redactorOf(rules: readonly CompiledRule[]): Redactor {
  const frozen = [...rules];
  return {
    redactText(text: string): RedactTextResult {
      return applyRules(text, frozen);
    },
  };
}

/** The sum of two count maps, as a new object (neither input is changed). */
export function mergeCounts(
  a: Readonly<Record<string, number>>,
  b: Readonly<Record<string, number>>,
): Record<string, number> {
  const out: Record<string, number> = { ...a };
  for (const [kind, n] of Object.entries(b)) out[kind] = (out[kind] ?? 0) + n;
  return out;
}

/** A redactor that runs `redactors` in order, each over the previous one's output; counts add up. */
export function composeRedactors(...redactors: Redactor[]): Redactor {
  const list = [...redactors];
  return {
    redactText(text: string): RedactTextResult {
      let current = text;
      let counts: Record<string, number> = {};
      for (const r of list) {
        const result = r.redactText(current);
        current = result.text;
        counts = mergeCounts(counts, result.counts);
      }
      return { text: current, counts };
    },
  };
}

function invalidRule(index: number, what: string): TidemarkError {
  return new TidemarkError('INVALID', `redactorFromRules: rule ${index}: ${what}`);
}

/**
 * A {@link Redactor} from user rules, applied in order. Each rule is checked: an object with a
 * `kind` matching `/^[a-z0-9-]{1,40}$/` and a `pattern` that is a RegExp with the `g` flag (and
 * not sticky); otherwise INVALID naming the rule's index and what is wrong.
 */
export function redactorFromRules(rules: readonly RedactionRule[]): Redactor {
  if (!Array.isArray(rules)) throw new TidemarkError('INVALID', 'redactorFromRules: rules must be an array');
  const compiled = rules.map((rule: unknown, index): CompiledRule => {
    if (rule === null || typeof rule !== 'object')
      throw invalidRule(index, 'must be an object { kind, pattern }');
    const { kind, pattern } = rule as { kind?: unknown; pattern?: unknown };
    if (typeof kind !== 'string' || !KIND.test(kind)) {
      throw invalidRule(index, `kind ${JSON.stringify(kind) ?? String(kind)} must match /^[a-z0-9-]{1,40}$/`);
    }
    if (!(pattern instanceof RegExp)) throw invalidRule(index, `pattern of kind "${kind}" must be a RegExp`);
    if (!pattern.global)
      throw invalidRule(index, `pattern ${String(pattern)} of kind "${kind}" must have the g flag`);
    if (pattern.sticky)
      throw invalidRule(index, `pattern ${String(pattern)} of kind "${kind}" must not have the y flag`);
    return { kind, pattern: withIndices(pattern), span: secretSpan };
  });
  return redactorOf(compiled);
}

/** Defines an own property, so a key such as `__proto__` stays a plain key. */
function setOwn(target: { [key: string]: JsonValue }, key: string, value: JsonValue): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * Redacts every string value in a JSON value (arrays and objects, nested; object keys untouched).
 * Returns the very same reference when nothing was redacted, and new containers only along the
 * paths that changed.
 */
export function redactJson(value: JsonValue, redactor: Redactor): RedactionResult {
  let counts: Record<string, number> = {};
  const walk = (v: JsonValue): JsonValue => {
    if (typeof v === 'string') {
      const r = redactor.redactText(v);
      if (Object.keys(r.counts).length > 0) counts = mergeCounts(counts, r.counts);
      return r.text;
    }
    if (Array.isArray(v)) {
      let out: JsonValue[] | undefined;
      for (let i = 0; i < v.length; i++) {
        const item = v[i] as JsonValue;
        const next = walk(item);
        if (next !== item && out === undefined) out = v.slice(0, i);
        if (out !== undefined) out.push(next);
      }
      return out ?? v;
    }
    if (v !== null && typeof v === 'object') {
      let out: { [key: string]: JsonValue } | undefined;
      const entries = Object.entries(v);
      for (let i = 0; i < entries.length; i++) {
        const [key, item] = entries[i] as [string, JsonValue];
        const next = walk(item);
        if (next !== item && out === undefined) {
          out = {};
          for (let j = 0; j < i; j++) {
            const [k, earlier] = entries[j] as [string, JsonValue];
            setOwn(out, k, earlier);
          }
        }
        if (out !== undefined) setOwn(out, key, next);
      }
      return out ?? v;
    }
    return v;
  };
  const result = walk(value);
  return { value: result, counts };
}
