// The JSONL store: the operations of SPEC §4. This class only checks its arguments, keeps each
// session's operations in order, applies the reservation rules of `create`, and hands the storage
// work to the modules below it:
//   append.ts      first publish and later appends          writer.ts   one writer's write/sync/rollback
//   writers.ts     the writer pool and its locks              reader.ts   whole-log reads and streams
//   catalog.ts     buckets, locate, list through sidecars     summary.ts  sidecar summaries
//   operations.ts  load, update, delete of a stored session   recovery.ts what a scan means, quarantine
//   verify.ts      verify and explicit repair                 context.ts  the state they share
import {
  applyPatch,
  assertValidId,
  type CreateInit,
  type DeleteOptions,
  emptySummary,
  errors,
  generateId,
  type ListQuery,
  type LoadedSession,
  type LoadOptions,
  prepareBatch,
  type ReadRange,
  type SessionEvent,
  type SessionMeta,
  type SessionPage,
  type SessionStore,
  type SessionSummary,
  type SummaryPatch,
  toIoError,
  validateCreate,
  validateDeleteOptions,
  validateListQuery,
  validateLoadOptions,
  validatePatch,
  validateRange,
} from '@tidemark/core';
import { appendToSession } from './append.js';
import { listSessions, locate } from './catalog.js';
import { assertOpen, createContext, type JsonlStoreOptions, type StoreContext } from './context.js';
import { quietly } from './errors.js';
import { FORMAT_VERSION } from './format.js';
import { deleteStored, loadSession, updateStored } from './operations.js';
import { readEvents } from './reader.js';
import { type RepairOptions, type RepairReport, repairLog, type VerifyReport, verifyLog } from './verify.js';
import { retireWriter } from './writers.js';

export type { JsonlStoreOptions } from './context.js';
export type { RepairOptions, RepairReport, VerifyReport } from './verify.js';

/**
 * The crash-safe JSONL backend. Use {@link openJsonlStore}; the class is exported for the
 * `repair` method the CLI needs.
 */
export class JsonlStore implements SessionStore {
  /** The store root. */
  readonly root: string;
  private readonly ctx: StoreContext;

  constructor(options: JsonlStoreOptions = {}) {
    this.ctx = createContext(options);
    this.root = this.ctx.root;
  }

  async create(init?: CreateInit): Promise<SessionMeta> {
    this.assertOpen();
    const { meta, patch } = validateCreate(init, generateId);
    return this.exclusive(meta.id, async () => {
      if (this.ctx.pending.has(meta.id) || (await locate(this.ctx, meta.id)) !== undefined)
        throw errors.alreadyExists(meta.id);
      this.ctx.pending.set(meta.id, { meta, patch });
      return { ...structuredClone(meta), formatVersion: FORMAT_VERSION };
    });
  }

  async append(id: string, events: readonly SessionEvent[]): Promise<{ nextSeq: number }> {
    this.assertOpen();
    assertValidId(id);
    const batch = prepareBatch(events, this.ctx.limits, id);
    return this.exclusive(id, () => appendToSession(this.ctx, id, batch));
  }

  async load(id: string, options?: LoadOptions): Promise<LoadedSession> {
    this.assertOpen();
    assertValidId(id);
    const tail = validateLoadOptions(options);
    return this.exclusive(id, () => loadSession(this.ctx, id, tail));
  }

  read(id: string, range?: ReadRange): AsyncIterable<SessionEvent> {
    const ctx = this.ctx;
    return {
      async *[Symbol.asyncIterator]() {
        assertOpen(ctx);
        assertValidId(id);
        const { fromSeq, toSeq } = validateRange(range);
        yield* readEvents(ctx, id, fromSeq, toSeq);
      },
    };
  }

  async list(query?: ListQuery): Promise<SessionPage> {
    this.assertOpen();
    return listSessions(this.ctx, validateListQuery(query));
  }

  async has(id: string): Promise<boolean> {
    this.assertOpen();
    assertValidId(id);
    return (await locate(this.ctx, id)) !== undefined;
  }

