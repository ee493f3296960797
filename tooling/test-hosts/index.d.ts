import type { SessionStore } from '@tidemark/core';

/** Connection string of the PostgreSQL test server (TIDEMARK_PG_URL, default the local `test` database). */
export declare const PG_URL: string;

/** Where a store lives, as plain data that another process can open. */
export interface StoreAddress {
  backend: 'jsonl' | 'sqlite' | 'postgres';
  /** JSONL root, SQLite file, or PostgreSQL connection string. */
  location: string;
  /** PostgreSQL schema. */
  schema?: string;
  /** Further factory options (durability, …). */
  options?: Record<string, unknown>;
}

/** A fresh shared store and how to remove it. */
export interface SharedStore {
  address: StoreAddress;
  cleanup(): Promise<void>;
}

/** A backend whose store several processes can share. */
export interface SharedBackend {
  name: 'jsonl' | 'sqlite' | 'postgres';
  /** A fresh, empty store of this backend. */
  create(options?: Record<string, unknown>): Promise<SharedStore>;
}

/** JSONL and SQLite, and PostgreSQL when its server answers (with CI=true a missing server throws). */
export declare function sharedBackends(): Promise<SharedBackend[]>;
/**
 * Two store instances over one new shared store of `backend`, as two hosts open it (JSONL ones let
 * go of a session's writer lock right after each operation), and `close`, which closes both and
 * removes the store.
 */
export declare function openTwoInstances(
  backend: SharedBackend,
): Promise<{ storeA: SessionStore; storeB: SessionStore; close(): Promise<void> }>;
/** Opens the store at `address` in this process. */
export declare function openStoreAt(address: StoreAddress): Promise<SessionStore>;
/** True when the PostgreSQL test server answers. */
export declare function postgresAnswers(): Promise<boolean>;

/** A host process with one long-lived adapter object over a shared store. */
export interface Host {
  readonly pid: number | undefined;
  /** Runs `adapterObject[method](...args)` in the host; a TidemarkError keeps its code. */
  call<T = unknown>(method: string, ...args: unknown[]): Promise<T>;
  /**
   * Calls the object's `close()` if any and closes the store. The process is then kept for a later
   * {@link startHost} (a new store handle and adapter object, the modules already loaded), or
   * killed when either close failed. Later calls reject.
   */
  close(): Promise<void>;
  /** Kills the process (SIGKILL by default) and waits for it to end. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** Options of {@link startHost}. */
export interface HostOptions {
  /** Passed to the host module's default export as its second argument (structured-cloneable). */
  hostOptions?: unknown;
}

/**
 * Starts a host over the store at `address`, in a new process or in one a closed host left.
 * `module` (a path or file URL of an ES module) default-exports `(store, hostOptions) => adapterObject | Promise<adapterObject>`; its methods
 * must take and return structured-cloneable values (collect async iterables into arrays).
 */
export declare function startHost(
  address: StoreAddress,
  module: string | URL,
  options?: HostOptions,
): Promise<Host>;

/**
 * `inner` as host B sees it when someone acts between its calls: after `arm(meanwhile)`,
 * `meanwhile` runs once, right after B's next `read` or `load` has finished. Without `passAfter`
 * the wrapper drops `append`'s options and shows no `capabilities` (an adapter confirms with a
 * read); with it, both are handed on, and `meanwhile` also runs right before B's next `append`
 * when no read came first.
 */
export declare function withInterleaving(
  inner: SessionStore,
  options?: { passAfter?: boolean },
): {
  store: SessionStore;
  arm(meanwhile: () => Promise<void>): void;
};

/** Calls a {@link countingStore} counted since it was made or last reset. */
export interface CountedCalls {
  reads: number;
  loads: number;
  appends: number;
  /** Appends that named `after`. */
  afters: number;
  /** Summary updates. */
  updates: number;
  /** Appends refused with CONFLICT. */
  conflicts: number;
}

/**
 * `inner` with its calls counted. With `capable`, `append`'s options are handed on and the inner
 * store's capabilities shown (an adapter takes its `append(…, { after })` path); without it, the
 * options are dropped and no capability is shown (the adapter's confirming-read path).
 */
export declare function countingStore(
  inner: SessionStore,
  capable: boolean,
): { store: SessionStore; calls: CountedCalls; reset(): void };

/** A backend an adapter test runs on: opens fresh stores, and removes what they left at the end. */
export interface TestBackend {
  /** `sealed-memory` in CI, `sealed-jsonl` under TIDEMARK_FULL=1: the sealed wrapper over either. */
  name: 'memory' | 'jsonl' | 'sqlite' | 'sealed-memory' | 'sealed-jsonl' | 'postgres';
  /** A fresh, empty store (a new temp dir or PostgreSQL schema each call). */
  open(): Promise<SessionStore>;
  /** Removes every directory or schema `open` made so far (call it in `afterAll`). */
  cleanup(): Promise<void>;
}

/**
 * Memory, JSONL and SQLite, and PostgreSQL when {@link postgresAvailable}. `prefix` (lower-case
 * letters, digits, `_`) names the temp dirs (`tidemark-<prefix>-<backend>-…`) and the PostgreSQL
 * schemas (`<prefix>_<random>`), so a test's leftovers say whose they are.
 */
export declare function testBackends(prefix: string): Promise<TestBackend[]>;
/**
 * True when the PostgreSQL test server answers. Otherwise false with a warning, except with
 * CI=true, where a missing server throws.
 */
export declare function postgresAvailable(): Promise<boolean>;
/** Drops every PostgreSQL schema whose name starts with `prefix` (e.g. those of child processes). */
export declare function dropSchemas(prefix: string): Promise<void>;
