/**
 * @packageDocumentation
 * Sealed sessions: authenticated encryption at rest (AES-256-GCM, node:crypto) of each event's
 * `data` and of the summary's `title`, `firstPrompt` and `attrs`, over any SessionStore.
 */

export {
  type EventToSeal,
  MAX_GROUP_BYTES,
  openEvent,
  openEvents,
  SealedEventOpener,
  sealBatch,
  sealEvents,
} from './batch.js';
export {
  noKeys,
  SEALED_FAILURES,
  type SealedFailure,
  SealedRecordError,
  sealedCorrupt,
  sealedFailureOf,
} from './errors.js';
export {
  BATCH_SEALED_VERSION,
  checkSealedEvent,
  isSealedData,
  isSealedText,
  maxSealableTextBytes,
  openSummary,
  REDACTIONS_ATTR,
  SEALED_KEY,
  SEALED_VERSION,
  type SealedField,
  sealAttrs,
  sealEvent,
  sealedKeyId,
  sealSummaryFields,
  sealText,
} from './format.js';
export { KEY_ID_PATTERN, Keyring, type KeyringInput, type KeysOption, MASTER_KEY_BYTES } from './keyring.js';
export { openBatchOf } from './reads.js';
export * from './redact/index.js';
// Key rotation: re-seal every session under the current key.
export * from './rekey/index.js';
export {
  type SealedAppendResult,
  type SealedStore,
  type SealedStoreOptions,
  sealedEventBytes,
  sealStore,
} from './store.js';
