// The state one JSONL store instance shares between its parts (writer pool, reader, catalog,
// repair), in one explicit object: every module takes it as its first argument, so no part keeps
// hidden state of its own and none needs to import the store.
import {
  type BoundaryPredicate,
  backendOptionNames,
  type Durability,
  errors,
  type FileHandlePort,
  type FileSystem,
  type KeyedQueue,
  nodeFileSystem,
  type Reservations,
  type ResolvedStoreOptions,
  type StoreOptions,
} from '@tidemark/core';
import type { LastEvent } from './after.js';
import type { CatalogState } from './catalog-index.js';
import { defaultRoot, type SessionPaths } from './layout.js';
import type { HeldLock } from './lock.js';
import type { TornReason } from './scan.js';

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
  /**
   * How long, in ms, a writer keeps its session's lock (and log descriptor) once idle: no
   * operation of this store using it has started, run or been queued for that long. Then it syncs
   * what relaxed mode owes, records its state and releases the lock, so that another process can
   * write the session; its next append takes the lock again and checks the log against what it
   * knew first. Default {@link DEFAULT_LOCK_IDLE_MS} (250): another process can write within about
   * 0.3 s of the last append, and a writer appending more often than that keeps its lock.
   * `Infinity` (or anything above 2^31 - 1, a timer's limit) keeps the lock until `close()` or
   * LRU eviction; `0` releases it right after every operation. Ignored with `lock: 'none'`.
   */
  lockIdleMs?: number;
}

/** Default of {@link JsonlStoreOptions.lockIdleMs}. */
export const DEFAULT_LOCK_IDLE_MS = 250;

/** The longest delay `setTimeout` honours (a longer one fires at once). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Every name {@link JsonlStoreOptions} adds to the shared options; any other is refused. */
export const JSONL_OPTION_NAMES = backendOptionNames<JsonlStoreOptions>({
  root: true,
  fs: true,
  lock: true,
  maxOpenWriters: true,
  lockIdleMs: true,
});

/** A session this instance writes: its open log, its lock and what it knows of the log. */
export interface Writer {
  id: string;
  paths: SessionPaths;
  handle: FileHandlePort | undefined;
  lock: HeldLock | undefined;
  /** Length of the log: everything before it is committed. */
  size: number;
  nextSeq: number;
  /**
   * The log's last event when this writer knows it without a read (it wrote it, its opening scan
   * or an earlier check decoded it), for append's check of `after`; undefined when it does not
   * (it took the lock again, a tail cut changed the log's end, the event is too large to keep).
   */
  last: LastEvent | undefined;
  /** `at` of the last batch (or `updatedAt` of the last update) in ms: appends record a later time. */
  lastAtMs: number;
  /** `logSize` of the sidecar on disk, -1 when unknown. */
  sidecarSize: number;
  /** Relaxed durability: batches written since the last fdatasync. */
  unsynced: boolean;
  /** The torn tail opening this writer set aside, until a load or repair reports it. */
  repaired: TornRepair | undefined;
  /** `performance.now()` when an operation last started or finished using this writer. */
  usedAt: number;
  /** The timer that releases the writer once idle (see `lockIdleMs`); undefined when none runs. */
  idleTimer: ReturnType<typeof setTimeout> | undefined;
}

/**
 * What a writer released while idle knew of its log, kept so that taking the lock again costs a
 * check of the log's end instead of a scan of the whole log. Only ever a hint: it is used only
 * when the log, read again under the lock, still has exactly this length and these last bytes.
 */
export interface ParkedWriter {
  paths: SessionPaths;
  size: number;
  nextSeq: number;
  lastAtMs: number;
  sidecarSize: number;
  repaired: TornRepair | undefined;
  /** The last bytes of the log before `size` (the closing line of its last batch, CRC included). */
  tail: Buffer;
}

