/**
 * The one error type of tidemark. Every failure of every operation rejects with a
 * {@link TidemarkError} whose {@link TidemarkError.code | code} says what kind of failure it was.
 *
 * The rule behind the codes: a storage fault is an error, never absence and never loss.
 * `NOT_FOUND` is reserved for a session that truly does not exist.
 */

/** The codes of contract §3. */
export type TidemarkErrorCode =
  | 'NOT_FOUND'
  | 'ALREADY_EXISTS'
  | 'CONFLICT'
  | 'INVALID'
  | 'CORRUPT'
  | 'UNSUPPORTED_FORMAT'
  | 'IO'
  | 'CLOSED';

/** All codes, for exhaustive checks and CLI output. */
export const ERROR_CODES: readonly TidemarkErrorCode[] = [
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'CONFLICT',
  'INVALID',
  'CORRUPT',
  'UNSUPPORTED_FORMAT',
  'IO',
  'CLOSED',
];

/** Where corrupt data was found: a file and byte offset, or a table row. */
export interface ErrorLocation {
  /** File path (file backends). */
  file?: string;
  /** Byte offset in {@link ErrorLocation.file}. */
  offset?: number;
  /** Table name (database backends). */
  table?: string;
  /** Row key, e.g. `session_id=abc seq=12`. */
  row?: string;
  /** Sequence number of the event concerned, when known. */
  seq?: number;
  /** Summary field concerned (`title`, `firstPrompt`, `attrs`), e.g. a sealed field that fails to open. */
  field?: string;
}

/** Brand shared by every copy of this package, so that duplicated installs still recognise each other. */
const BRAND: unique symbol = Symbol.for('tidemark.error');

/** Options accepted by the {@link TidemarkError} constructor. */
export interface TidemarkErrorOptions {
  /** The original error (an errno error, a driver error). */
  cause?: unknown;
  /** Session id concerned, when there is one. */
  sessionId?: string;
  /** Where corrupt data was found (CORRUPT). */
  location?: ErrorLocation;
  /** The errno name (`EIO`, `ENOSPC`) or driver code (`SQLITE_BUSY`) of the cause. */
  errno?: string;
  /** Whether retrying the same call later can help (IO). */
  retryable?: boolean;
}

/**
 * A typed tidemark failure. `instanceof` works across copies of the package through
 * {@link isTidemarkError}, which checks a brand instead of the prototype.
 */
export class TidemarkError extends Error {
  override readonly name = 'TidemarkError';
  /** What kind of failure this is. */
  readonly code: TidemarkErrorCode;
  /** Session id concerned, when there is one. */
  readonly sessionId: string | undefined;
  /** Where corrupt data was found (CORRUPT). */
  readonly location: ErrorLocation | undefined;
  /** The errno name or driver code of the underlying fault (IO). */
  readonly errno: string | undefined;
  /** Whether retrying later can help. Always false for codes other than IO and CONFLICT. */
  readonly retryable: boolean;
  /** Brand for cross-realm / duplicate-package checks. */
  readonly [BRAND] = true as const;

  constructor(code: TidemarkErrorCode, message: string, options: TidemarkErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.sessionId = options.sessionId;
    this.location = options.location;
    this.errno = options.errno;
    this.retryable = options.retryable ?? false;
  }

  /** A plain object for logs and `--json` output. */
  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      code: this.code,
      message: this.message,
      ...(this.sessionId !== undefined && { sessionId: this.sessionId }),
      ...(this.location !== undefined && { location: this.location }),
      ...(this.errno !== undefined && { errno: this.errno }),
      retryable: this.retryable,
    };
  }
}

/** True when `value` is a {@link TidemarkError} (from any copy of this package). */
export function isTidemarkError(value: unknown, code?: TidemarkErrorCode): value is TidemarkError {
  if (typeof value !== 'object' || value === null) return false;
  const branded = (value as { [BRAND]?: unknown })[BRAND] === true;
  if (!branded) return false;
  return code === undefined || (value as TidemarkError).code === code;
}

/** The `code` property of a Node errno error or driver error, if any. */
export function errnoOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

/** True only for "no such file or directory": the one errno that means absence. */
export function isENOENT(error: unknown): boolean {
  return errnoOf(error) === 'ENOENT';
}

/**
 * Errno names and driver codes for which a later retry may succeed without anyone changing
 * the storage's configuration (a lock released, a descriptor freed, space freed).
 */
const RETRYABLE_CODES = new Set([
  'EAGAIN',
  'EWOULDBLOCK',
  'EBUSY',
  'EINTR',
  'EMFILE',
  'ENFILE',
  'ENOSPC',
  'EDQUOT',
  'ETIMEDOUT',
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
  'SQLITE_FULL',
]);

/** Whether an errno name or driver code describes a fault that a retry may get past. */
export function isRetryableCode(code: string | undefined): boolean {
  if (code === undefined) return false;
  if (RETRYABLE_CODES.has(code)) return true;
  // Extended SQLite codes such as SQLITE_BUSY_SNAPSHOT share the primary code's nature.
  for (const primary of ['SQLITE_BUSY', 'SQLITE_LOCKED']) if (code.startsWith(`${primary}_`)) return true;
  return false;
}

/**
 * Wraps any storage fault as an IO {@link TidemarkError}, keeping the original as `cause`.
 * A value that already is a TidemarkError is returned unchanged.
 *
 * @param what - what was being done, for the message (`reading /x/y.jsonl`).
 */
export function toIoError(error: unknown, what: string, sessionId?: string): TidemarkError {
  if (isTidemarkError(error)) return error;
  const errno = errnoOf(error);
  const detail = error instanceof Error ? error.message : String(error);
  return new TidemarkError('IO', `${what}: ${detail}`, {
    cause: error,
    ...(errno !== undefined && { errno }),
    ...(sessionId !== undefined && { sessionId }),
    retryable: isRetryableCode(errno),
  });
}

/** Shorthand constructors that keep messages consistent across backends. */
export const errors = {
  notFound: (id: string) => new TidemarkError('NOT_FOUND', `session ${id} does not exist`, { sessionId: id }),
  alreadyExists: (id: string) =>
    new TidemarkError('ALREADY_EXISTS', `session ${id} already exists`, { sessionId: id }),
  closed: () => new TidemarkError('CLOSED', 'the store is closed'),
  invalid: (message: string, sessionId?: string) =>
    new TidemarkError('INVALID', message, sessionId === undefined ? {} : { sessionId }),
  conflict: (message: string, sessionId: string, retryable = false) =>
    new TidemarkError('CONFLICT', message, { sessionId, retryable }),
  corrupt: (message: string, location: ErrorLocation, sessionId?: string, cause?: unknown) =>
    new TidemarkError('CORRUPT', message, {
      location,
      ...(sessionId !== undefined && { sessionId }),
      ...(cause !== undefined && { cause }),
    }),
  unsupportedFormat: (found: number, known: number, sessionId?: string) =>
    new TidemarkError(
      'UNSUPPORTED_FORMAT',
      `format version ${found} is newer than this code knows (${known}); upgrade tidemark`,
      sessionId === undefined ? {} : { sessionId },
    ),
};
