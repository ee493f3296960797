import {
  applyPatch,
  assertSameEvents,
  assertValidId,
  boundaryPredicate,
  type CreateInit,
  commitStateOf,
  compareForList,
  type DeleteOptions,
  deleteConflict,
  emptySummary,
  encodeCursor,
  errors,
  generateId,
  isAfterCursor,
  type ListQuery,
  type LoadedSession,
  type LoadOptions,
  loadedSession,
  nextUpdatedAt,
  nowIso,
  planAppend,
  prepareBatch,
  type ReadRange,
  type SessionEvent,
  type SessionMeta,
  type SessionPage,
  type SessionStore,
  type SessionSummary,
  type StoreOptions,
  type SummaryPatch,
  summaryAfterAppend,
  toIoError,
  validateCreate,
  validateDeleteOptions,
  validateListQuery,
  validateLoadOptions,
  validatePatch,
  validateRange,
} from '@tidemark/core';

/** Format version the memory backend stamps on meta. */
export const MEMORY_FORMAT_VERSION = 1;

interface StoredSession {
  meta: SessionMeta;
  summary: SessionSummary;
  /** Events as JSON text: storing text makes copy-on-append and copy-on-load structural. */
  events: string[];
}

/**
 * The "disk" of memory stores. Several stores opened over one volume see the same sessions, as
 * processes sharing a directory would; reopening over a volume simulates a restart.
 */
export class MemoryVolume {
  /** @internal */
  readonly sessions = new Map<string, StoredSession>();
  /** Events cut from interrupted tails (`tail: 'cut'`), kept rather than destroyed. */
  readonly quarantine = new Map<string, SessionEvent[]>();
}

/** Options of {@link openMemoryStore}. */
export interface MemoryStoreOptions extends StoreOptions {
  /** The volume to use; a fresh one when omitted. */
  volume?: MemoryVolume;
  /**
   * Fault hook for tests and the fault harness: called before each storage step with the operation
   * name; whatever it throws surfaces as an IO error, and the step does not happen.
   */
  beforeStorageStep?: (operation: 'read' | 'write' | 'list' | 'delete', id?: string) => void;
}

interface Pending {
  meta: Omit<SessionMeta, 'formatVersion'>;
  patch: SummaryPatch;
}

class MemoryStore implements SessionStore {
  private readonly volume: MemoryVolume;
  private readonly pending = new Map<string, Pending>();
  private readonly isBoundary;
  private closed = false;

  constructor(private readonly options: MemoryStoreOptions) {
    this.volume = options.volume ?? new MemoryVolume();
    this.isBoundary = boundaryPredicate(options.boundaryTypes);
  }

  private open(): void {
    if (this.closed) throw errors.closed();
  }

  private step(operation: 'read' | 'write' | 'list' | 'delete', id?: string): void {
    if (this.options.beforeStorageStep === undefined) return;
    try {
      this.options.beforeStorageStep(operation, id);
    } catch (error) {
      throw toIoError(error, `memory ${operation}${id === undefined ? '' : ` of ${id}`}`, id);
    }
  }

  async create(init?: CreateInit): Promise<SessionMeta> {
    this.open();
    const { meta, patch } = validateCreate(init, generateId);
    this.step('read', meta.id);
    if (this.volume.sessions.has(meta.id) || this.pending.has(meta.id)) throw errors.alreadyExists(meta.id);
    this.pending.set(meta.id, { meta, patch });
    return { ...structuredClone(meta), formatVersion: MEMORY_FORMAT_VERSION };
  }

  async append(id: string, events: readonly SessionEvent[]): Promise<{ nextSeq: number }> {
    this.open();
    assertValidId(id);
    const batch = prepareBatch(events, this.options, id);
    this.step('read', id);
    const stored = this.volume.sessions.get(id);
    const pending = this.pending.get(id);
    if (stored === undefined && pending === undefined) throw errors.notFound(id);
    const nextSeq = stored?.events.length ?? 0;
    const plan = planAppend(id, nextSeq, batch);
    if (plan.kind === 'compare') {
      const existing = stored!.events
        .slice(plan.fromSeq, plan.toSeq + 1)
        .map((line) => JSON.parse(line) as SessionEvent);
      assertSameEvents(id, existing, batch);
      // A retry that succeeds tells the caller its batch is in the session, as an append that
      // writes does: the reservation ends the same way (jsonl and sqlite agree).
      this.pending.delete(id);
      return { nextSeq };
    }
    this.step('write', id);
    const now = nowIso();
    const appended = batch.map((item) => item.event);
    if (stored === undefined) {
      const { meta, patch } = pending!;
      const summary = summaryAfterAppend(
        applyPatch(emptySummary(meta), patch, now),
        appended,
        this.isBoundary,
        now,
      );
      this.volume.sessions.set(id, {
        meta: { ...meta, formatVersion: MEMORY_FORMAT_VERSION },
        summary,
        events: batch.map((item) => item.json),
      });
      this.pending.delete(id);
    } else {
      stored.events.push(...batch.map((item) => item.json));
      stored.summary = summaryAfterAppend(
        stored.summary,
        appended,
        this.isBoundary,
        nextUpdatedAt(stored.summary.updatedAt, now),
      );
      // A session materialized by another instance makes this instance's reservation moot.
      this.pending.delete(id);
    }
    return { nextSeq: nextSeq + batch.length };
  }