/** A torn tail set aside when a writer opened its log. */
export interface TornRepair {
  tornBytes: number;
  quarantinedAt: string;
  /** Where the fragment started in the log (the log was truncated there). */
  offset: number;
  /** The seq the fragment's batch would have started with. */
  seq: number;
  reason: TornReason;
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
  readonly locking: boolean;
  readonly maxOpenWriters: number;
  /** See {@link JsonlStoreOptions.lockIdleMs}; Infinity when writers never release while idle. */
  readonly lockIdleMs: number;
  /** Writers released while idle (or evicted, or handed over), least recently parked first. */
  readonly parked: Map<string, ParkedWriter>;
  /**
   * The first fault of a writer released in the background (a relaxed-mode fdatasync that failed
   * when it went idle): nobody waited for it then, so `close()` reports it.
   */
  backgroundFailure: unknown;
  /** The store's reservations (read only here): a reserved id's cwd tells where its log would be. */
  readonly reservations: Pick<Reservations, 'get' | 'has'>;
  /** Open writers, least recently used first. */
  readonly writers: Map<string, Writer>;
  /**
   * Descriptors of `read()` iterators under way. A caller may stop iterating without `break`
   * (so the generator's `finally` never runs); `close()` closes what they still hold.
   */
  readonly readers: Set<FileHandlePort>;
  /** The bucket each session was last found in. */
  readonly buckets: Map<string, string>;
  /** The store's per-session queue: the writer pool asks it which sessions are busy. */
  readonly queue: KeyedQueue;
  /** Writers being retired outside their session's queue (LRU eviction): a new writer waits for them. */
  readonly retiring: Map<string, Promise<void>>;
  /** CLOSED once the store was closed: for work that outlives a call (streams, list gathering). */
  readonly assertOpen: () => void;
  /** Whether this instance synced the parent of a root it found existing (see `ensureRoot`). */
  rootEntrySynced: boolean;
  /**
   * The catalog list reads instead of every sidecar; undefined with `lock: 'none'`, whose writers
   * leave no lock file to tell list which sessions may be ahead of the catalog.
   */
  readonly catalog: CatalogState | undefined;
}

/** What a store instance shares with its parts: the base class's state and rules. */
export interface StoreBaseState {
  settings: ResolvedStoreOptions;
  reservations: Pick<Reservations, 'get' | 'has'>;
  queue: KeyedQueue;
  assertOpen: () => void;
  /** Makes the catalog state of a store with lock files (catalog-file.ts's newCatalogState). */
  newCatalog: (fs: FileSystem, root: string) => CatalogState;
}

/**
 * Builds the context of a new store instance. The shared options were validated by the base
 * class (`settings`); the JSONL-only ones are read here.
 */
export function createContext(options: JsonlStoreOptions, base: StoreBaseState): StoreContext {
  const { durability, isBoundary } = base.settings;
  const root = options.root ?? defaultRoot();
  const fs = options.fs ?? nodeFileSystem;
  const locking = (options.lock ?? 'file') === 'file';
  const lockIdleMs = options.lockIdleMs ?? DEFAULT_LOCK_IDLE_MS;
  if (typeof lockIdleMs !== 'number' || Number.isNaN(lockIdleMs) || lockIdleMs < 0)
    throw errors.invalid(
      `openJsonlStore: lockIdleMs must be a number >= 0 (or Infinity), got ${String(lockIdleMs)}`,
    );
  return {
    root,
    fs,
    durability,
    logFlags: durability === 'strict' ? 'r+dsync' : 'r+',
    isBoundary,
    locking,
    maxOpenWriters: Math.max(1, options.maxOpenWriters ?? 64),
    lockIdleMs: locking && lockIdleMs <= MAX_TIMER_MS ? lockIdleMs : Number.POSITIVE_INFINITY,
    parked: new Map(),
    backgroundFailure: undefined,
    reservations: base.reservations,
    writers: new Map(),
    readers: new Set(),
    buckets: new Map(),
    queue: base.queue,
    retiring: new Map(),
    assertOpen: base.assertOpen,
    rootEntrySynced: false,
    catalog: locking ? base.newCatalog(fs, root) : undefined,
  };
}
