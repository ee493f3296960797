import type { SessionEvent } from '@tidemark/core';
import { canonicalEvent, sessionId } from '../workload/workload.js';

/** What went wrong, in the terms of contract §7.4. */
export type ViolationKind =
  /** A call rejected with something other than a TidemarkError. */
  | 'untyped-error'
  /** The engine runs with weaker settings than the durability mode promises (e.g. synchronous=NORMAL when strict). */
  | 'weak-setting'
  /** A store opened with no options promises less than `strict`, the default contract §4 gives. */
  | 'weak-default'
  /** has/list/load/update/delete reported absence for a session that exists. */
  | 'false-absence'
  /** An acknowledged event is missing or different after the fault was lifted. */
  | 'lost-event'
  /** Events no acknowledged or in-doubt batch wrote are presented (a partial or rejected batch). */
  | 'unacknowledged-visible'
  /** A session that never existed, or was deleted, is reported as existing. */
  | 'phantom'
  /** After the fault was lifted and the store reopened, list() shows a summary that disagrees with the log. */
  | 'stale-summary'
  /** After the fault was lifted and the store reopened, it could not take the next append. */
  | 'not-writable'
  /**
   * After the fault was lifted and the store reopened, a session's title or tags are not what the
   * acknowledged `create`/`update` calls set (an acknowledged update lost, or a failed one applied).
   */
  | 'lost-update'
  /**
   * An operation of the workload that no injected fault ever made fail in a whole error sweep: the
   * backend's fault hook (or port) does not reach it, so its fault paths went untested.
   */
  | 'uncovered-operation'
  /**
   * A write whose outcome was unknown (the connection was lost while it committed) was not
   * resolved by retrying the same call, or its error did not say it may be retried.
   */
  | 'outcome-unresolved'
  /** A fault class could not be run at all where it must be (a server required with CI=true). */
  | 'not-run'
  /**
   * A batch appended at a seq the log already holds, with different events, was not refused with
   * CONFLICT, or it changed the stored log (contract §3, §4).
   */
  | 'conflict-accepted'
  /**
   * Two store instances or processes writing one session broke the one-writer rule (contract §4):
   * both won a seq, the log holds an event out of its seq's place (a gap, a duplicate), or the
   * instances read different histories once the fault was lifted.
   */
  | 'concurrent-writers'
  /**
   * Two store instances racing with no fault injected: a call answered what no race explains
   * (CORRUPT for a session that is not damaged, IO, …) instead of success, CONFLICT, NOT_FOUND or
   * ALREADY_EXISTS, or a load after the race did.
   */
  | 'race-error'
  /**
   * `list()` walked page by page with a small limit (its cursors followed to the end) showed a
   * session on two pages, left out one that a single page lists, gave them in another order, put
   * more on a page than the limit, or its cursors never ended: a keyset cursor that breaks an
   * `updatedAt` tie wrongly, or a page cut short by a fault and answered as the last.
   */
  | 'list-paging'
  /** Bytes a repair or tail cut took out of a log are not in quarantine byte for byte (contract §1, §4). */
  | 'unquarantined-bytes'
  /**
   * The faults of a cell never produced the outcome that cell exists to test (a typed error):
   * the fault was swallowed, or it never reached the store, and the cell proves nothing.
   */
  | 'outcome-missing'
  /** A SessionWriter's flush() or close() resolved before the store acknowledged every event pushed (contract §8). */
  | 'flush-before-ack'
  /** Events a SessionWriter accepted were neither acknowledged by the store nor handed back by abandon() (contract §8). */
  | 'pending-dropped'
  /** A writer from resume() or fork() is not positioned at the stored next seq, or fork copied another range (contract §8). */
  | 'seq-misplaced';

/** One broken invariant. */
export interface Violation {
  kind: ViolationKind;
  detail: string;
  /** The workload step running when it was found (`#7 append(a)`); absent after the fault was lifted. */
  step?: string;
}

/** The summary fields of the workload's `create` and `update` calls that the harness checks. */
export interface ModelFields {
  title?: string;
  tags?: string[];
}

/** `fields` with `patch` applied, as core's applyPatch does for the fields the model tracks. */
export function mergeFields(fields: ModelFields, patch: ModelFields): ModelFields {
  const next: ModelFields = { ...fields };
  if (patch.title !== undefined) next.title = patch.title;
  if (patch.tags !== undefined) next.tags = [...patch.tags];
  return next;
}

