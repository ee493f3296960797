// The session lifecycle of contract §8 over any two SessionStores: the main store and a trash store.
// Nothing is destroyed before the grace period: prune and delete move sessions into the trash
// (copy, verify, record, then delete from the main store), restore moves them back.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import {
  assertValidId,
  isIsoTime,
  isTidemarkError,
  type JsonValue,
  type ListProblem,
  listAll,
  type SessionStore,
  type SessionSummary,
  TidemarkError,
} from '@tidemark/core';
import { ActivePointers } from './active.js';
import { type AuditEntry, AuditLog } from './audit.js';
import { copySession } from './copy.js';
import { ensurePrivateDir, withFileLock } from './files.js';
import { DAY_MS, isPurgeable, type PrunePlan, planPrune } from './prune.js';

/** Directory of `home` holding the per-session move locks. */
export const MOVES_DIR = 'moves';

/** The attrs key under which a trashed session records why and when it was trashed. */
export const TRASH_ATTR = 'tidemark.trash';

/** Options of {@link openLifecycle}. */
export interface LifecycleOptions {
  /** Directory of the pointer file and the audit log (e.g. `$TIDEMARK_HOME`). Created 0700. */
  home: string;
  /** The main store. */
  store: SessionStore;
  /** Its address, recorded in the audit log (`jsonl:/x`). */
  storeAddress: string;
  /** The trash store (a second store, e.g. a JSONL store in `$TIDEMARK_HOME/trash`). */
  trash: SessionStore;
  /** Its address, for messages and the audit log. */
  trashAddress: string;
  /** Days a trashed session is kept before `purge` may destroy it. Default 7. */
  graceDays?: number;
  /** Clock (tests). */
  now?: () => Date;
}

/** A session in the trash. */
export interface TrashEntry {
  id: string;
  /** When it was moved to the trash. */
  trashedAt: string;
  /** When `purge` may destroy it. */
  purgeAfter: string;
  /** `pruned` or `deleted`. */
  reason: string;
  /** Address of the store it came from. */
  from: string;
  /** Its summary in the trash store (attrs without the trash record). */
  summary: SessionSummary;
}

/** Options of {@link Lifecycle.prune}. */
export interface PruneOptions {
  /** Sessions not updated for this many days are pruned. Default 30. */
  olderThanDays?: number;
  /** Only report what would happen. Default true: applying needs `dryRun: false`. */
  dryRun?: boolean;
  /** The current time (tests). */
  now?: Date;
}

/** The report of {@link Lifecycle.prune}. */
export interface PruneReport extends PrunePlan {
  dryRun: boolean;
  /** Ids moved to the trash (empty for a dry run). */
  trashed: string[];
  /**
   * Ids of sessions without events that were removed outright: a store holds a session only from
   * its first event, so the trash cannot hold them. Their summary fields are in the audit entry.
   */
  removedEmpty: string[];
  /** Sessions that could not be moved, with the typed error; they stay in the main store. */
  failed: { id: string; error: TidemarkError }[];
  /** Sessions the main store could not describe: never silently treated as absent. */
  problems: ListProblem[];
}

/** The report of {@link Lifecycle.purge}. */
export interface PurgeReport {
  purged: string[];
  /** Still within their grace period. */
  kept: TrashEntry[];
  /** Trashed sessions the trash store could not describe: kept, never taken for absent. */
  problems: ListProblem[];
}

/** Where a session is, as far as the stores and the audit log can tell. */
export type SessionLocation =
  | { status: 'present'; id: string; store: string }
  | { status: 'trashed'; id: string; entry: TrashEntry }
  | { status: 'removed'; id: string; store: string; lastEntry: AuditEntry }
  /** The audit log says the session should be in the store, and the store does not have it. */
  | { status: 'audited-missing'; id: string; store: string; lastEntry: AuditEntry; message: string }
  | { status: 'unknown'; id: string };

function trashInfoOf(summary: SessionSummary): { [key: string]: JsonValue } | undefined {
  const info = summary.attrs?.[TRASH_ATTR];
  return typeof info === 'object' && info !== null && !Array.isArray(info) ? info : undefined;
}

/** Every session of `store` and, once per id, every session it could only report as a problem. */
async function everySession(
  store: SessionStore,
): Promise<{ sessions: SessionSummary[]; problems: ListProblem[] }> {
  const sessions: SessionSummary[] = [];
  const problems: ListProblem[] = [];
  for await (const entry of listAll(store)) {
    if ('summary' in entry) sessions.push(entry.summary);
    else problems.push(entry.problem);
  }
  return { sessions, problems };
}

/**
 * Active pointers, prune, trash and audit over a main store and a trash store. Store-agnostic:
 * it only uses the SessionStore contract.
 */
