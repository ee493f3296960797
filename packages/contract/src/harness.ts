import {
  isTidemarkError,
  type SessionEvent,
  type SessionStore,
  type StoreOptions,
  type TidemarkError,
  type TidemarkErrorCode,
} from '@tidemark/core';
import type { ContractDriver, ContractOptions } from './driver.js';

/**
 * Thrown when a backend breaks the contract. Checks throw it (or a vitest assertion error) so that
 * they can run both inside `it()` and as plain async functions.
 */
export class ContractViolation extends Error {
  override readonly name = 'ContractViolation';
}

/**
 * Thrown by a check that does not apply to the store under test: it is about a capability the
 * store does not claim (`capabilities.appendAfter`, …). `runStoreContract` reports the check as
 * skipped with this message as the reason; {@link runContractCheck} resolves with it.
 */
export class ContractSkip extends Error {
  override readonly name = 'ContractSkip';
}

/** Ends the current check as not applicable, with `reason` shown beside it. */
export function skipCheck(reason: string): never {
  throw new ContractSkip(reason);
}

/** Fails the current check with a {@link ContractViolation}. */
export function violation(message: string): never {
  throw new ContractViolation(message);
}

/** Contract options with their defaults filled in. */
export interface ResolvedContractOptions {
  modelRuns: number;
  timeout: number;
  seed: number | undefined;
}

/** Fills in the defaults of {@link ContractOptions}. */
export function resolveOptions(options: ContractOptions = {}): ResolvedContractOptions {
  return { modelRuns: options.modelRuns ?? 50, timeout: options.timeout ?? 30_000, seed: options.seed };
}

/**
 * What one check gets: the driver, the options, and `open`/`reopen` that remember every store they
 * opened so that the runner can close the ones a check left open (a failing check must not leave
 * handles or locks behind for the next one).
 */
export class CheckContext {
  private readonly stores: SessionStore[] = [];

  constructor(
    readonly driver: ContractDriver,
    readonly options: ResolvedContractOptions,
  ) {}

  /** Opens a store over fresh, empty storage. */
  async open(options?: StoreOptions): Promise<SessionStore> {
    const store = await this.driver.open(options);
    this.stores.push(store);
    return store;
  }

  /** Opens another store over the storage of `store` (a restart or a second live instance). */
  async reopen(store: SessionStore, options?: StoreOptions): Promise<SessionStore> {
    const next = await this.driver.reopen(store, options);
    this.stores.push(next);
    return next;
  }

  /**
   * Closes every store this context opened. A second `close()` may legitimately resolve or reject
   * with CLOSED; anything else is reported, because close must release resources cleanly.
   */
  async closeAll(): Promise<void> {
    const stores = this.stores.splice(0);
    const failures: unknown[] = [];
    for (const store of stores) {
      try {
        await store.close();
      } catch (error) {
        if (!isTidemarkError(error, 'CLOSED')) failures.push(error);
      }
    }
    if (failures.length > 0) violation(`close() failed: ${String(failures[0])}`);
  }
}

/** One rule of docs/contract.md, runnable on its own against any driver. */
export interface ContractCheck {
  /** The part of the contract the check belongs to (a `describe` block). */
  group: string;
  /** What the check shows, as a test title. */
  name: string;
  /** Runs the check; rejects (ContractViolation or an assertion error) when the backend breaks it. */
  run(context: CheckContext): Promise<void>;
}

/**
 * Runs `check` in `context`: undefined when the backend keeps the rule, the reason when the check
 * does not apply to the store (a {@link ContractSkip}); rejects when the backend breaks it.
 */
export async function runInContext(check: ContractCheck, context: CheckContext): Promise<string | undefined> {
  try {
    await check.run(context);
    return undefined;
  } catch (error) {
    if (error instanceof ContractSkip) return error.message;
    throw error;
  }
}

/**
 * Runs one check outside vitest's `it()`: opens a context, runs, closes the stores it opened and
 * calls `driver.cleanup()`, whatever happened. Rejects when the backend breaks the rule; resolves
 * with undefined when it keeps it, or with the reason when the check does not apply to the store
 * (a {@link ContractSkip}: a capability the store does not claim).
 */
export async function runContractCheck(
  check: ContractCheck,
  driver: ContractDriver,
  options?: ContractOptions,
): Promise<string | undefined> {
  const context = new CheckContext(driver, resolveOptions(options));
  try {
    return await runInContext(check, context);
  } finally {
    try {
      await context.closeAll();
    } finally {
      await driver.cleanup();
    }
  }
}

/** A fixed, valid event time: the epoch of the suite plus `offsetMs`. */
export function eventTime(offsetMs = 0): string {
  return new Date(Date.UTC(2026, 0, 1) + offsetMs).toISOString();
}

/** Builds a valid event; `data` defaults to something that tells events apart. */
export function ev(seq: number, type = 'note', data: SessionEvent['data'] = { n: seq }): SessionEvent {
  return { seq, type, time: eventTime(seq), data };
}

/** Builds the contiguous events `from..from+count-1`. */
export function evs(from: number, count: number, type = 'note', tag = 'x'): SessionEvent[] {
  return Array.from({ length: count }, (_, i) => ev(from + i, type, { n: from + i, tag }));
}

/** Drains an async iterable into an array. */
export async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

/**
 * Asserts that `action` rejects with a TidemarkError of `code` (and, when given, a message that
 * contains `messageIncludes`). Returns the error for further checks.
 */
export async function expectCode(
  action: Promise<unknown> | (() => Promise<unknown> | unknown),
  code: TidemarkErrorCode,
  what: string,
  messageIncludes?: string,
): Promise<TidemarkError> {
  let result: unknown;
  try {
    result = await (typeof action === 'function' ? action() : action);
  } catch (error) {
    if (!isTidemarkError(error)) {
      violation(`${what}: expected a TidemarkError ${code}, got an untyped ${describeError(error)}`);
    }
    if (error.code !== code) violation(`${what}: expected ${code}, got ${error.code} (${error.message})`);
    if (messageIncludes !== undefined && !error.message.includes(messageIncludes)) {
      violation(
        `${what}: the ${code} message should name ${JSON.stringify(messageIncludes)}, got ${JSON.stringify(error.message)}`,
      );
    }
    return error;
  }
  return violation(`${what}: expected ${code}, but it succeeded with ${safeStringify(result)}`);
}

/** A short description of any thrown value, for messages. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return safeStringify(error);
}

function safeStringify(value: unknown): string {
  try {
    const text = JSON.stringify(value);
    if (text === undefined) return String(value);
    return text.length > 200 ? `${text.slice(0, 200)}…` : text;
  } catch {
    return String(value);
  }
}

/** Waits `ms` milliseconds, so that successive changes get distinct `updatedAt` values. */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
