// The append-only audit log of lifecycle actions: one JSON object per line, fsynced per entry, so
// that a session the store lost can be told apart from one that never existed.
import { join } from 'node:path';
import { isValidId, type JsonValue } from '@tidemark/core';
import { appendLineDurably, readTextIfExists } from './files.js';

/** File name of the audit log inside the lifecycle home. */
export const AUDIT_FILE = 'audit.jsonl';

/** What happened to a session. */
export type AuditAction =
  | 'created'
  | 'deleted'
  | 'pruned'
  | 'restored'
  | 'purged'
  | 'repaired'
  | 'migrated'
  | 'imported';

const ACTIONS: ReadonlySet<string> = new Set<AuditAction>([
  'created',
  'deleted',
  'pruned',
  'restored',
  'purged',
  'repaired',
  'migrated',
  'imported',
]);

/** One line of the audit log. */
export interface AuditEntry {
  /** ISO-8601 UTC time of the action. */
  time: string;
  action: AuditAction;
  /** Session id. */
  id: string;
  /** Address of the store the action concerns (`jsonl:/x`, `sqlite:/y.db`, `memory:`). */
  store: string;
  /** Free-form details (reason, counts, target store). */
  details?: { [key: string]: JsonValue };
}

/** A line of the audit log that could not be read. */
export interface AuditProblem {
  /** 1-based line number. */
  line: number;
  message: string;
}

/** The audit log as read: entries in file order, and lines that were not entries. */
export interface ParsedAudit {
  entries: AuditEntry[];
  problems: AuditProblem[];
  /** True when the last line had no newline (a torn final write); it is ignored. */
  tornTail: boolean;
}

function isEntry(value: unknown): value is AuditEntry {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.time === 'string' &&
    typeof v.action === 'string' &&
    ACTIONS.has(v.action) &&
    isValidId(v.id) &&
    typeof v.store === 'string' &&
    (v.details === undefined ||
      (typeof v.details === 'object' && v.details !== null && !Array.isArray(v.details)))
  );
}

/** Parses audit log text. Pure; never throws: bad lines become problems. */
export function parseAudit(text: string): ParsedAudit {
  const lines = text.split('\n');
  const last = lines.pop();
  const tornTail = last !== undefined && last !== '';
  const entries: AuditEntry[] = [];
  const problems: AuditProblem[] = [];
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      problems.push({ line: i + 1, message: 'not JSON' });
      return;
    }
    if (isEntry(value)) entries.push(value);
    else problems.push({ line: i + 1, message: 'not an audit entry' });
  });
  return { entries, problems, tornTail };
}

/** The audit log at `<home>/audit.jsonl` (0600). */
export class AuditLog {
  readonly file: string;

  constructor(
    home: string,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.file = join(home, AUDIT_FILE);
  }

  /** Appends an entry durably (write + fsync) before resolving. */
  async record(
    action: AuditAction,
    id: string,
    store: string,
    details?: { [key: string]: JsonValue },
  ): Promise<AuditEntry> {
    const entry: AuditEntry = {
      time: this.now().toISOString(),
      action,
      id,
      store,
      ...(details !== undefined && { details }),
    };
    await appendLineDurably(this.file, JSON.stringify(entry));
    return entry;
  }

  /** Reads the whole log. An absent file is an empty log; a read fault is an IO error. */
  async read(): Promise<ParsedAudit> {
    const text = await readTextIfExists(this.file);
    return text === undefined ? { entries: [], problems: [], tornTail: false } : parseAudit(text);
  }

  /** Entries about one session (optionally in one store), oldest first. */
  async history(id: string, store?: string): Promise<AuditEntry[]> {
    const { entries } = await this.read();
    return entries.filter((e) => e.id === id && (store === undefined || e.store === store));
  }
}
