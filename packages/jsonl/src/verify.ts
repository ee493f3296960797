// Read-only verification and explicit repair of one session, for `tidemark verify` / `repair`.
import type { ScanProblem, TornTail } from './scan.js';
import { type JsonlStoreOptions, openJsonlStore, type RepairOptions, type RepairReport } from './store.js';

/** What {@link verifySession} found. */
export interface VerifyReport {
  id: string;
  /** The log file. */
  path: string;
  /**
   * `ok`: every byte belongs to a committed batch and the last event is a boundary;
   * `interrupted`: complete events follow the last boundary (a turn cut short);
   * `torn`: the log ends in a torn fragment (see {@link VerifyReport.torn});
   * `corrupt` / `unsupported-format`: see {@link VerifyReport.problem}.
   */
  status: 'ok' | 'interrupted' | 'torn' | 'corrupt' | 'unsupported-format';
  /** Committed events before any torn tail or problem. */
  eventCount: number;
  committedSeq: number;
  interrupted: boolean;
  /** Log length in bytes. */
  bytes: number;
  torn?: TornTail;
  problem?: ScanProblem;
}

/** Checks a session's log without modifying anything (no repair, no lock, no sidecar write). */
export async function verifySession(options: JsonlStoreOptions, id: string): Promise<VerifyReport> {
  const store = await openJsonlStore(options);
  try {
    return await store.verify(id);
  } finally {
    await store.close();
  }
}

/**
 * Repairs a session explicitly: torn bytes always, the interrupted tail with `tail: 'cut'`, and a
 * corrupt log's damaged end with `dropCorrupt`. Everything removed is kept in quarantine first.
 */
export async function repairSession(
  options: JsonlStoreOptions,
  id: string,
  repair: RepairOptions = {},
): Promise<RepairReport> {
  const store = await openJsonlStore(options);
  try {
    return await store.repair(id, repair);
  } finally {
    await store.close();
  }
}
