/**
 * @packageDocumentation
 * Session lifecycle for tidemark (contract §8): active-session pointers per project, prune into a
 * trash with a grace period, restore and purge, an append-only audit log, and verified,
 * resumable copying of sessions between any two stores.
 */
export { ACTIVE_FILE, ActivePointers, parseActiveFile } from './active.js';
export {
  AUDIT_FILE,
  type AuditAction,
  type AuditEntry,
  AuditLog,
  type AuditProblem,
  type ParsedAudit,
  parseAudit,
} from './audit.js';
export {
  type CopyOptions,
  type CopyPlan,
  type CopyResult,
  canonicalJson,
  copySession,
  eventHash,
  logHash,
  planCopy,
} from './copy.js';
export {
  appendLineDurably,
  ensurePrivateDir,
  readTextIfExists,
  withFileLock,
  writeFileAtomic,
} from './files.js';
export {
  Lifecycle,
  type LifecycleOptions,
  openLifecycle,
  type PruneOptions,
  type PruneReport,
  type PurgeReport,
  type SessionLocation,
  TRASH_ATTR,
  type TrashEntry,
} from './lifecycle.js';
export { DAY_MS, isPurgeable, type PrunePlan, planPrune } from './prune.js';
