// The worked example of writing a backend: MemoryStore extends SessionStoreBase and implements only
// the storage hooks, reading and writing a MemoryVolume. Every rule of the contract (validation,
// CLOSED, per-session order, lazy create) is the base class's.
import {
  type AppendResult,
  applyPatch,
  assertSameEvents,
  assertStoredAfter,
  backendOptionNames,
  commitStateOf,
  deleteConflict,
  emptySummary,
  errors,
  type LoadedSession,
  loadedSession,
  type MaintenanceProblem,
  nextUpdatedAt,
  nowIso,
  type PreparedEvent,
  pageOf,
  planAppend,
  type RepairOptions,
  type RepairReport,
  type Reservation,
  type SessionEvent,
  type SessionHealth,
  type SessionMeta,
  type SessionPage,
  SessionStoreBase,
  type SessionSummary,
  type StoreOptions,
  type SummaryPatch,
  summaryAfterAppend,
  summaryAfterCut,
  type TailPolicy,
  toIoError,
  type ValidListQuery,
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

/** A storage step, as {@link MemoryStoreOptions.beforeStorageStep} names it. */
export type MemoryStorageStep = 'read' | 'write' | 'list' | 'delete';

/** Options of {@link openMemoryStore}. */
export interface MemoryStoreOptions extends StoreOptions {
  /** The volume to use; a fresh one when omitted. */
  volume?: MemoryVolume;
  /**
   * Fault hook for tests and the fault harness: called before each storage step with the operation
   * name; whatever it throws surfaces as an IO error, and the step does not happen.
   */
  beforeStorageStep?: (operation: MemoryStorageStep, id?: string) => void;
}

/** Every name {@link MemoryStoreOptions} adds to the shared options; any other is refused. */
const MEMORY_OPTION_NAMES = backendOptionNames<MemoryStoreOptions>({ volume: true, beforeStorageStep: true });

const parse = (line: string) => JSON.parse(line) as SessionEvent;

/**
 * The in-memory backend. Open it with {@link openMemoryStore}. Each hook announces its storage
 * steps to the fault hook in a fixed order (a read before a write), which the fault harness counts.
 */
export class MemoryStore extends SessionStoreBase {
  protected readonly formatVersion = MEMORY_FORMAT_VERSION;
  protected override readonly storageChecksAfter = true;
  private readonly volume: MemoryVolume;
  private readonly beforeStorageStep: MemoryStoreOptions['beforeStorageStep'];

  constructor(options: MemoryStoreOptions = {}) {
    super(options, 'openMemoryStore', MEMORY_OPTION_NAMES);
    this.volume = options.volume ?? new MemoryVolume();
    this.beforeStorageStep = options.beforeStorageStep;
  }

  /** Announces a storage step; what the fault hook throws becomes IO and the step does not happen. */
  private step(operation: MemoryStorageStep, id?: string): void {
    if (this.beforeStorageStep === undefined) return;
    try {
      this.beforeStorageStep(operation, id);
    } catch (error) {
      throw toIoError(error, `memory ${operation}${id === undefined ? '' : ` of ${id}`}`, id);
    }
  }

  protected async storageHas(id: string): Promise<boolean> {
    this.step('read', id);
    return this.volume.sessions.has(id);
  }

  protected async storageAppend(
    id: string,
    batch: readonly PreparedEvent[],
    reservation: Reservation | undefined,
    after?: PreparedEvent,
  ): Promise<AppendResult> {
    this.step('read', id);
    const stored = this.volume.sessions.get(id);
    if (stored === undefined && reservation === undefined) throw errors.notFound(id);
    if (after !== undefined) {
      const line = stored?.events[after.event.seq];
      assertStoredAfter(id, line === undefined ? undefined : parse(line), after);
    }
    const nextSeq = stored?.events.length ?? 0;
    const plan = planAppend(id, nextSeq, batch);
    if (plan.kind === 'compare') {
      assertSameEvents(id, stored!.events.slice(plan.fromSeq, plan.toSeq + 1).map(parse), batch);
      return { nextSeq };
    }
    this.step('write', id);
    const now = nowIso();
    const appended = batch.map((item) => item.event);
    const lines = batch.map((item) => item.json);
    if (stored === undefined) {
      // The first batch: the session appears with its header and the fields kept since create.
      const { meta, patch } = reservation!;
      const summary = applyPatch(emptySummary(meta), patch, now);
      this.volume.sessions.set(id, {
        meta: { ...meta, formatVersion: MEMORY_FORMAT_VERSION },
        summary: summaryAfterAppend(summary, appended, this.settings.isBoundary, now),
        events: lines,
      });
    } else {
      stored.events.push(...lines);
      const updatedAt = nextUpdatedAt(stored.summary.updatedAt, now);
      stored.summary = summaryAfterAppend(stored.summary, appended, this.settings.isBoundary, updatedAt);
    }
    return { nextSeq: nextSeq + batch.length };
  }

  protected async storageLoad(id: string, tail: TailPolicy): Promise<LoadedSession> {
    this.step('read', id);
    const stored = this.stored(id);
    let events = stored.events.map(parse);
    let recovered: LoadedSession['recovered'];
    if (tail === 'cut' && commitStateOf(events, this.settings.isBoundary).interrupted) {
      const cut = this.cutTail(id, stored, events);
      events = events.slice(0, events.length - cut);
      recovered = { cutEvents: cut, quarantinedAt: quarantineOf(id) };
    }
    const state = commitStateOf(events, this.settings.isBoundary);
    const meta = structuredClone(stored.meta);
    return loadedSession(meta, structuredClone(stored.summary), events, state, recovered);
  }

  protected async *storageRead(id: string, fromSeq: number, toSeq: number): AsyncIterable<SessionEvent> {
    this.step('read', id);
    const stored = this.stored(id);
    for (let seq = fromSeq; seq <= toSeq; seq++) {
      const line = stored.events[seq];
      if (line === undefined) return;
      yield parse(line);
    }
  }

  protected override async *storageReadLast(
    id: string,
    fromSeq: number,
    toSeq: number,
    last: number,
  ): AsyncIterable<SessionEvent> {
    this.step('read', id);
    const stored = this.stored(id);
    const end = Math.min(toSeq, stored.events.length - 1);
    for (let seq = Math.max(fromSeq, end - last + 1); seq <= end; seq++) yield parse(stored.events[seq]!);
  }

  protected async storageList(query: ValidListQuery): Promise<SessionPage> {
    this.step('list');
    const page = pageOf(
      [...this.volume.sessions.values()].map((s) => s.summary),
      query,
    );
    return { ...page, sessions: page.sessions.map((s) => structuredClone(s)) };
  }

  protected async storageUpdate(id: string, patch: SummaryPatch): Promise<SessionSummary | undefined> {
    this.step('read', id);
    const stored = this.volume.sessions.get(id);
    if (stored === undefined) return undefined;
    this.step('write', id);
    stored.summary = applyPatch(stored.summary, patch, nextUpdatedAt(stored.summary.updatedAt));
    return structuredClone(stored.summary);
  }

  protected async storageDelete(id: string, ifUpdatedAt: string | undefined): Promise<'deleted' | 'absent'> {
    this.step('delete', id);
    const stored = this.volume.sessions.get(id);
    if (stored === undefined) return 'absent';
    if (ifUpdatedAt !== undefined && stored.summary.updatedAt !== ifUpdatedAt)
      throw deleteConflict(id, ifUpdatedAt, stored.summary.updatedAt);
    this.volume.sessions.delete(id);
    return 'deleted';
  }

  protected async storageClose(): Promise<void> {
    // Nothing to release: the volume outlives the store.
  }

  /** A memory log can be neither torn nor corrupt: only an interrupted turn is worth reporting. */
  protected async storageVerify(id: string): Promise<SessionHealth> {
    this.step('read', id);
    const stored = this.stored(id);
    const state = commitStateOf(stored.events.map(parse), this.settings.isBoundary);
    const eventCount = stored.events.length;
    const health: SessionHealth = { sessionId: id, status: 'ok', eventCount, problems: [] };
    health.committedSeq = state.committedSeq;
    if (state.interrupted) {
      health.status = 'interrupted';
      health.problems.push(interruptedProblem(id, state.committedSeq, eventCount));
    }
    return health;
  }

  protected async storageRepair(id: string, options: Required<RepairOptions>): Promise<RepairReport> {
    this.step('read', id);
    const stored = this.stored(id);
    const events = stored.events.map(parse);
    const state = commitStateOf(events, this.settings.isBoundary);
    const report: RepairReport = { sessionId: id, eventCount: events.length, removed: [], quarantined: [] };
    if (options.tail === 'cut' && state.interrupted) {
      const problem = interruptedProblem(id, state.committedSeq, events.length);
      const cut = this.cutTail(id, stored, events);
      report.removed.push({ ...problem, quarantinedAt: quarantineOf(id) });
      report.cutEvents = cut;
      report.eventCount = events.length - cut;
      report.quarantined.push(quarantineOf(id));
    }
    return report;
  }

  private stored(id: string): StoredSession {
    const stored = this.volume.sessions.get(id);
    if (stored === undefined) throw errors.notFound(id);
    return stored;
  }

  /** Moves the events after the last boundary to the volume's quarantine; returns how many. */
  private cutTail(id: string, stored: StoredSession, events: readonly SessionEvent[]): number {
    this.step('write', id);
    const { committedSeq } = commitStateOf(events, this.settings.isBoundary);
    const cut = events.slice(committedSeq + 1);
    this.volume.quarantine.set(id, [...(this.volume.quarantine.get(id) ?? []), ...cut]);
    stored.events.length = committedSeq + 1;
    stored.summary = summaryAfterCut(
      stored.summary,
      events.slice(0, committedSeq + 1),
      this.settings.isBoundary,
    );
    return cut.length;
  }
}

function quarantineOf(id: string): string {
  return `memory:quarantine/${id}`;
}

function interruptedProblem(id: string, committedSeq: number, eventCount: number): MaintenanceProblem {
  return {
    kind: 'interrupted',
    sessionId: id,
    message: `interrupted turn: ${eventCount - 1 - committedSeq} event(s) after the last boundary (seq ${committedSeq})`,
    seq: committedSeq + 1,
  };
}

/**
 * Opens an in-memory store. Pass the same {@link MemoryVolume} to several stores to share sessions
 * between them, or to "restart" after `close()`.
 * @throws TidemarkError INVALID for an invalid shared option (durability, boundaryTypes, limits).
 */
export async function openMemoryStore(options: MemoryStoreOptions = {}): Promise<MemoryStore> {
  return new MemoryStore(options);
}