  async update(id: string, patch: SummaryPatch): Promise<SessionSummary> {
    this.assertOpen();
    assertValidId(id);
    const valid = validatePatch(patch);
    return this.exclusive(id, async () => {
      const stored = await updateStored(this.ctx, id, valid);
      if (stored !== undefined) return stored;
      const pending = this.ctx.pending.get(id);
      if (pending === undefined) throw errors.notFound(id);
      const merged = { ...pending.patch, ...valid };
      const summary = applyPatch(emptySummary(pending.meta), merged, pending.meta.createdAt);
      pending.patch = merged;
      return summary;
    });
  }

  async delete(id: string, options?: DeleteOptions): Promise<void> {
    this.assertOpen();
    assertValidId(id);
    const ifUpdatedAt = validateDeleteOptions(options);
    return this.exclusive(id, async () => {
      // `deleted` ended the reservation too; `absent` finds at most the reservation.
      if ((await deleteStored(this.ctx, id, ifUpdatedAt)) === 'deleted') return;
      if (!this.ctx.pending.delete(id)) throw errors.notFound(id);
    });
  }

  async close(): Promise<void> {
    const ctx = this.ctx;
    if (ctx.closed) return;
    ctx.closed = true;
    // Operations already under way may still open a writer (a first append takes a lock and keeps
    // a descriptor): let them finish first, so that close releases what they leave.
    await ctx.queue.drain();
    let failure: unknown;
    for (const id of [...ctx.writers.keys()]) {
      try {
        await ctx.queue.run(id, () => retireWriter(ctx, id, true));
      } catch (error) {
        failure ??= error;
      }
    }
    for (const handle of ctx.readers) await quietly(() => handle.close());
    ctx.readers.clear();
    ctx.pending.clear();
    if (failure !== undefined) throw toIoError(failure, 'closing the store');
  }

  /**
   * Explicit repair (for `tidemark repair`): sets torn bytes aside, with `tail: 'cut'` the
   * interrupted tail, and with `dropCorrupt` everything from the first damaged byte of a corrupt
   * log. Every removed byte goes to `<root>/.quarantine/` first.
   */
  async repair(id: string, options: RepairOptions = {}): Promise<RepairReport> {
    this.assertOpen();
    assertValidId(id);
    return this.exclusive(id, () => repairLog(this.ctx, id, options));
  }

  /** Checks a log without changing anything (see `verifySession`). Bounded memory. */
  async verify(id: string): Promise<VerifyReport> {
    this.assertOpen();
    assertValidId(id);
    return verifyLog(this.ctx, id);
  }

  private assertOpen(): void {
    assertOpen(this.ctx);
  }

  /** Runs `step` after every earlier operation of this instance on session `id`, if still open. */
  private exclusive<T>(id: string, step: () => Promise<T>): Promise<T> {
    return this.ctx.queue.run(id, async () => {
      this.assertOpen();
      return step();
    });
  }
}

/**
 * Opens the crash-safe JSONL store at `options.root`. Opening touches nothing on disk: the root is
 * created by the first append.
 */
export async function openJsonlStore(options: JsonlStoreOptions = {}): Promise<JsonlStore> {
  return new JsonlStore(options);
}

/** Checks a session's log without modifying anything (no repair, no lock, no sidecar write). */
export async function verifySession(options: JsonlStoreOptions, id: string): Promise<VerifyReport> {
  const store = await openJsonlStore(options);
  try {
    return await store.verify(id);
  } finally {
    await store.close();
  }
}

/**
 * Repairs a session explicitly: torn bytes always, the interrupted tail with `tail: 'cut'`, and a
 * corrupt log's damaged end with `dropCorrupt`. Everything removed is kept in quarantine first.
 */
export async function repairSession(
  options: JsonlStoreOptions,
  id: string,
  repair: RepairOptions = {},
): Promise<RepairReport> {
  const store = await openJsonlStore(options);
  try {
    return await store.repair(id, repair);
  } finally {
    await store.close();
  }
}
