// Ending the loss window of `durability: 'relaxed'` at close(): its commits since the last boundary
// batch sit in the `-wal` file unsynced, and only the last connection's close checkpoints (and so
// syncs) them. close() syncs the WAL itself, whoever else has the database open.
import { closeSync, constants, fsyncSync, openSync } from 'node:fs';
import { isENOENT, toIoError } from '@tidemark/core';

/**
 * The WAL file that `close()` must sync for a store of `file` opened with `durability` (pure):
 * `<file>-wal` when relaxed (strict commits were each synced already), none for `:memory:`.
 */
export function walToSyncOnClose(
  file: string,
  durability: 'strict' | 'relaxed' | undefined,
): string | undefined {
  if (durability !== 'relaxed' || file === ':memory:') return undefined;
  return `${file}-wal`;
}

/**
 * Syncs the file at `walPath`: opens it read-only, calls `fsync` on the descriptor, closes it. A
 * missing file (ENOENT) has nothing to sync. Any other failure, of the open or the fsync, is an IO
 * TidemarkError with the errno.
 */
export function syncWalFile(walPath: string, fsync: (fd: number) => void = fsyncSync): void {
  let fd: number;
  try {
    fd = openSync(walPath, constants.O_RDONLY);
  } catch (error) {
    if (isENOENT(error)) return;
    throw toIoError(error, `syncing ${walPath}`);
  }
  try {
    fsync(fd);
  } catch (error) {
    throw toIoError(error, `syncing ${walPath}`);
  } finally {
    try {
      closeSync(fd);
    } catch {
      // A read-only descriptor: closing it cannot lose data, and the fsync's outcome stands.
    }
  }
}