export class Lifecycle {
  readonly active: ActivePointers;
  readonly audit: AuditLog;
  readonly graceDays: number;
  private readonly options: LifecycleOptions;
  private readonly now: () => Date;

  constructor(options: LifecycleOptions) {
    this.options = options;
    this.now = options.now ?? (() => new Date());
    this.active = new ActivePointers(options.home);
    this.audit = new AuditLog(options.home, this.now);
    this.graceDays = options.graceDays ?? 7;
    if (!(this.graceDays >= 0)) throw new TidemarkError('INVALID', 'lifecycle: graceDays must be ≥ 0');
    // Moving a session into its own store and then deleting it there would destroy it.
    if (options.trash === options.store)
      throw new TidemarkError(
        'INVALID',
        'lifecycle: the trash must be a different store than the main store',
      );
  }

  /** Makes `id` the active session of the project directory `cwd`. */
  setActive(cwd: string, id: string): Promise<void> {
    return this.active.set(cwd, id);
  }

  /** The active session of `cwd`, if any. */
  getActive(cwd: string): Promise<string | undefined> {
    return this.active.get(cwd);
  }

  /** Records that a session was created in the main store (for "audited but missing"). */
  async recordCreated(id: string, details?: { [key: string]: JsonValue }): Promise<void> {
    await this.audit.record('created', id, this.options.storeAddress, details);
  }

  /**
   * Moves sessions not updated for `olderThanDays` (default 30) to the trash, sparing the active
   * session of every project. A preview by default (`dryRun: true`): nothing changes.
   */
  async prune(options: PruneOptions = {}): Promise<PruneReport> {
    const olderThanDays = options.olderThanDays ?? 30;
    if (!(olderThanDays >= 0)) throw new TidemarkError('INVALID', 'prune: olderThanDays must be ≥ 0');
    const dryRun = options.dryRun ?? true;
    const now = options.now ?? this.now();
    const { sessions, problems } = await everySession(this.options.store);
    const activeIds = await this.active.ids();
    const plan = planPrune(sessions, activeIds, olderThanDays, now);
    const report: PruneReport = { ...plan, dryRun, trashed: [], removedEmpty: [], failed: [], problems };
    if (dryRun) return report;
    for (const summary of plan.toTrash) {
      try {
        const entry = await this.withMoveLock(summary.id, () =>
          this.moveToTrash(summary.id, 'pruned', now, { olderThanDays }, summary),
        );
        (entry === undefined ? report.removedEmpty : report.trashed).push(summary.id);
      } catch (error) {
        if (!isTidemarkError(error)) throw error;
        report.failed.push({ id: summary.id, error });
      }
    }
    return report;
  }

  /**
   * Moves one session to the trash on request (audit action `deleted`). The active pointer that
   * names it, if any, is cleared. NOT_FOUND when absent; see {@link locate} for why.
   *
   * @returns its trash entry; undefined for a session without events (left so by a tail cut or a
   * repair), which no store can hold as a copy: it is removed outright, and the audit entry keeps
   * its summary fields.
   */
  async delete(id: string): Promise<TrashEntry | undefined> {
    const entry = await this.withMoveLock(id, () => this.moveToTrash(id, 'deleted', this.now(), {}));
    const pointers = await this.active.all();
    for (const [cwd, active] of Object.entries(pointers)) if (active === id) await this.active.clear(cwd, id);
    return entry;
  }

  /**
   * Sessions in the trash, oldest trashing first (ties by id). Sessions the trash store cannot
   * describe are left out here: use {@link trashListing} to see them.
   */
  async trashList(): Promise<TrashEntry[]> {
    return (await this.trashListing()).entries;
  }

  /** The trash: its sessions as {@link trashList} orders them, and the ones it could not describe. */
  async trashListing(): Promise<{ entries: TrashEntry[]; problems: ListProblem[] }> {
    const { sessions, problems } = await everySession(this.options.trash);
    const byTimeThenId = (a: TrashEntry, b: TrashEntry) =>
      a.trashedAt !== b.trashedAt
        ? a.trashedAt < b.trashedAt
          ? -1
          : 1
        : a.id < b.id
          ? -1
          : a.id > b.id
            ? 1
            : 0;
    return { entries: sessions.map((s) => this.entryOf(s)).sort(byTimeThenId), problems };
  }

  /**
   * Brings a trashed session back into the main store with byte-identical events and its summary
   * fields, then removes it from the trash. ALREADY_EXISTS/CONFLICT if the main store holds a
   * different session with this id.
   */
  async restore(id: string): Promise<SessionSummary> {
    return this.withMoveLock(id, () => this.restoreLocked(id));
  }

