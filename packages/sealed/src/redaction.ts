// Redaction inside the sealed store: the events and summary fields a caller gives are rewritten
// by the redactor before they are sealed, and the counts are kept in the sealed attrs.
import { type JsonValue, type SessionEvent, type SummaryPatch, TidemarkError } from '@tidemark/core';
import { REDACTIONS_ATTR } from './format.js';
import { defaultRedactor, mergeCounts, type Redactor, redactJson } from './redact/index.js';

/** Counts of redactions by kind. */
export type RedactionCounts = Record<string, number>;

/** The redactor of the `redact` option: undefined (off), the default patterns, or the caller's. */
export function toRedactor(option: boolean | Redactor | undefined): Redactor | undefined {
  if (option === undefined || option === false) return undefined;
  if (option === true) return defaultRedactor;
  if (typeof option === 'object' && option !== null && typeof option.redactText === 'function') return option;
  throw new TidemarkError(
    'INVALID',
    'sealStore: redact must be a boolean or a Redactor { redactText(text) }',
  );
}

/** True when any kind was counted. */
export function anyCounted(counts: RedactionCounts): boolean {
  for (const _ in counts) return true;
  return false;
}

/** The events with their data redacted, and the counts over all of them. */
export function redactEvents(
  events: readonly SessionEvent[],
  redactor: Redactor,
): { events: SessionEvent[]; counts: RedactionCounts } {
  let counts: RedactionCounts = {};
  const out = events.map((event) => {
    const result = redactJson(event.data, redactor);
    if (anyCounted(result.counts)) counts = mergeCounts(counts, result.counts);
    return result.value === event.data ? event : { ...event, data: result.value };
  });
  return { events: out, counts };
}

/** A patch with its title, firstPrompt and attrs redacted, and the counts. */
export function redactPatch(
  patch: SummaryPatch,
  redactor: Redactor,
): { patch: SummaryPatch; counts: RedactionCounts } {
  let counts: RedactionCounts = {};
  const out: SummaryPatch = { ...patch };
  for (const field of ['title', 'firstPrompt'] as const) {
    const text = patch[field];
    if (text === undefined) continue;
    const result = redactor.redactText(text);
    out[field] = result.text;
    if (anyCounted(result.counts)) counts = mergeCounts(counts, result.counts);
  }
  if (patch.attrs !== undefined) {
    const result = redactJson(patch.attrs, redactor);
    out.attrs = result.value as { [key: string]: JsonValue };
    if (anyCounted(result.counts)) counts = mergeCounts(counts, result.counts);
  }
  return { patch: out, counts };
}

/** The counts kept in `attrs`, or none. */
export function storedCounts(attrs: { [key: string]: JsonValue } | undefined): RedactionCounts {
  const kept = attrs?.[REDACTIONS_ATTR];
  if (typeof kept !== 'object' || kept === null || Array.isArray(kept)) return {};
  const out: RedactionCounts = {};
  for (const [kind, n] of Object.entries(kept)) if (typeof n === 'number') out[kind] = n;
  return out;
}

/** `attrs` with the counts entry set to `counts` (left out when there are none). */
export function withCounts(
  attrs: { [key: string]: JsonValue },
  counts: RedactionCounts,
): { [key: string]: JsonValue } {
  const out = { ...attrs };
  delete out[REDACTIONS_ATTR];
  if (anyCounted(counts)) out[REDACTIONS_ATTR] = { ...counts };
  return out;
}
