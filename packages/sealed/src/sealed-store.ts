// What a sealed store is: its options, what its append resolves, its interface, and the size a
// sealed event may reach (for the inner store's limit). The store itself is in store.ts.
import type {
  AppendOptions,
  AppendResult,
  EventLimits,
  RepairOptions,
  RepairReport,
  SessionEvent,
  SessionStore,
  StoreCapabilities,
  VerifyReport,
} from '@tidemark/core';
import type { Keyring, KeysOption } from './keyring.js';
import type { Redactor } from './redact/index.js';

/** Options of {@link sealStore}. */
export interface SealedStoreOptions {
  /**
   * Keys (a Keyring, keys in code, or `TIDEMARK_KEYS` text), or undefined: then the store can
   * list, has, delete and read (showing sealed values as they are stored), but append, update and
   * a create with a title reject with INVALID.
   */
  keys: KeysOption;
  /**
   * Limits on the plaintext events (default: core's, 256 levels and 16 MiB). The inner store sees
   * only the sealed form (depth 1, about 4/3 of the size), so these are checked here; give the inner
   * store a `maxEventBytes` of at least `sealedEventBytes(limit)`.
   */
  limits?: EventLimits;
  /**
   * Opt-in redaction before sealing: `true` for the default patterns, or a Redactor. Event data,
   * title, firstPrompt and attrs are redacted; the counts are kept in the sealed attrs under
   * `"tidemark:redactions"`, and `append` resolves the batch's counts as `redactions`.
   */
  redact?: boolean | Redactor;
}

/** What a sealed store's append resolves: the next seq, and the batch's redactions when there were any. */
export interface SealedAppendResult extends AppendResult {
  /** Secrets replaced in this batch, by kind (present only when redaction replaced something). */
  redactions?: Record<string, number>;
}

/** The size an event of `bytes` serialized bytes may reach once sealed (for the inner store's limit). */
export function sealedEventBytes(bytes: number): number {
  return Math.ceil(((bytes + 16) * 4) / 3) + 256;
}

/** A sealed store: a SessionStore whose event data and content summary fields are sealed in its inner store. */
export interface SealedStore extends SessionStore {
  /** The store holding the sealed records. */
  readonly inner: SessionStore;
  /** The keys, or undefined for a store opened without keys. */
  readonly keyring: Keyring | undefined;
  /**
   * Appends as SessionStore.append does (with `options.after` checked as {@link SealedStore.capabilities}
   * says); resolves the batch's redaction counts too.
   */
  append(id: string, events: readonly SessionEvent[], options?: AppendOptions): Promise<SealedAppendResult>;
  /**
   * `appendAfter` is the inner store's (`checksAppendAfter(inner)`, read once when the sealed store
   * is made): the sealed store hands `after` on sealed, so it is checked exactly when the inner
   * store checks it.
   */
  readonly capabilities: StoreCapabilities;
  /** The inner store's verify; with keys, every event of each readable session is opened too (a `corrupt` problem with its seq). */
  verify(target?: { id?: string }): Promise<VerifyReport>;
  /** The inner store's repair. */
  repair(id: string, options?: RepairOptions): Promise<RepairReport>;
}