  private async restoreLocked(id: string): Promise<SessionSummary> {
    const loaded = await this.options.trash.load(id);
    const info = trashInfoOf(loaded.summary);
    await copySession(this.options.trash, this.options.store, id, {
      attrs: () => {
        const original = info?.attrs;
        return typeof original === 'object' && original !== null && !Array.isArray(original)
          ? original
          : undefined;
      },
    });
    // A touch (an empty update moves updatedAt) before the trash copy goes: a move of this
    // session that was stopped between its copy and its conditional delete (past the move lock's
    // staleness) then meets CONFLICT instead of deleting the restored session, and if that move
    // got its delete in first, this answers NOT_FOUND and the trash copy stays.
    await this.options.store.update(id, {});
    await this.audit.record('restored', id, this.options.storeAddress, {
      from: this.options.trashAddress,
      events: loaded.events.length,
    });
    // Only the trash version this restore copied: a move of the session back into the trash
    // since (possible if this process stalled past the move lock's 10 s staleness) left a copy
    // that must outlive this restore. Then both stores keep the session, and CONFLICT says so.
    try {
      await this.options.trash.delete(id, { ifUpdatedAt: loaded.summary.updatedAt });
    } catch (error) {
      if (!isTidemarkError(error, 'CONFLICT')) throw error;
      throw new TidemarkError(
        'CONFLICT',
        `session ${id}: restored to ${this.options.storeAddress}, but its trash copy changed meanwhile and is kept too`,
        { sessionId: id, cause: error },
      );
    }
    const restored = await this.options.store.load(id);
    return restored.summary;
  }

  /** Destroys trashed sessions whose grace period is over at `now`. */
  async purge(options: { now?: Date } = {}): Promise<PurgeReport> {
    const now = options.now ?? this.now();
    const { entries, problems } = await this.trashListing();
    const report: PurgeReport = { purged: [], kept: [], problems };
    for (const entry of entries) {
      if (!isPurgeable(entry.trashedAt, this.graceDays, now)) {
        report.kept.push(entry);
        continue;
      }
      // Only the version that was listed: a delete that resumed onto this copy meanwhile stamped
      // a new trashedAt (moving updatedAt), and its grace period starts again.
      try {
        await this.withMoveLock(entry.id, () =>
          this.options.trash.delete(entry.id, { ifUpdatedAt: entry.summary.updatedAt }),
        );
      } catch (error) {
        // Gone meanwhile (restored, or purged by another process): nothing left to purge here.
        if (isTidemarkError(error, 'NOT_FOUND')) continue;
        if (!isTidemarkError(error, 'CONFLICT')) throw error;
        report.kept.push(entry);
        continue;
      }
      await this.audit.record('purged', entry.id, this.options.trashAddress, { trashedAt: entry.trashedAt });
      report.purged.push(entry.id);
    }
    return report;
  }

  /**
   * Where a session is: in the main store, in the trash, removed as the audit log records, known
   * to the audit log but missing from the store (`audited-missing`), or unknown.
   */
  async locate(id: string): Promise<SessionLocation> {
    const { store, storeAddress, trash } = this.options;
    if (await store.has(id)) return { status: 'present', id, store: storeAddress };
    if (await trash.has(id))
      return { status: 'trashed', id, entry: this.entryOf((await trash.load(id)).summary) };
    const history = await this.audit.history(id, storeAddress);
    const lastEntry = history[history.length - 1];
    if (lastEntry === undefined) return { status: 'unknown', id };
    if (lastEntry.action === 'deleted' || lastEntry.action === 'pruned' || lastEntry.action === 'purged') {
      return { status: 'removed', id, store: storeAddress, lastEntry };
    }
    return {
      status: 'audited-missing',
      id,
      store: storeAddress,
      lastEntry,
      message: `session ${id}: audited but missing from ${storeAddress} (last audit entry: ${lastEntry.action} at ${lastEntry.time})`,
    };
  }

  private entryOf(summary: SessionSummary): TrashEntry {
    const info = trashInfoOf(summary);
    // A record edited by hand or damaged may name no valid time: the copy's own updatedAt (the time
    // it was written to the trash) stands in, so listing and purging never meet an invalid date.
    const trashedAt = isIsoTime(info?.trashedAt) ? info.trashedAt : summary.updatedAt;
    const original = info?.attrs;
    const shown: SessionSummary = { ...summary };
    if (typeof original === 'object' && original !== null && !Array.isArray(original)) shown.attrs = original;
    else delete shown.attrs;
    return {
      id: summary.id,
      trashedAt,
      purgeAfter: new Date(Date.parse(trashedAt) + this.graceDays * DAY_MS).toISOString(),
      reason: typeof info?.reason === 'string' ? info.reason : 'unknown',
      from: typeof info?.from === 'string' ? info.from : 'unknown',
      summary: shown,
    };
  }

