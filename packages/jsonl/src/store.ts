// The JSONL store. Every rule of the contract (argument validation, CLOSED, per-session order, the
// lazy-create reservations, the shape of verify and repair) is core's SessionStoreBase; this class
// implements its storage hooks by handing the work to the modules below it:
//   append.ts      first publish and later appends          writer.ts   one writer's write/sync/rollback
//   writers.ts     the writer pool and its locks              reader.ts   whole-log reads and streams
//   catalog.ts     buckets, locate, list through sidecars     summary.ts  sidecar summaries
//   operations.ts  load, update, delete of a stored session   recovery.ts what a scan means, quarantine
//   verify.ts      read-only verify                           repair.ts   explicit repair, tail cut
//   context.ts     the state they share
import {
  type AppendResult,
  isTidemarkError,
  type LoadedSession,
  lastEvents,
  type PreparedEvent,
  type RepairOptions,
  type RepairReport,
  type Reservation,
  type SessionEvent,
  type SessionHealth,
  type SessionPage,
  SessionStoreBase,
  type SessionSummary,
  type SummaryPatch,
  type TailPolicy,
  toIoError,
  type ValidListQuery,
  type VerifyReport,
} from '@tidemark/core';
import { appendToSession } from './append.js';
import { locate } from './catalog.js';
import { newCatalogState } from './catalog-file.js';
import { listSessions } from './catalog-list.js';
import { createContext, JSONL_OPTION_NAMES, type JsonlStoreOptions, type StoreContext } from './context.js';
import { quietly } from './errors.js';
import { FORMAT_VERSION } from './format.js';
import { deleteStored, loadSession, updateStored } from './operations.js';
import { readLastEvents } from './read-last.js';
import { readEvents } from './reader.js';
import { repairLog } from './repair.js';
import { verifyLog } from './verify.js';
import { retireWriter } from './writers.js';

export type { JsonlStoreOptions } from './context.js';

/**
 * The crash-safe JSONL backend. Use {@link openJsonlStore}. Its `verify` and `repair` (core's
 * maintenance interface) report torn tails and corruption with the log file and byte offsets;
 * repair moves everything it removes to `<root>/.quarantine/` first.
 */
export class JsonlStore extends SessionStoreBase {
  /** The store root. */
  readonly root: string;
  protected readonly formatVersion = FORMAT_VERSION;
  /** `append(…, { after })` is checked by the session's writer, under its lock (append.ts). */
  protected override readonly storageChecksAfter = true;
  private readonly ctx: StoreContext;

  /** @throws TidemarkError INVALID for an invalid shared option (durability, boundaryTypes, limits) or an unknown option name. */
  constructor(options: JsonlStoreOptions = {}) {
    super(options, 'openJsonlStore', JSONL_OPTION_NAMES);
    this.ctx = createContext(options, {
      settings: this.settings,
      reservations: this.reservations,
      queue: this.queue,
      assertOpen: () => this.assertOpen(),
      newCatalog: newCatalogState,
    });
    this.root = this.ctx.root;
  }

  /** Every queued step's fault that is no TidemarkError (a bug, a fault-hook throw) is IO. */
  protected override exclusive<T>(id: string, fn: () => Promise<T>): Promise<T> {
    // Mapped on the way out rather than in an async wrapper inside the queue: one promise less per
    // operation, the same errors (CLOSED, from before `fn`, is a TidemarkError and passes as is).
    return super.exclusive(id, fn).then(undefined, (error: unknown) => {
      throw isTidemarkError(error) ? error : toIoError(error, `operating on ${id}`, id);
    });
  }

  protected async storageHas(id: string): Promise<boolean> {
    return (await locate(this.ctx, id)) !== undefined;
  }

  /**
   * Receives `after` (storageChecksAfter): the session's writer checks it under its lock, from what
   * it knows of the log's last event, so the check costs no read in the common case (append.ts).
   */
  protected storageAppend(
    id: string,
    batch: readonly PreparedEvent[],
    reservation: Reservation | undefined,
    after?: PreparedEvent,
  ): Promise<AppendResult> {
    return appendToSession(this.ctx, id, batch, reservation, after);
  }

