// The errors of sealed stores. Every failure to open a sealed record is CORRUPT, naming the
// session and the seq (or the summary field) and which kind of failure it was; the kind is also
// kept on the error's `cause` (a SealedRecordError) for tools that sort failures.
import { type ErrorLocation, TidemarkError } from '@tidemark/core';

/**
 * Why a sealed record could not be opened:
 * - `tampered`: authentication failed (changed bytes, or a record moved to another session, seq,
 *   type, time or key id);
 * - `unknown-key`: sealed under a key id the keyring lacks;
 * - `plaintext`: not sealed at all (a plaintext record in a sealed store);
 * - `malformed`: has the sealed shape but its envelope cannot be parsed.
 */
export type SealedFailure = 'tampered' | 'unknown-key' | 'plaintext' | 'malformed';

/** All failure kinds. */
export const SEALED_FAILURES: readonly SealedFailure[] = [
  'tampered',
  'unknown-key',
  'plaintext',
  'malformed',
];

/** The `cause` of a CORRUPT error raised while opening a sealed record. */
export class SealedRecordError extends Error {
  override readonly name = 'SealedRecordError';
  constructor(
    /** Which kind of failure. */
    readonly failure: SealedFailure,
    message: string,
  ) {
    super(message);
  }
}

/** The failure kind of a CORRUPT error from opening a sealed record; undefined for any other error. */
export function sealedFailureOf(error: unknown): SealedFailure | undefined {
  if (!(error instanceof TidemarkError) || error.code !== 'CORRUPT') return undefined;
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof SealedRecordError ? cause.failure : undefined;
}

/** Where a sealed record lives: an event by seq, or a summary field. */
export type SealedPlace = { seq: number } | { field: 'title' | 'firstPrompt' | 'attrs' };

function describePlace(place: SealedPlace): string {
  return 'seq' in place ? `seq ${place.seq}` : `summary field ${place.field}`;
}

/** A CORRUPT error for a sealed record that could not be opened. */
export function sealedCorrupt(
  failure: SealedFailure,
  sessionId: string,
  place: SealedPlace,
  detail: string,
): TidemarkError {
  const message = `session ${sessionId} ${describePlace(place)}: ${detail}`;
  const location: ErrorLocation = 'seq' in place ? { seq: place.seq } : { field: place.field };
  return new TidemarkError('CORRUPT', message, {
    sessionId,
    location,
    cause: new SealedRecordError(failure, detail),
  });
}

/** INVALID: a write on a sealed store opened without keys. */
export function noKeys(what: string, sessionId?: string): TidemarkError {
  return new TidemarkError(
    'INVALID',
    `${what}: sealed store opened without keys: refusing to write plaintext (give keys or set TIDEMARK_KEYS)`,
    sessionId === undefined ? {} : { sessionId },
  );
}
