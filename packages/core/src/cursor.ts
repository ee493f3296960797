// The order of `list` and its keyset cursors: newest `updatedAt` first, ties by id. Kept apart from
// paging so that query validation (session.ts) and paging (paging.ts) both build on it.
import { TidemarkError } from './errors.js';
import type { SessionSummary } from './store.js';

/** Orders summaries for `list`: newest `updatedAt` first, ties by id ascending. */
export function compareForList(
  a: Pick<SessionSummary, 'updatedAt' | 'id'>,
  b: Pick<SessionSummary, 'updatedAt' | 'id'>,
): number {
  if (a.updatedAt !== b.updatedAt) return a.updatedAt < b.updatedAt ? 1 : -1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** The position of a list cursor: the last summary of the previous page. */
export interface ListCursor {
  updatedAt: string;
  id: string;
}

/** Encodes a keyset cursor (opaque to callers). */
export function encodeCursor(last: ListCursor): string {
  return Buffer.from(JSON.stringify([last.updatedAt, last.id]), 'utf8').toString('base64url');
}

/** Decodes a cursor from {@link encodeCursor}. @throws TidemarkError INVALID for anything else. */
export function decodeCursor(cursor: string): ListCursor {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      typeof value[0] === 'string' &&
      typeof value[1] === 'string'
    ) {
      return { updatedAt: value[0], id: value[1] };
    }
  } catch {
    // fall through to the typed error
  }
  throw new TidemarkError(
    'INVALID',
    `list: cursor ${JSON.stringify(cursor.slice(0, 40))} is not a cursor from this store`,
  );
}

/** True when `summary` comes after the cursor in list order. */
export function isAfterCursor(
  summary: Pick<SessionSummary, 'updatedAt' | 'id'>,
  cursor: ListCursor,
): boolean {
  return compareForList(summary, cursor) > 0;
}