  async load(id: string, options?: LoadOptions): Promise<LoadedSession> {
    this.open();
    assertValidId(id);
    const tail = validateLoadOptions(options);
    this.step('read', id);
    const stored = this.volume.sessions.get(id);
    if (stored === undefined) throw errors.notFound(id);
    let events = stored.events.map((line) => JSON.parse(line) as SessionEvent);
    let state = commitStateOf(events, this.isBoundary);
    let recovered: LoadedSession['recovered'];
    if (tail === 'cut' && state.interrupted) {
      this.step('write', id);
      const cut = events.slice(state.committedSeq + 1);
      const kept = this.volume.quarantine.get(id) ?? [];
      this.volume.quarantine.set(id, [...kept, ...cut]);
      stored.events.length = state.committedSeq + 1;
      events = events.slice(0, state.committedSeq + 1);
      state = commitStateOf(events, this.isBoundary);
      stored.summary = {
        ...stored.summary,
        eventCount: events.length,
        committedSeq: state.committedSeq,
        interrupted: state.interrupted,
      };
      recovered = { cutEvents: cut.length, quarantinedAt: `memory:quarantine/${id}` };
    }
    return loadedSession(
      structuredClone(stored.meta),
      structuredClone(stored.summary),
      events,
      state,
      recovered,
    );
  }

  read(id: string, range?: ReadRange): AsyncIterable<SessionEvent> {
    const self = this;
    return {
      async *[Symbol.asyncIterator]() {
        self.open();
        assertValidId(id);
        const { fromSeq, toSeq } = validateRange(range);
        self.step('read', id);
        const stored = self.volume.sessions.get(id);
        if (stored === undefined) throw errors.notFound(id);
        for (let seq = fromSeq; seq <= toSeq; seq++) {
          self.open();
          const line = stored.events[seq];
          if (line === undefined) return;
          yield JSON.parse(line) as SessionEvent;
        }
      },
    };
  }

  async list(query?: ListQuery): Promise<SessionPage> {
    this.open();
    const q = validateListQuery(query);
    this.step('list');
    const all = [...this.volume.sessions.values()]
      .map((s) => s.summary)
      .filter((s) => q.cwd === undefined || s.cwd === q.cwd)
      .filter((s) => q.cursor === undefined || isAfterCursor(s, q.cursor))
      .sort(compareForList);
    const sessions = all.slice(0, q.limit).map((s) => structuredClone(s));
    const page: SessionPage = { sessions, problems: [] };
    if (all.length > q.limit) page.nextCursor = encodeCursor(sessions[sessions.length - 1]!);
    return page;
  }

  async has(id: string): Promise<boolean> {
    this.open();
    assertValidId(id);
    this.step('read', id);
    return this.volume.sessions.has(id);
  }

  async update(id: string, patch: SummaryPatch): Promise<SessionSummary> {
    this.open();
    assertValidId(id);
    const valid = validatePatch(patch);
    this.step('read', id);
    const stored = this.volume.sessions.get(id);
    if (stored === undefined) {
      const pending = this.pending.get(id);
      if (pending === undefined) throw errors.notFound(id);
      const merged = { ...pending.patch, ...valid };
      const summary = applyPatch(emptySummary(pending.meta), merged, pending.meta.createdAt);
      pending.patch = merged;
      return summary;
    }
    this.step('write', id);
    stored.summary = applyPatch(stored.summary, valid, nextUpdatedAt(stored.summary.updatedAt));
    return structuredClone(stored.summary);
  }

  async delete(id: string, options?: DeleteOptions): Promise<void> {
    this.open();
    assertValidId(id);
    const ifUpdatedAt = validateDeleteOptions(options);
    this.step('delete', id);
    const stored = this.volume.sessions.get(id);
    if (ifUpdatedAt !== undefined && stored !== undefined && stored.summary.updatedAt !== ifUpdatedAt)
      throw deleteConflict(id, ifUpdatedAt, stored.summary.updatedAt);
    const existed = this.volume.sessions.delete(id);
    const wasPending = this.pending.delete(id);
    if (!existed && !wasPending) throw errors.notFound(id);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.pending.clear();
  }
}

/**
 * Opens an in-memory store. Pass the same {@link MemoryVolume} to several stores to share sessions
 * between them, or to "restart" after `close()`.
 */
export async function openMemoryStore(options: MemoryStoreOptions = {}): Promise<SessionStore> {
  return new MemoryStore(options);
}
