// The World's cursor pages over an already ordered list: the cursor is the key of the last item
// handed out, on every page that has one, so a page after it starts right behind it whatever was
// added since.
import type { PaginatedResponse, PaginationOptions } from '@workflow/world';

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;

/** Pages `items` (ascending by `key`) as the World pages: `sortOrder` (default `defaultOrder`), `limit`, `cursor`. */
export function page<T>(
  items: readonly T[],
  key: (item: T) => string,
  options: PaginationOptions | undefined,
  defaultOrder: 'asc' | 'desc',
  compare: (a: string, b: string) => number = (a, b) => (a < b ? -1 : a > b ? 1 : 0),
): PaginatedResponse<T> {
  const order = options?.sortOrder ?? defaultOrder;
  const limit = Math.min(Math.max(1, options?.limit ?? DEFAULT_LIMIT), MAX_LIMIT);
  const ordered = order === 'asc' ? [...items] : [...items].reverse();
  const cursor = options?.cursor;
  const start =
    cursor === undefined || cursor === ''
      ? ordered
      : ordered.filter((item) =>
          order === 'asc' ? compare(key(item), cursor) > 0 : compare(key(item), cursor) < 0,
        );
  const data = start.slice(0, limit);
  const hasMore = start.length > limit;
  const last = data.at(-1);
  // The key of the last item even on the last page: the runtime loads a run's new events with
  // the cursor of its previous load, and without one it reloads the whole log on every replay
  // (it logs "Event cursor missing after initial load … a bug in the World implementation").
  return { data, cursor: last !== undefined ? key(last) : null, hasMore };
}

/** Compares seq cursors numerically. */
export const bySeq = (a: string, b: string): number => Number(a) - Number(b);