function fieldsKey(fields: ModelFields): string {
  return JSON.stringify([fields.title ?? null, fields.tags ?? null]);
}

/** Whether a session exists for sure, surely not, or may (a batch or delete in doubt). */
export type Existence = 'yes' | 'no' | 'maybe';

/** The reference model of one workload session: what was acknowledged, what is in doubt. */
export class ModelSession {
  readonly id: string;
  /** `create` resolved in the current store instance (a pending session). */
  created = false;
  /** Canonical text of every acknowledged event, in seq order. */
  acked: string[] = [];
  /** Batches in doubt at seq `acked.length` (rejected under a persistent fault, or in flight at a crash). */
  inDoubt: string[][] = [];
  deleted: Existence = 'no';
  /**
   * Every title/tags state the store may show: one when every create/update settled cleanly; more
   * when an update was in doubt (rejected under a persistent fault, or in flight at a crash).
   */
  fieldStates: ModelFields[] = [{}];
  /**
   * `durability: 'relaxed'`: only a batch whose last event is a boundary, and everything before a
   * `close()` that resolved, must survive a crash (contract §4). Strict: every acknowledged batch.
   */
  relaxed = false;
  /**
   * Acknowledged events a crash must keep, when fewer than all (relaxed: up to the last boundary
   * batch); undefined when every acknowledged event is durable.
   */
  syncedThrough: number | undefined;
  /** Ends (event counts) of the acknowledged batches after {@link syncedThrough}: a crash loses whole batches only. */
  unsyncedEnds: number[] = [];
  /** Set on the model a crash state is checked with: the events after {@link syncedThrough} may be gone. */
  unsyncedMayBeLost = false;

  constructor(
    readonly key: string,
    readonly cwd: string | undefined,
  ) {
    this.id = sessionId(key);
  }

  get exists(): Existence {
    if (this.deleted === 'yes') return 'no';
    if (this.deleted === 'maybe') return 'maybe';
    if (this.acked.length > 0) return this.requiredEvents > 0 ? 'yes' : 'maybe';
    return this.inDoubt.length > 0 ? 'maybe' : 'no';
  }

  clone(): ModelSession {
    const copy = new ModelSession(this.key, this.cwd);
    copy.created = this.created;
    copy.acked = [...this.acked];
    copy.inDoubt = this.inDoubt.map((batch) => [...batch]);
    copy.deleted = this.deleted;
    copy.fieldStates = this.fieldStates.map((f) => mergeFields(f, {}));
    copy.relaxed = this.relaxed;
    copy.syncedThrough = this.syncedThrough;
    copy.unsyncedEnds = [...this.unsyncedEnds];
    copy.unsyncedMayBeLost = this.unsyncedMayBeLost;
    return copy;
  }

  /** Acknowledged events that must be present now: all, or after a crash of a relaxed store those synced. */
  get requiredEvents(): number {
    return this.unsyncedMayBeLost && this.syncedThrough !== undefined
      ? this.syncedThrough
      : this.acked.length;
  }

  /** An acknowledged batch; `boundary`: its last event closes a unit of work (relaxed mode syncs it). */
  ack(batch: readonly string[], boundary: boolean): void {
    if (this.relaxed && !boundary) this.syncedThrough ??= this.acked.length;
    this.acked.push(...batch);
    this.inDoubt = [];
    if (!this.relaxed || boundary) this.synced();
    else this.unsyncedEnds.push(this.acked.length);
  }

  /** Everything acknowledged is durable: a boundary batch (relaxed) or a `close()` resolved. */
  synced(): void {
    this.syncedThrough = undefined;
    this.unsyncedEnds = [];
  }

  /**
   * The store showed `events` (or absence, `undefined`) after recovery: from now on that is what
   * it must keep, so that a second reopen is compared with the first exactly.
   */
  settle(events: readonly string[] | undefined): void {
    if (events === undefined) {
      if (this.deleted !== 'no' || this.acked.length > 0 || this.inDoubt.length > 0) this.deleted = 'yes';
    } else {
      this.acked = [...events];
      this.deleted = 'no';
    }
    this.inDoubt = [];
    this.unsyncedMayBeLost = false;
    this.synced();
  }

