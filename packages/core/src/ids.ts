import { v7 as uuidv7 } from 'uuid';
import { TidemarkError } from './errors.js';

/** Session ids: 1 to 128 characters of `[A-Za-z0-9._-]`, not starting with `.`. */
export const ID_PATTERN = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;

/** True when `id` is a valid session id. */
export function isValidId(id: unknown): id is string {
  return typeof id === 'string' && ID_PATTERN.test(id);
}

/**
 * Asserts a valid session id. Ids become file names, so the rule also keeps them inside their
 * bucket: no separators, no `..`, no hidden names.
 * @throws TidemarkError INVALID.
 */
export function assertValidId(id: unknown, what = 'id'): asserts id is string {
  if (isValidId(id)) return;
  const shown =
    typeof id === 'string' ? JSON.stringify(id.length > 60 ? `${id.slice(0, 60)}…` : id) : String(id);
  throw new TidemarkError(
    'INVALID',
    `${what}: ${shown} is not a session id (1 to 128 characters of A-Z a-z 0-9 . _ -, not starting with '.')`,
  );
}

/** A new time-ordered session id (UUIDv7): ids sort by creation time. */
export function generateId(): string {
  return uuidv7();
}
