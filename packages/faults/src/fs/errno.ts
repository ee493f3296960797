import { constants } from 'node:os';

/** The errno classes every error sweep injects (contract §7.1). */
export const SWEEP_ERRNOS = [
  'ENOTDIR',
  'EACCES',
  'EPERM',
  'EIO',
  'ENOSPC',
  'EROFS',
  'EMFILE',
  'EISDIR',
] as const;

/**
 * Errnos injected on top of {@link SWEEP_ERRNOS} into engine backends: EBUSY stands for lock
 * contention (`SQLITE_BUSY`), which an engine may meet at any statement, COMMIT included, and must
 * never take for success. The real lock-holder case only meets it at BEGIN.
 */
export const ENGINE_ERRNOS = ['EBUSY'] as const;

/** One of the injected errno names. */
export type ErrnoName = (typeof SWEEP_ERRNOS)[number] | (typeof ENGINE_ERRNOS)[number];

const MESSAGES: Record<ErrnoName, string> = {
  ENOTDIR: 'not a directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EIO: 'i/o error',
  ENOSPC: 'no space left on device',
  EROFS: 'read-only file system',
  EMFILE: 'too many open files',
  EISDIR: 'illegal operation on a directory',
  EBUSY: 'resource busy or locked',
};

/** An `Error` shaped like the ones `node:fs` throws: `code`, negative `errno`, `syscall`, `path`. */
export interface ErrnoError extends Error {
  code: ErrnoName;
  errno: number;
  syscall: string;
  path?: string;
}

/**
 * Makes an error indistinguishable, for a backend, from the one Node would raise for `code`
 * during `syscall` on `path`.
 */
export function makeErrnoError(code: ErrnoName, syscall: string, path?: string): ErrnoError {
  const where = path === undefined ? '' : `, ${syscall} '${path}'`;
  const error = new Error(`${code}: ${MESSAGES[code]}${where}`) as ErrnoError;
  error.code = code;
  error.errno = -(constants.errno[code] ?? 5);
  error.syscall = syscall;
  if (path !== undefined) error.path = path;
  return error;
}