  /** An acknowledged create or update: every possible state gets the patch. */
  ackFields(patch: ModelFields): void {
    this.fieldStates = dedupe(this.fieldStates.map((f) => mergeFields(f, patch)));
  }

  /** An update in doubt: it may or may not have been applied. */
  doubtFields(patch: ModelFields): void {
    this.fieldStates = dedupe([...this.fieldStates, ...this.fieldStates.map((f) => mergeFields(f, patch))]);
  }

  /** Whether title and tags as a store shows them are one of the possible states. */
  fieldsMatch(shown: ModelFields): boolean {
    const key = fieldsKey(shown);
    return this.fieldStates.some((f) => fieldsKey(f) === key);
  }

  /** The possible states, for messages. */
  describeFields(): string {
    return this.fieldStates.map(fieldsKey).join(' or ');
  }
}

function dedupe(states: ModelFields[]): ModelFields[] {
  const seen = new Set<string>();
  return states.filter((f) => {
    const key = fieldsKey(f);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** The title and tags of a summary, as the model tracks them. */
export function shownFields(summary: { title?: string; tags?: string[] }): ModelFields {
  const shown: ModelFields = {};
  if (summary.title !== undefined) shown.title = summary.title;
  if (summary.tags !== undefined) shown.tags = [...summary.tags];
  return shown;
}

/** Result of comparing a loaded log with the model. */
export interface LogComparison {
  /** Acknowledged events missing or changed. */
  lost: number;
  /** Set when events beyond the acknowledged ones are not exactly one in-doubt batch. */
  unacknowledged?: string;
}

/**
 * Compares a loaded log with the model: every acknowledged event must come first, byte for byte;
 * what follows must be nothing, or (when `allowInDoubt`) exactly one whole in-doubt batch.
 * Pure, so that the rule is tested on its own.
 */
export function compareLog(
  model: ModelSession,
  events: readonly SessionEvent[],
  allowInDoubt: boolean,
): LogComparison {
  const loaded = events.map(canonicalEvent);
  let matching = 0;
  while (matching < model.acked.length && loaded[matching] === model.acked[matching]) matching++;
  const required = model.requiredEvents;
  const result: LogComparison = { lost: Math.max(0, required - matching) };
  if (result.lost > 0) return result;
  // Past what a crash must keep, whole acknowledged batches may be gone (relaxed durability):
  // the log then ends at the end of a batch, and nothing follows.
  const kept = [required, ...model.unsyncedEnds, model.acked.length].filter((end) => end <= matching).pop()!;
  const extra = loaded.slice(kept);
  if (extra.length === 0) return result;
  const whole =
    allowInDoubt &&
    kept === model.acked.length &&
    model.inDoubt.some((batch) => batch.length === extra.length && batch.every((e, i) => e === extra[i]));
  if (!whole)
    result.unacknowledged = `${extra.length} event(s) after seq ${kept - 1} that no acknowledged batch wrote whole`;
  return result;
}

/** The model of all workload sessions. */
export class WorkloadModel {
  readonly sessions = new Map<string, ModelSession>();

  /** @param relaxed - the store runs with `durability: 'relaxed'` ({@link ModelSession.relaxed}). */
  constructor(readonly relaxed = false) {}

  session(key: string, cwd?: string): ModelSession {
    let session = this.sessions.get(key);
    if (session === undefined) {
      session = new ModelSession(key, cwd);
      session.relaxed = this.relaxed;
      this.sessions.set(key, session);
    }
    return session;
  }

  clone(): WorkloadModel {
    const copy = new WorkloadModel(this.relaxed);
    for (const [key, session] of this.sessions) copy.sessions.set(key, session.clone());
    return copy;
  }

  /** A copy to check a crash state with: the batches a relaxed store had not synced may be gone. */
  afterCrash(): WorkloadModel {
    const copy = this.clone();
    for (const session of copy.sessions.values()) session.unsyncedMayBeLost = true;
    return copy;
  }

  /** Acknowledged events, all sessions. */
  get ackedEvents(): number {
    let n = 0;
    for (const session of this.sessions.values()) if (session.exists === 'yes') n += session.acked.length;
    return n;
  }
}
