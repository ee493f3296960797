// Turning any failure into what the browser is shown: a typed error as JSON (code, message,
// location) and the HTTP status that says what kind of failure it was.
import { isTidemarkError, TidemarkError, type TidemarkErrorCode } from '@tidemark/core';

/** A typed error as the browser receives it. */
export interface ErrorJson {
  code: TidemarkErrorCode;
  message: string;
  sessionId?: string;
  location?: { file?: string; offset?: number; table?: string; row?: string; seq?: number };
  errno?: string;
  retryable: boolean;
}

/** Any thrown value as a TidemarkError (a foreign error becomes IO, keeping its message). */
export function typedError(error: unknown): TidemarkError {
  if (isTidemarkError(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new TidemarkError('IO', message, { cause: error });
}

/** The JSON form of a typed error. */
export function errorJson(error: unknown): ErrorJson {
  const typed = typedError(error);
  const json: ErrorJson = { code: typed.code, message: typed.message, retryable: typed.retryable };
  if (typed.sessionId !== undefined) json.sessionId = typed.sessionId;
  if (typed.location !== undefined) json.location = { ...typed.location };
  if (typed.errno !== undefined) json.errno = typed.errno;
  return json;
}

/** The HTTP status of a failure: 400 bad input, 404 absent, 503 storage unavailable, else 500. */
export function statusOf(code: TidemarkErrorCode): number {
  switch (code) {
    case 'INVALID':
      return 400;
    case 'NOT_FOUND':
      return 404;
    case 'IO':
    case 'CLOSED':
      return 503;
    default:
      return 500;
  }
}