  protected storageLoad(id: string, tail: TailPolicy): Promise<LoadedSession> {
    return loadSession(this.ctx, id, tail);
  }

  protected storageRead(id: string, fromSeq: number, toSeq: number): AsyncIterable<SessionEvent> {
    return readEvents(this.ctx, id, fromSeq, toSeq);
  }

  /**
   * Pages for `read()` and `readAll()`. With `last` up to the log's end: from the end of the log
   * when it ends clean (read-last.ts), in one page; else the last events of the stream. The
   * stream's events come a page each, as it reads them.
   */
  protected override async *storageReadPages(
    id: string,
    fromSeq: number,
    toSeq: number,
    last: number | undefined,
  ): AsyncIterable<readonly SessionEvent[]> {
    const fast =
      last !== undefined && toSeq === Number.MAX_SAFE_INTEGER
        ? await readLastEvents(this.ctx, id, fromSeq, last)
        : undefined;
    if (fast !== undefined) {
      if (fast.length > 0) yield fast;
      return;
    }
    const events = readEvents(this.ctx, id, fromSeq, toSeq);
    for await (const event of last === undefined ? events : lastEvents(events, last)) yield [event];
  }

  protected storageList(query: ValidListQuery): Promise<SessionPage> {
    return listSessions(this.ctx, query);
  }

  protected storageUpdate(id: string, patch: SummaryPatch): Promise<SessionSummary | undefined> {
    return updateStored(this.ctx, id, patch);
  }

  protected storageDelete(id: string, ifUpdatedAt: string | undefined): Promise<'deleted' | 'absent'> {
    return deleteStored(this.ctx, id, ifUpdatedAt);
  }

  /**
   * Retires every writer (sidecars refreshed, locks released) and closes what streams still hold;
   * reports IO when a relaxed sync failed here or when a writer was released while idle.
   */
  protected async storageClose(): Promise<void> {
    const ctx = this.ctx;
    let failure: unknown;
    // Idle releases run outside the queues: wait for those under way (their faults are kept).
    await Promise.all([...ctx.retiring.values()].map((retired) => retired.catch(() => undefined)));
    for (const id of [...ctx.writers.keys()]) {
      try {
        await ctx.queue.run(id, () => retireWriter(ctx, id, true));
      } catch (error) {
        failure ??= error;
      }
    }
    for (const handle of ctx.readers) await quietly(() => handle.close());
    ctx.readers.clear();
    ctx.parked.clear();
    if (ctx.catalog !== undefined) await ctx.catalog.sink.reset();
    // A writer released while idle had nobody to tell of a failed sync: close() reports it, as
    // it would have had the writer still been open.
    failure ??= ctx.backgroundFailure;
    if (failure !== undefined) throw toIoError(failure, 'closing the store');
  }

  protected storageVerify(id: string): Promise<SessionHealth> {
    return verifyLog(this.ctx, id);
  }

  protected storageRepair(id: string, options: Required<RepairOptions>): Promise<RepairReport> {
    return repairLog(this.ctx, id, options);
  }
}

/**
 * Opens the crash-safe JSONL store at `options.root`. Opening touches nothing on disk: the root is
 * created by the first append.
 * @throws TidemarkError INVALID for an invalid shared option (durability, boundaryTypes, limits).
 */
export async function openJsonlStore(options: JsonlStoreOptions = {}): Promise<JsonlStore> {
  return new JsonlStore(options);
}

/** Checks one session's log without modifying anything (no repair, no lock, no sidecar write). */
export async function verifySession(options: JsonlStoreOptions, id: string): Promise<VerifyReport> {
  const store = await openJsonlStore(options);
  try {
    return await store.verify({ id });
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
  repair?: RepairOptions,
): Promise<RepairReport> {
  const store = await openJsonlStore(options);
  try {
    return await store.repair(id, repair);
  } finally {
    await store.close();
  }
}
