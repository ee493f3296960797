// The rules every backend shares, once: argument validation, CLOSED, per-session serialization,
// the lazy-create reservations and the shape of verify. A backend subclasses SessionStoreBase and
// implements the protected `storage*` hooks, which only touch its storage.
import { assertStoredAfter, validateAppendOptions } from './append-after.js';
import { errors, isTidemarkError, TidemarkError, toIoError } from './errors.js';
import type { PreparedEvent, SessionEvent } from './event.js';
import { prepareBatch } from './event.js';
import { assertValidId, generateId } from './ids.js';
import { KeyedQueue } from './keyed-queue.js';
import { lastEvents } from './last-events.js';
import type {
  MaintainedStore,
  MaintenanceProblem,
  RepairOptions,
  RepairReport,
  SessionHealth,
  VerifyReport,
} from './maintenance.js';
import { type ResolvedStoreOptions, resolveStoreOptions } from './options.js';
import { PageReader } from './page-reader.js';
import { listAll } from './paging.js';
import { type Reservation, Reservations } from './reservations.js';
import {
  type ValidListQuery,
  validateCreate,
  validateDeleteOptions,
  validateListQuery,
  validateLoadOptions,
  validatePatch,
  validateRange,
} from './session.js';
import type {
  AppendOptions,
  AppendResult,
  CreateInit,
  DeleteOptions,
  ListQuery,
  LoadedSession,
  LoadOptions,
  ReadRange,
  SessionMeta,
  SessionPage,
  SessionStore,
  SessionSummary,
  StoreCapabilities,
  StoreOptions,
  SummaryPatch,
  TailPolicy,
} from './store.js';

/** Validates `repair()` options, filling in the defaults. */
export function validateRepairOptions(options: unknown): Required<RepairOptions> {
  if (options === undefined) return { tail: 'keep', dropCorrupt: false };
  if (typeof options !== 'object' || options === null)
    throw errors.invalid('repair: options must be an object');
  const { tail = 'keep', dropCorrupt = false } = options as { tail?: unknown; dropCorrupt?: unknown };
  if (tail !== 'keep' && tail !== 'cut') throw errors.invalid(`repair: tail must be 'keep' or 'cut'`);
  if (typeof dropCorrupt !== 'boolean') throw errors.invalid('repair: dropCorrupt must be a boolean');
  return { tail, dropCorrupt };
}

const CHECKS_AFTER: StoreCapabilities = Object.freeze({ appendAfter: true });
const DOES_NOT_CLAIM_AFTER: StoreCapabilities = Object.freeze({ appendAfter: false });

/**
 * The base of every backend. It owns the rules of contract §4 that do not depend on storage; a backend
 * implements the protected `storage*` hooks. Each hook is called with validated arguments, on an
 * open store, and (except `storageHas`, `storageList` and `storageVerify`) inside
 * {@link SessionStoreBase.exclusive} for its session. Hooks reject only with `TidemarkError`s.
 */
export abstract class SessionStoreBase implements MaintainedStore {
  /** The shared options, validated, defaults filled in. */
  protected readonly settings: ResolvedStoreOptions;
  /** Pending sessions of this instance (created, no batch yet). */
  protected readonly reservations = new Reservations();
  /** Per-session serialization of this instance's operations. */
  protected readonly queue = new KeyedQueue();
  /** The format version this backend stamps on meta. */
  protected abstract readonly formatVersion: number;
  /**
   * `appendAfter` is claimed only by a backend that checks `after` in the same write as the batch
   * ({@link SessionStoreBase.storageChecksAfter}), so that it holds across instances and processes.
   * Every other backend on this base still honours `after` (the base reads the event at `after.seq`
   * just before `storageAppend`), but that read is exact within this instance only: another
   * instance may delete and rewrite the session in between, so callers must not drop their own
   * confirming reads for it, and the capability is not claimed.
   */
  get capabilities(): StoreCapabilities {
    return this.storageChecksAfter ? CHECKS_AFTER : DOES_NOT_CLAIM_AFTER;
  }
  /**
   * True when `storageAppend` checks its `after` argument itself, in the same transaction or under
   * the same lock as the write (with {@link assertStoredAfter}), so the check holds across
   * instances. False (the default): the base checks it with a read before calling `storageAppend`,
   * and `after` is not passed on.
   */
  protected readonly storageChecksAfter: boolean = false;
  private closed = false;

