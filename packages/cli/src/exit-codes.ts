// Exit codes of the tidemark CLI: one per class of failure, so that scripts can tell a missing
// session from a broken disk without parsing messages.
import { isTidemarkError, type TidemarkErrorCode } from '@tidemark/core';

/** Codes the CLI adds to the TidemarkError codes. */
export type CliOnlyCode = 'USAGE' | 'PROBLEMS' | 'AUDITED_MISSING' | 'UNAVAILABLE' | 'INTERNAL';

/** Every code the CLI prints in `tidemark: <CODE>: message`. */
export type CliCode = TidemarkErrorCode | CliOnlyCode;

/** Exit status per code (documented in the README). */
export const EXIT_CODES: Readonly<Record<CliCode | 'OK', number>> = {
  OK: 0,
  PROBLEMS: 1,
  USAGE: 2,
  NOT_FOUND: 3,
  ALREADY_EXISTS: 4,
  CONFLICT: 5,
  INVALID: 6,
  CORRUPT: 7,
  UNSUPPORTED_FORMAT: 8,
  IO: 9,
  CLOSED: 10,
  AUDITED_MISSING: 11,
  UNAVAILABLE: 12,
  INTERNAL: 70,
};

/** An expected failure of the CLI itself (bad usage, unavailable backend, audited-missing session). */
export class CliError extends Error {
  override readonly name = 'CliError';
  constructor(
    readonly code: CliCode,
    message: string,
  ) {
    super(message);
  }
}

/** The code and one-line message of any thrown value; unknown errors are INTERNAL. */
export function describeFailure(error: unknown): { code: CliCode; message: string; expected: boolean } {
  if (error instanceof CliError) return { code: error.code, message: oneLine(error.message), expected: true };
  if (isTidemarkError(error)) {
    const where = error.location;
    const at =
      where === undefined
        ? ''
        : ` (at ${[
            where.file,
            where.offset !== undefined ? `byte ${where.offset}` : undefined,
            where.table,
            where.row,
            where.seq !== undefined ? `seq ${where.seq}` : undefined,
          ]
            .filter((x) => x !== undefined)
            .join(', ')})`;
    return { code: error.code, message: oneLine(`${error.message}${at}`), expected: true };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { code: 'INTERNAL', message: oneLine(message), expected: false };
}

/** Collapses a message onto one line. */
export function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
