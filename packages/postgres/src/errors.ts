// Maps pg failures onto the error codes of contract §3. Pure: no I/O, so every branch is tested
// directly. The rule: a storage fault is an error, never absence and never loss — no SQLSTATE is
// ever turned into NOT_FOUND here (a missing table, 42P01, is IO: the store is broken, not empty).
import { errnoOf, isRetryableCode, isTidemarkError, TidemarkError } from '@tidemark/core';

/** What the failing call was doing, for messages and CORRUPT locations. */
export interface PgErrorContext {
  /** What was being done, e.g. `appending to session abc`. */
  what: string;
  /** Session concerned, when there is one. */
  sessionId?: string;
  /**
   * True when the failure may have come after the server received a write's commit (a COMMIT, or
   * an autocommit write statement, in flight when the connection was lost): the write may or may
   * not have landed, so the error says `outcome unknown`.
   */
  inFlightCommit?: boolean;
  /** Strings that must never appear in a message (the connection password). */
  secrets?: readonly string[];
}

/** The pg driver's own messages for a connection that is gone; they carry no SQLSTATE. */
const CONNECTION_LOST_MESSAGES = [
  'Connection terminated',
  'connection terminated',
  'Client has encountered a connection error',
  'Client was closed and is not queryable',
  'timeout exceeded when trying to connect',
  'Connection terminated due to connection timeout',
  'Query read timeout',
];

/** Network errno codes of a lost or refused connection. */
const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** The SQLSTATE of a server error (five characters), if the error carries one. */
export function sqlstateOf(error: unknown): string | undefined {
  const code = errnoOf(error);
  return code !== undefined && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/**
 * True when the connection that saw `error` is unusable or suspect: a network error, the driver's
 * "connection terminated", a server-side termination (class 08, 57P01..57P03), or a timeout that
 * may have left the session mid-statement (57014 statement timeout, 55P03 lock timeout, 25P03 idle
 * in transaction). Such a client is destroyed (`release(err)`), never returned to the pool.
 */
export function isConnectionFault(error: unknown): boolean {
  const state = sqlstateOf(error);
  if (state !== undefined) {
    return (
      state.startsWith('08') ||
      state === '57P01' ||
      state === '57P02' ||
      state === '57P03' ||
      state === '57014' ||
      state === '55P03' ||
      state === '25P03'
    );
  }
  const code = errnoOf(error);
  if (code !== undefined && NETWORK_CODES.has(code)) return true;
  const message = error instanceof Error ? error.message : String(error);
  return CONNECTION_LOST_MESSAGES.some((text) => message.includes(text));
}

/** True for a lost connection proper (not a timeout): the outcome of an in-flight commit is unknown. */
export function isConnectionLoss(error: unknown): boolean {
  const state = sqlstateOf(error);
  if (state === '57014' || state === '55P03' || state === '25P03') return false;
  return isConnectionFault(error);
}

/** 40001 serialization failure, 40P01 deadlock: the store retries these a bounded number of times. */
export function isTransientConflict(error: unknown): boolean {
  const state = sqlstateOf(isTidemarkError(error) ? error.cause : error);
  return state === '40001' || state === '40P01';
}

/** 23505 unique violation: on (session_id, seq) it means another writer stored these seqs first. */
export function isUniqueViolation(error: unknown): boolean {
  return sqlstateOf(isTidemarkError(error) ? error.cause : error) === '23505';
}

/**
 * Whether a retry of the same call may succeed without anyone changing the server's configuration:
 * connection classes, resource classes, timeouts, transient conflicts. Permission denied (42501),
 * a missing table (42P01) and a read-only transaction (25006) are not: they need an operator.
 */
export function isRetryableState(state: string): boolean {
  return (
    state.startsWith('08') ||
    state.startsWith('53') ||
    state === '57P01' ||
    state === '57P02' ||
    state === '57P03' ||
    state === '57014' ||
    state === '55P03' ||
    state === '25P03' ||
    state === '40001' ||
    state === '40P01'
  );
}

/** Removes every secret from a text (passwords echoed by a driver or a connection string). */
export function redact(text: string, secrets: readonly string[] = []): string {
  let out = text.replace(/(postgres(?:ql)?:\/\/[^:/@\s]*:)[^@\s]*@/gi, '$1***@');
  for (const secret of secrets) if (secret !== '') out = out.split(secret).join('***');
  return out;
}

/** Marker that an error's write may or may not have been committed (see {@link commitOutcomeOf}). */
export type CommitOutcome = 'unknown';

/**
 * `'unknown'` when `error` is an IO error of a write whose commit was in flight when the connection
 * was lost: the write may have landed. Retrying the same batch resolves it (an idempotent retry
 * succeeds without writing twice). `undefined` for every other error.
 */
export function commitOutcomeOf(error: unknown): CommitOutcome | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  return (error as { outcome?: unknown }).outcome === 'unknown' ? 'unknown' : undefined;
}

/**
 * Turns anything pg threw into a {@link TidemarkError}:
 * - a TidemarkError passes through unchanged;
 * - XX001/XX002 (data or index corrupted) become CORRUPT;
 * - everything else becomes IO, with `errno` set to the SQLSTATE or the network errno, and
 *   `retryable` for connection classes (08*, 57P01..57P03), resources (53*), timeouts and
 *   transient conflicts; never for 42501, 42P01, 25006 and the like.
 * A lost connection while a commit was in flight adds `outcome: 'unknown'` (an own enumerable
 * property, also said in the message). Unique violations are not special here: only `append`
 * knows that one means CONFLICT.
 */
export function mapPgError(error: unknown, context: PgErrorContext): TidemarkError {
  if (isTidemarkError(error)) return error;
  const state = sqlstateOf(error);
  const code = state ?? errnoOf(error);
  const detail = redact(error instanceof Error ? error.message : String(error), context.secrets);
  const prefix = `${context.what}: ${code === undefined ? '' : `${code}: `}${detail}`;
  if (state === 'XX001' || state === 'XX002') {
    return new TidemarkError('CORRUPT', `${prefix} (the server reports damaged data)`, {
      cause: error,
      errno: state,
      location: {
        table: 'events',
        ...(context.sessionId !== undefined && { row: `session_id=${context.sessionId}` }),
      },
      ...(context.sessionId !== undefined && { sessionId: context.sessionId }),
    });
  }
  const lost = isConnectionLoss(error);
  const unknown = lost && context.inFlightCommit === true;
  const retryable =
    state !== undefined ? isRetryableState(state) : lost || isRetryableCode(code) || isConnectionFault(error);
  const mapped = new TidemarkError(
    'IO',
    unknown
      ? `${prefix} (outcome unknown: the connection was lost while the write was committing; it may have landed — retry the same call to resolve it)`
      : prefix,
    {
      cause: error,
      ...(code !== undefined && { errno: code }),
      ...(context.sessionId !== undefined && { sessionId: context.sessionId }),
      retryable,
    },
  );
  if (unknown) Object.defineProperty(mapped, 'outcome', { value: 'unknown', enumerable: true });
  return mapped;
}
