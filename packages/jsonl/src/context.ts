// The state one JSONL store instance shares between its parts (writer pool, reader, catalog,
// repair), in one explicit object: every module takes it as its first argument, so no part keeps
// hidden state of its own and none needs to import the store.
import {
  type BoundaryPredicate,
  boundaryPredicate,
  DEFAULT_MAX_EVENT_BYTES,
  type Durability,
  errors,
  type FileHandlePort,
  type FileSystem,
  nodeFileSystem,
  type RecoveryReport,
  type SessionMeta,
  type StoreOptions,
  type SummaryPatch,
} from '@tidemark/core';
import { defaultRoot, type SessionPaths } from './layout.js';
import type { HeldLock } from './lock.js';
import { SessionQueue } from './queue.js';

/** Options of {@link openJsonlStore}. */
export interface JsonlStoreOptions extends StoreOptions {
  /** Store root. Default `$TIDEMARK_HOME/sessions`, else `~/.tidemark/sessions`. */
  root?: string;
  /** File system port; default the real one. The fault harness passes a wrapped one. */
  fs?: FileSystem;
  /**
   * `file` (default): a writer holds `<id>.lock`, so another process or store instance appending
   * to the same session gets CONFLICT. `none`: no lock files, for a store that is certain to be
   * the only writer (no cross-process protection).
   */
  lock?: 'file' | 'none';
  /** Writers (open descriptors and locks) kept open at once; the least recently used idle one is closed beyond this. Default 64. */
  maxOpenWriters?: number;
}

/** A session this instance writes: its open log, its lock and what it knows of the log. */
export interface Writer {
  id: string;
  paths: SessionPaths;
  handle: FileHandlePort | undefined;
  lock: HeldLock | undefined;
  /** Length of the log: everything before it is committed. */
  size: number;
  nextSeq: number;
  /** `at` of the last batch (or `updatedAt` of the last update) in ms: appends record a later time. */
  lastAtMs: number;
  /** `logSize` of the sidecar on disk, -1 when unknown. */
  sidecarSize: number;
  /** Relaxed durability: batches written since the last fdatasync. */
  unsynced: boolean;
  /** What opening this writer repaired, until a load reports it. */
  repaired: RecoveryReport | undefined;
}

/** A session created here but not yet materialized: its first append writes the log. */
export interface Pending {
  meta: Omit<SessionMeta, 'formatVersion'>;
  patch: SummaryPatch;
}

/** Settings and shared mutable state of one store instance. */
export interface StoreContext {
  readonly root: string;
  readonly fs: FileSystem;
  readonly durability: Durability;
  /**
   * Flags of the kept-open log descriptors: strict durability opens them O_DSYNC (`'r+dsync'`), so
   * that one write per batch is durable when it returns, with no separate fdatasync.
   */
  readonly logFlags: 'r+' | 'r+dsync';
  readonly isBoundary: BoundaryPredicate;
  readonly limits: { maxEventBytes?: number; maxDepth?: number };
  readonly locking: boolean;
  readonly maxOpenWriters: number;
  /** Reservations of `create` not yet materialized by a first append. */
  readonly pending: Map<string, Pending>;
  /** Open writers, least recently used first. */
  readonly writers: Map<string, Writer>;
  /**
   * Descriptors of `read()` iterators under way. A caller may stop iterating without `break`
   * (so the generator's `finally` never runs); `close()` closes what they still hold.
   */
  readonly readers: Set<FileHandlePort>;
  /** The bucket each session was last found in. */
  readonly buckets: Map<string, string>;
  readonly queue: SessionQueue;
  /** Writers being retired outside their session's queue (LRU eviction): a new writer waits for them. */
  readonly retiring: Map<string, Promise<void>>;
  closed: boolean;
  /** Whether this instance synced the parent of a root it found existing (see `ensureRoot`). */
  rootEntrySynced: boolean;
}

/** Validates `options` and builds the context of a new store instance. */
export function createContext(options: JsonlStoreOptions): StoreContext {
  const durability = options.durability ?? 'strict';
  if (durability !== 'strict' && durability !== 'relaxed') {
    throw errors.invalid(`durability must be 'strict' or 'relaxed'`);
  }
  return {
    root: options.root ?? defaultRoot(),
    fs: options.fs ?? nodeFileSystem,
    durability,
    logFlags: durability === 'strict' ? 'r+dsync' : 'r+',
    isBoundary: boundaryPredicate(options.boundaryTypes),
    limits: eventLimits(options),
    locking: (options.lock ?? 'file') === 'file',
    maxOpenWriters: Math.max(1, options.maxOpenWriters ?? 64),
    pending: new Map(),
    writers: new Map(),
    readers: new Set(),
    buckets: new Map(),
    queue: new SessionQueue(),
    retiring: new Map(),
    closed: false,
    rootEntrySynced: false,
  };
}

function eventLimits(options: JsonlStoreOptions): { maxEventBytes?: number; maxDepth?: number } {
  const limits: { maxEventBytes?: number; maxDepth?: number } = {};
  if (options.maxEventBytes !== undefined) {
    // The log's reader accepts lines of one largest event plus framing; a store that accepted
    // larger events would acknowledge lines that it (and every other reader) then calls corrupt.
    if (
      !Number.isSafeInteger(options.maxEventBytes) ||
      options.maxEventBytes < 1 ||
      options.maxEventBytes > DEFAULT_MAX_EVENT_BYTES
    ) {
      throw errors.invalid(
        `maxEventBytes must be an integer from 1 to ${DEFAULT_MAX_EVENT_BYTES} (the longest event a JSONL log holds), got ${String(options.maxEventBytes)}`,
      );
    }
    limits.maxEventBytes = options.maxEventBytes;
  }
  if (options.maxDepth !== undefined) limits.maxDepth = options.maxDepth;
  return limits;
}

/** CLOSED once the store was closed. */
export function assertOpen(ctx: StoreContext): void {
  if (ctx.closed) throw errors.closed();
}