  /**
   * @param options - the factory's options (backend-specific fields are the backend's to check).
   * @param where - the factory's name, for messages about invalid options.
   * @param backendNames - the backend's own option names; when given, any other unshared name is
   *   refused with INVALID (see {@link resolveStoreOptions}).
   */
  protected constructor(options: StoreOptions, where: string, backendNames?: readonly string[]) {
    this.settings = resolveStoreOptions(options, where, backendNames);
  }

  // ---- storage hooks -------------------------------------------------------------------------

  /** True when `id` is stored (materialized). */
  protected abstract storageHas(id: string): Promise<boolean>;
  /**
   * Appends a validated batch or recognizes an idempotent retry (`planAppend`, `assertSameEvents`).
   * When `id` is not stored, materializes it from `reservation`; NOT_FOUND when there is none.
   * `after` is given only when {@link SessionStoreBase.storageChecksAfter} is true: the write must
   * then first check the stored event at `after.seq` with {@link assertStoredAfter}, atomically
   * with the write (a retry of a stored batch is checked too).
   */
  protected abstract storageAppend(
    id: string,
    batch: readonly PreparedEvent[],
    reservation: Reservation | undefined,
    after?: PreparedEvent,
  ): Promise<AppendResult>;
  /** Loads a stored session; NOT_FOUND when it is not stored. */
  protected abstract storageLoad(id: string, tail: TailPolicy): Promise<LoadedSession>;
  /** Events `fromSeq..toSeq` of a stored session in order; NOT_FOUND when it is not stored. */
  protected abstract storageRead(id: string, fromSeq: number, toSeq: number): AsyncIterable<SessionEvent>;
  /**
   * The last `last` events of `fromSeq..toSeq` in order, found without reading from the log's
   * start; NOT_FOUND when it is not stored. Optional: without it, `read({ last })` streams the
   * range through {@link SessionStoreBase.storageRead} and keeps the last events.
   */
  protected storageReadLast?(
    id: string,
    fromSeq: number,
    toSeq: number,
    last: number,
  ): AsyncIterable<SessionEvent>;
  /**
   * Events of `fromSeq..toSeq` of a stored session in order (the last `last` of them when given,
   * as {@link SessionStoreBase.storageReadLast}), a page at a time; NOT_FOUND when it is not
   * stored. Optional: a backend that reads whole pages anyway has `read()` hand out their events
   * without a promise chain per event (see `PageReader`); without it, `read()` streams
   * {@link SessionStoreBase.storageRead} and {@link SessionStoreBase.storageReadLast}.
   */
  protected storageReadPages?(
    id: string,
    fromSeq: number,
    toSeq: number,
    last: number | undefined,
  ): AsyncIterable<readonly SessionEvent[]>;
  /** One page of stored sessions (see `pageOf`, `pageFromRows`). */
  protected abstract storageList(query: ValidListQuery): Promise<SessionPage>;
  /** Applies a patch to a stored session; undefined when `id` is not stored. */
  protected abstract storageUpdate(id: string, patch: SummaryPatch): Promise<SessionSummary | undefined>;
  /**
   * Removes a stored session, or reports it absent. With `ifUpdatedAt`, a stored session of
   * another version is refused with CONFLICT (`deleteConflict`) and kept.
   */
  protected abstract storageDelete(
    id: string,
    ifUpdatedAt: string | undefined,
  ): Promise<'deleted' | 'absent'>;
  /** Releases the backend's resources; called once, after every queued operation settled. */
  protected abstract storageClose(): Promise<void>;
  /** Checks one session read-only; NOT_FOUND when it is not stored. */
  protected abstract storageVerify(id: string): Promise<SessionHealth>;
  /** Repairs one stored session as `options` allow; NOT_FOUND when it is not stored. */
  protected abstract storageRepair(id: string, options: Required<RepairOptions>): Promise<RepairReport>;
  /**
   * Checks every session, when the backend can do better than `list` and one
   * {@link SessionStoreBase.storageVerify} per session. Undefined by default.
   */
  protected storageVerifyAll?(): Promise<VerifyReport>;

  // ---- helpers for backends ------------------------------------------------------------------

  /** @throws TidemarkError CLOSED once `close()` was called. */
  protected assertOpen(): void {
    if (this.closed) throw errors.closed();
  }

  /** Runs `fn` after every earlier exclusive operation on `id` in this instance, on an open store. */
  protected exclusive<T>(id: string, fn: () => Promise<T>): Promise<T> {
    // Not async: a promise returned from an async function costs extra microtask turns on every
    // operation, and the queue turns a synchronous throw (CLOSED) into a rejection anyway.
    return this.queue.run(id, () => {
      this.assertOpen();
      return fn();
    });
  }

