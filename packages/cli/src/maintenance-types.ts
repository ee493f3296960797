// What checking and repairing a store reports, in the shapes `tidemark verify` and `repair`
// print: the adaptation of each backend's own functions (maintenance.ts) produces these.

/** One finding of `verify`. */
export interface VerifyFinding {
  /**
   * `torn`, `corrupt`, `problem` and `missing` (audited but missing) mean damage; `interrupted`
   * is a turn a crash cut short.
   */
  kind: 'torn' | 'corrupt' | 'interrupted' | 'problem' | 'unsupported-format' | 'missing';
  sessionId?: string;
  message: string;
  /** File and byte offset, or table and row, of the finding. */
  location?: { file?: string; offset?: number; table?: string; row?: string; seq?: number };
}

/** What `tidemark repair` asks for. */
export interface RepairRequest {
  /** Also quarantine the interrupted tail. */
  tail: 'keep' | 'cut';
  /** Also quarantine a corrupt log's damaged end (backends that support it). */
  dropCorrupt: boolean;
}

/** What a repair did. */
export interface RepairOutcome {
  tornBytes?: number;
  cutEvents?: number;
  corruptBytes?: number;
  /** Events taken out from the first damaged one on (backends that repair by rows). */
  corruptEvents?: number;
  /** Unreadable summary fields (tags, attrs) were set aside (backends that repair by rows). */
  summarySetAside?: boolean;
  /** Where removed data was kept. */
  quarantined: string[];
  /** Events in the log afterwards. */
  eventCount: number;
}

/** What a backend offers for checking and repairing its store, adapted to the CLI's shapes. */
export interface Maintenance {
  /**
   * Backend-specific read-only check of one session or all (undefined when the backend offers
   * none; the CLI then falls back to a read-based check).
   */
  verify?: (id?: string) => Promise<VerifyFinding[]>;
  /** Backend-specific explicit repair (undefined: the CLI repairs through `load`). */
  repair?: (id: string, options: RepairRequest) => Promise<RepairOutcome>;
}
