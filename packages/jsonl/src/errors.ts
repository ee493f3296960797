// Storage faults as TidemarkErrors. The one rule: ENOENT, and only ENOENT, means absence; callers
// test for it explicitly where absence is a possible answer. Everything else is IO.
import { errors, isENOENT, type TidemarkError, toIoError } from '@tidemark/core';
import { FORMAT_VERSION } from './format.js';
import type { ScanProblem } from './scan.js';

/** Runs a storage step; any fault becomes an IO TidemarkError naming `what`. */
export async function io<T>(what: string, sessionId: string | undefined, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    throw toIoError(error, what, sessionId);
  }
}

/**
 * Runs a storage step where ENOENT means "not there": resolves `undefined` for ENOENT, throws IO
 * for every other fault.
 */
export async function ioOrAbsent<T>(
  what: string,
  sessionId: string | undefined,
  step: () => Promise<T>,
): Promise<T | undefined> {
  try {
    return await step();
  } catch (error) {
    if (isENOENT(error)) return undefined;
    throw toIoError(error, what, sessionId);
  }
}

/** The TidemarkError for a scan problem in `file`. */
export function problemError(problem: ScanProblem, file: string, sessionId: string): TidemarkError {
  if (problem.kind === 'unsupported-format') {
    return errors.unsupportedFormat(problem.version ?? Number.NaN, FORMAT_VERSION, sessionId);
  }
  return errors.corrupt(
    `session ${sessionId}: ${problem.message} (${file} at byte ${problem.offset})`,
    { file, offset: problem.offset, ...(problem.seq !== undefined && { seq: problem.seq }) },
    sessionId,
  );
}

/** Best-effort cleanup: errors are ignored because a more important error is already on its way. */
export async function quietly(step: () => Promise<unknown>): Promise<void> {
  try {
    await step();
  } catch {
    // ignored on purpose: see above
  }
}

/** CORRUPT: the log of `id` has the header of another session (a copied or renamed file). */
export function foreignLog(file: string, id: string, owner: string): TidemarkError {
  return errors.corrupt(`session ${id}: ${file} holds the log of session ${owner}`, { file, offset: 0 }, id);
}