  /** Generates the id of a `create()` without one. Override for another id scheme. */
  protected generateId(): string {
    return generateId();
  }

  // ---- the contract --------------------------------------------------------------------------

  /** {@inheritDoc SessionStore.create} */
  async create(init?: CreateInit): Promise<SessionMeta> {
    this.assertOpen();
    const { meta, patch } = validateCreate(init, () => this.generateId());
    return this.exclusive(meta.id, async () => {
      // Storage first: a backend whose check fails reports that failure, reserved or not.
      const stored = await this.storageHas(meta.id);
      if (stored || this.reservations.has(meta.id)) throw errors.alreadyExists(meta.id);
      this.reservations.reserve(meta, patch);
      return { ...structuredClone(meta), formatVersion: this.formatVersion };
    });
  }

  /** {@inheritDoc SessionStore.append} */
  async append(id: string, events: readonly SessionEvent[], options?: AppendOptions): Promise<AppendResult> {
    this.assertOpen();
    assertValidId(id);
    const batch = prepareBatch(events, this.settings.limits, id);
    const after = validateAppendOptions(options, batch, this.settings.limits);
    return this.exclusive(id, async () => {
      const reservation = this.reservations.get(id);
      if (after !== undefined && !this.storageChecksAfter) await this.checkAfter(id, after, reservation);
      const result = await this.storageAppend(
        id,
        batch,
        reservation,
        this.storageChecksAfter ? after : undefined,
      );
      // Written or recognized as a retry: the batch is in the session, which is no longer pending
      // here (nor when another instance materialized it). A failed append keeps the reservation.
      this.reservations.end(id);
      return result;
    });
  }

  /** The base's check of `after` for a backend that does not check it in its write. */
  private async checkAfter(
    id: string,
    after: PreparedEvent,
    reservation: Reservation | undefined,
  ): Promise<void> {
    const seq = after.event.seq;
    let stored: SessionEvent | undefined;
    try {
      [stored] = await this.readAll(id, { fromSeq: seq, toSeq: seq });
    } catch (error) {
      // Not stored: a pending session has no event to append after (CONFLICT below); otherwise
      // NOT_FOUND, as the append itself would answer.
      if (!isTidemarkError(error, 'NOT_FOUND') || reservation === undefined) throw error;
    }
    assertStoredAfter(id, stored, after);
  }

  /** {@inheritDoc SessionStore.load} */
  async load(id: string, options?: LoadOptions): Promise<LoadedSession> {
    this.assertOpen();
    assertValidId(id);
    const tail = validateLoadOptions(options);
    return this.exclusive(id, () => this.storageLoad(id, tail));
  }

  /** {@inheritDoc SessionStore.read} */
  read(id: string, range?: ReadRange): AsyncIterable<SessionEvent> {
    const self = this;
    if (this.storageReadPages !== undefined) {
      const readPages = this.storageReadPages.bind(this);
      const start = () => {
        self.assertOpen();
        assertValidId(id);
        const { fromSeq, toSeq, last } = validateRange(range);
        return readPages(id, fromSeq, toSeq, last);
      };
      // Checked before each event is handed out: the store may have closed while the consumer held one.
      const check = () => self.assertOpen();
      return { [Symbol.asyncIterator]: () => new PageReader(start, check) };
    }
    return {
      async *[Symbol.asyncIterator]() {
        self.assertOpen();
        assertValidId(id);
        const { fromSeq, toSeq, last } = validateRange(range);
        const events =
          last === undefined
            ? self.storageRead(id, fromSeq, toSeq)
            : self.storageReadLast !== undefined
              ? self.storageReadLast(id, fromSeq, toSeq, last)
              : lastEvents(self.storageRead(id, fromSeq, toSeq), last);
        for await (const event of events) {
          self.assertOpen();
          yield event;
        }
      },
    };
  }

  /**
   * The events `read(id, range)` streams, in one array: for a caller that keeps them all anyway
   * (a short range, or `last`), without handing them out one promise at a time. Same validation,
   * errors and snapshot rules as `read`; the caller bounds the memory by its range.
   */
  async readAll(id: string, range?: ReadRange): Promise<SessionEvent[]> {
    const events: SessionEvent[] = [];
    if (this.storageReadPages === undefined) {
      for await (const event of this.read(id, range)) events.push(event);
      return events;
    }
    this.assertOpen();
    assertValidId(id);
    const { fromSeq, toSeq, last } = validateRange(range);
    for await (const page of this.storageReadPages(id, fromSeq, toSeq, last)) {
      this.assertOpen();
      for (const event of page) events.push(event);
    }
    return events;
  }