  /**
   * Copy into the trash (verified), delete from the main store (only the version copied), then
   * record: crash-safe order, as the session is in at least one store at every step. Recording
   * after the delete means a move that fails leaves no audit entry claiming it happened; a crash
   * between the delete and the record leaves the session in the trash, where `locate` finds it.
   */
  /** Call it under {@link withMoveLock} of `id`. */
  private async moveToTrash(
    id: string,
    reason: 'pruned' | 'deleted',
    now: Date,
    details: { [key: string]: JsonValue },
    summary?: SessionSummary,
  ): Promise<TrashEntry | undefined> {
    const { store, storeAddress, trash, trashAddress } = this.options;
    const source = summary ?? (await store.load(id)).summary;
    if (source.eventCount === 0) return this.removeEmpty(id, reason, details, source);
    const trashedAt = now.toISOString();
    // Marks the trash record as this move's: a move by another process (one that took the move
    // lock over while this one was stopped past its staleness) writes its own mark.
    const move = randomBytes(8).toString('hex');
    const copy = await copySession(store, trash, id, {
      sourceSummary: source,
      attrs: (original) => ({
        [TRASH_ATTR]: {
          trashedAt,
          reason,
          from: storeAddress,
          move,
          ...(original !== undefined && { attrs: original }),
        },
      }),
    });
    // Only the version that was copied is deleted, in one step under the store's write lock: a
    // writer that appended or updated after the summary was read would otherwise lose that work.
    try {
      await this.deleteVersion(id, copy.source.updatedAt);
    } catch (error) {
      if (isTidemarkError(error, 'CONFLICT')) await this.dropOwnCopy(id, move);
      throw error;
    }
    await this.audit.record(reason, id, storeAddress, {
      ...details,
      trash: trashAddress,
      events: copy.events,
      hash: copy.hash,
      createdAt: copy.source.createdAt,
      updatedAt: copy.source.updatedAt,
    });
    return this.entryOf((await trash.load(id)).summary);
  }

  /**
   * After a move met CONFLICT (the session changed and stays in the main store): drops the trash
   * copy if it is still the one this move wrote (its mark, and the version read with it), or the
   * trash would list and could restore an old version of a session never moved. A copy another
   * move has written since is left alone. Best effort: a copy left behind is only an old version.
   */
  private async dropOwnCopy(id: string, move: string): Promise<void> {
    const { trash } = this.options;
    try {
      const current = (await trash.load(id)).summary;
      if (trashInfoOf(current)?.move !== move) return;
      await trash.delete(id, { ifUpdatedAt: current.updatedAt });
    } catch {
      // Left as it is; the CONFLICT of the move is what the caller needs to hear.
    }
  }

  /** A session without events: nothing to copy, so removed outright and recorded in full. */
  private async removeEmpty(
    id: string,
    reason: 'pruned' | 'deleted',
    details: { [key: string]: JsonValue },
    source: SessionSummary,
  ): Promise<undefined> {
    await this.deleteVersion(id, source.updatedAt);
    const kept: { [key: string]: JsonValue } = {};
    for (const key of ['cwd', 'title', 'firstPrompt', 'tags', 'attrs', 'parent'] as const) {
      const value = source[key];
      if (value !== undefined) kept[key] = value as JsonValue;
    }
    await this.audit.record(reason, id, this.options.storeAddress, {
      ...details,
      events: 0,
      empty: true,
      createdAt: source.createdAt,
      updatedAt: source.updatedAt,
      summary: kept,
    });
    return undefined;
  }

  /**
   * Runs `fn` as the only move of `id` among all processes sharing this home (a lock file in
   * `<home>/moves/`): two moves of one session interleaved could otherwise drop each other's trash
   * copy and leave the session in neither store. CONFLICT (retryable) while another move runs.
   */
  private withMoveLock<T>(id: string, fn: () => Promise<T>): Promise<T> {
    assertValidId(id);
    return withFileLock(join(this.options.home, MOVES_DIR, id), fn);
  }

  /** Deletes `id` from the main store only if it is still at `updatedAt`; CONFLICT says so. */
  private async deleteVersion(id: string, updatedAt: string): Promise<void> {
    try {
      await this.options.store.delete(id, { ifUpdatedAt: updatedAt });
    } catch (error) {
      if (!isTidemarkError(error, 'CONFLICT')) throw error;
      throw new TidemarkError(
        'CONFLICT',
        `session ${id}: changed while it was being moved to the trash; it stays in ${this.options.storeAddress}`,
        { sessionId: id, cause: error },
      );
    }
  }
}

/** Opens the lifecycle over a main store and a trash store; creates `home` (0700). */
export async function openLifecycle(options: LifecycleOptions): Promise<Lifecycle> {
  await ensurePrivateDir(options.home);
  return new Lifecycle(options);
}
