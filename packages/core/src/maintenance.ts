// The one maintenance interface every backend implements: a read-only check (`verify`) and an
// explicit repair. The CLI's `tidemark verify` / `repair` call it directly on any backend.
import type { SessionStore } from './store.js';

/** The health of one session, worst first when several apply: see {@link SessionHealth.status}. */
export type HealthKind = 'ok' | 'interrupted' | 'torn' | 'corrupt' | 'unsupported-format' | 'unreadable';

/** Something `verify` found, or something `repair` removed. */
export interface MaintenanceProblem {
  /**
   * `torn`: a fragment of an unfinished write at the end; `interrupted`: complete events after the
   * last boundary (a turn a crash cut short); `corrupt`: damaged data; `unsupported-format`: written
   * by a newer version; `unreadable`: the session could not be checked at all (an I/O error).
   */
  kind: 'torn' | 'interrupted' | 'corrupt' | 'unsupported-format' | 'unreadable';
  sessionId: string;
  message: string;
  /** Seq of the first event concerned. */
  seq?: number;
  /** Byte offset in {@link MaintenanceProblem.file}. */
  offset?: number;
  /** Bytes concerned. */
  bytes?: number;
  /** Row and table, for backends that store rows. */
  row?: string;
  table?: string;
  file?: string;
  /** Where the removed data was kept; set in repair reports. */
  quarantinedAt?: string;
}

/** One session's verify result. */
export interface SessionHealth {
  sessionId: string;
  status: HealthKind;
  /** Events readable before any damage. */
  eventCount?: number;
  /** Seq of the last boundary event, -1 when there is none. */
  committedSeq?: number;
  /** Empty when `status` is `ok`. */
  problems: MaintenanceProblem[];
}

/** The result of {@link StoreMaintenance.verify}. */
export interface VerifyReport {
  /** Sessions checked. */
  checked: number;
  sessions: SessionHealth[];
  /** Every problem of every session, in session order. */
  problems: MaintenanceProblem[];
}

/** What {@link StoreMaintenance.repair} may remove. */
export interface RepairOptions {
  /** `cut` also moves the interrupted tail to quarantine. Default `keep`. */
  tail?: 'keep' | 'cut';
  /**
   * Also repair a corrupt session: everything from the first damaged event on goes to quarantine
   * (later events can no longer be trusted to be contiguous). Default false.
   */
  dropCorrupt?: boolean;
}

/** The result of {@link StoreMaintenance.repair}. */
export interface RepairReport {
  sessionId: string;
  /** Events in the session afterwards. */
  eventCount: number;
  /** What was taken out, each with `quarantinedAt`. Empty when nothing needed repair. */
  removed: MaintenanceProblem[];
  /** Bytes of a torn fragment set aside. */
  tornBytes?: number;
  /** Events of the interrupted tail moved to quarantine (`tail: 'cut'`). */
  cutEvents?: number;
  /** Bytes taken out of a corrupt log (`dropCorrupt`). */
  corruptBytes?: number;
  /** Events taken out from the first damaged one on (backends that repair by rows). */
  corruptEvents?: number;
  /** Unreadable summary fields (tags, attrs) were set aside (backends that repair by rows). */
  summarySetAside?: boolean;
  /** Every quarantine location this repair wrote (paths, tables). */
  quarantined: string[];
}

/** Read-only checking and explicit repair, which every backend offers. */
export interface StoreMaintenance {
  /**
   * Checks one session (`target.id`) or every session, without modifying anything. For one
   * session, a failure to check it rejects; for all, it is recorded as an `unreadable` problem.
   */
  verify(target?: { id?: string }): Promise<VerifyReport>;
  /** Quarantines what `options` allow of the damage `verify` reports on session `id`. */
  repair(id: string, options?: RepairOptions): Promise<RepairReport>;
}

/** A store with its maintenance: what every backend factory returns. */
export type MaintainedStore = SessionStore & StoreMaintenance;