  /** {@inheritDoc SessionStore.list} */
  async list(query?: ListQuery): Promise<SessionPage> {
    this.assertOpen();
    return this.storageList(validateListQuery(query));
  }

  /** {@inheritDoc SessionStore.has} */
  async has(id: string): Promise<boolean> {
    this.assertOpen();
    assertValidId(id);
    return this.storageHas(id);
  }

  /** {@inheritDoc SessionStore.update} */
  async update(id: string, patch: SummaryPatch): Promise<SessionSummary> {
    this.assertOpen();
    assertValidId(id);
    const valid = validatePatch(patch);
    return this.exclusive(id, async () => {
      const stored = await this.storageUpdate(id, valid);
      if (stored !== undefined) return stored;
      const pending = this.reservations.merge(id, valid);
      if (pending === undefined) throw errors.notFound(id);
      return pending;
    });
  }

  /** {@inheritDoc SessionStore.delete} */
  async delete(id: string, options?: DeleteOptions): Promise<void> {
    this.assertOpen();
    assertValidId(id);
    const ifUpdatedAt = validateDeleteOptions(options);
    return this.exclusive(id, async () => {
      const outcome = await this.storageDelete(id, ifUpdatedAt);
      const wasPending = this.reservations.end(id);
      if (outcome === 'absent' && !wasPending) throw errors.notFound(id);
    });
  }

  /** {@inheritDoc SessionStore.close} */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queue.drain();
    this.reservations.clear();
    await this.storageClose();
  }

  /** {@inheritDoc StoreMaintenance.verify} */
  async verify(target?: { id?: string }): Promise<VerifyReport> {
    this.assertOpen();
    if (target !== undefined && (typeof target !== 'object' || target === null))
      throw errors.invalid('verify: the target must be an object');
    if (target?.id !== undefined) {
      assertValidId(target.id);
      const health = await this.storageVerify(target.id);
      return { checked: 1, sessions: [health], problems: [...health.problems] };
    }
    if (this.storageVerifyAll !== undefined) return this.storageVerifyAll();
    return this.verifyEach();
  }

  /** {@inheritDoc StoreMaintenance.repair} */
  async repair(id: string, options?: RepairOptions): Promise<RepairReport> {
    this.assertOpen();
    assertValidId(id);
    const valid = validateRepairOptions(options);
    return this.exclusive(id, () => this.storageRepair(id, valid));
  }

  /** Every id `list` knows (problems included), each verified; a failure is an `unreadable` problem. */
  private async verifyEach(): Promise<VerifyReport> {
    const ids = new Set<string>();
    for await (const entry of listAll(this))
      ids.add('summary' in entry ? entry.summary.id : entry.problem.id);
    const sessions: SessionHealth[] = [];
    for (const id of [...ids].sort()) {
      try {
        sessions.push(await this.storageVerify(id));
      } catch (error) {
        const typed = error instanceof TidemarkError ? error : toIoError(error, `verifying ${id}`, id);
        const problem: MaintenanceProblem = {
          kind:
            typed.code === 'UNSUPPORTED_FORMAT'
              ? 'unsupported-format'
              : typed.code === 'CORRUPT'
                ? 'corrupt'
                : 'unreadable',
          sessionId: id,
          message: `${typed.code}: ${typed.message}`,
        };
        sessions.push({ sessionId: id, status: problem.kind, problems: [problem] });
      }
    }
    return { checked: sessions.length, sessions, problems: sessions.flatMap((s) => s.problems) };
  }
}

/**
 * The events of `store.read(id, range)` in one array: through {@link SessionStoreBase.readAll}
 * when `store` is one whose `read` is the base's own (every tidemark backend), else by iterating
 * `read`, so that a wrapper or proxy that stands in for `read` is still the one asked.
 */
export async function readAllEvents(
  store: SessionStore,
  id: string,
  range?: ReadRange,
): Promise<SessionEvent[]> {
  if (store instanceof SessionStoreBase && store.read === SessionStoreBase.prototype.read)
    return store.readAll(id, range);
  const events: SessionEvent[] = [];
  for await (const event of store.read(id, range)) events.push(event);
  return events;
}
