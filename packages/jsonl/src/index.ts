/**
 * @packageDocumentation
 * The crash-safe JSONL backend of tidemark: one human-readable, `jq`-friendly log per session,
 * written so that a crash at any instant leaves every acknowledged batch readable and nothing
 * half-written mistaken for data. See the package README for layout, format and recovery rules.
 */

export { DEFAULT_LOCK_IDLE_MS } from './context.js';
export {
  crc32,
  crc32Utf8,
  type DecodedLine,
  decodeEventLine,
  decodeHeaderLine,
  encodeBatch,
  encodeHeader,
  FORMAT_NAME,
  FORMAT_VERSION,
  type LogHeader,
} from './format.js';
export {
  bucketOf,
  defaultRoot,
  NO_CWD_BUCKET,
  QUARANTINE_DIR,
  type SessionPaths,
  sessionPaths,
} from './layout.js';
export {
  LogScanner,
  type ProblemKind,
  type ScanBatch,
  type ScanEnd,
  type ScanOptions,
  type ScanProblem,
  type ScanReport,
  scanLog,
  settleTear,
  type TornReason,
  type TornTail,
} from './scan.js';
export {
  JsonlStore,
  type JsonlStoreOptions,
  openJsonlStore,
  repairSession,
  verifySession,
} from './store.js';
export { decodeSidecar, encodeSidecar, type Sidecar } from './summary.js';
