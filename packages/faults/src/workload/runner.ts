import {
  DEFAULT_BOUNDARY_TYPES,
  isTidemarkError,
  type SessionEvent,
  type SessionStore,
  type TidemarkError,
} from '@tidemark/core';
import { compareLog, type ModelSession, type Violation, type WorkloadModel } from '../verdicts/model.js';
import {
  AGENT_WORKLOAD,
  canonicalEvent,
  holdClock,
  WORKLOAD_CWDS,
  type WorkloadStep,
  workloadEvent,
} from './workload.js';

/** What one run observed. */
export interface RunOutcome {
  violations: Violation[];
  /** Calls that rejected with a TidemarkError. */
  errorsSurfaced: number;
  /** Acknowledged events missing after the fault was lifted. */
  lostEvents: number;
  /** false-absence violations. */
  absences: number;
  /** The first call that rejected with a typed error (NOT_FOUND aside), for the report. */
  firstError?: TypedErrorRecord;
}

/** A call that got a typed error, and the workload step it belongs to. */
export interface TypedErrorRecord {
  /** The call, e.g. `append(sess-a)` or `reopen after lift`. */
  call: string;
  /** The workload step running then, e.g. `#7 append(a)`; absent outside the workload. */
  step?: string;
  code: string;
  errno?: string;
  message: string;
}

/** The step name of the `close()` after the workload, in reports (`step`) and fault labels. */
export const CLOSE_STEP = 'close()';

/** A workload step as the report names it: its 1-based index, operation and session key. */
export function describeStep(step: WorkloadStep, index: number): string {
  const target =
    step.kind === 'list'
      ? (step.cwd ?? '')
      : step.kind === 'appendTogether'
        ? step.appends.map((a) => a.key).join(',')
        : step.key;
  return `#${index + 1} ${step.kind}(${target})`;
}

/** A fresh outcome. */
export function emptyOutcome(): RunOutcome {
  return { violations: [], errorsSurfaced: 0, lostEvents: 0, absences: 0 };
}

/** The settled result of a store call made through {@link Checker.attempt}. */
export type Attempt<T> = { ok: true; value: T } | { ok: false; error: TidemarkError | undefined };

/** Options of {@link runWorkload}. */
export interface WorkloadRunOptions {
  /**
   * The fault is spent once it has fired: a rejected append must have left the log as it was, which
   * is checked with a load right away; then the batch is retried once, as an agent would.
   */
  checkFailedAppend: boolean;
  /** Called with the batch in flight (before the call) and `undefined` once it settled. */
  onInflight?: (inflight: { session: ModelSession; batch: string[] } | undefined) => void;
  /** Called before each step, and with `undefined` after the last. */
  onStep?: (step: WorkloadStep | undefined) => void;
  /** Stop after this many steps (crash sweeps do not need to run past their crash point). */
  steps?: readonly WorkloadStep[];
  /** Runs the write-path steps (`write`, `resume`, `fork`), which keep writers across steps. */
  extension?: WorkloadExtension;
}

/** The write-path steps, run by a {@link WorkloadExtension}. */
export type WritePathStep = Extract<WorkloadStep, { kind: 'write' | 'resume' | 'fork' }>;

/**
 * Runs the steps of a workload that keep state between steps (the SessionWriters of the write
 * path, write-path.ts), so that this module needs nothing of them.
 */
export interface WorkloadExtension {
  runStep(
    store: SessionStore,
    step: WritePathStep,
    check: Checker,
    options: WorkloadRunOptions,
  ): Promise<void>;
  /** After the last step: settles what is still open (a writer is abandoned, its pending events checked). */
  finish(check: Checker): Promise<void>;
}

/** Records the violations and counts of one run. */
export class Checker {
  readonly outcome = emptyOutcome();
  /** Workload operations (`has`, `append`, …) in which a call rejected with a typed error other than NOT_FOUND. */
  readonly failedOps = new Set<WorkloadStep['kind']>();
  /** The workload step running now ({@link describeStep}), set by {@link runWorkload}. */
  step: string | undefined;

  /** Records a broken invariant. */
  violation(kind: Violation['kind'], detail: string): void {
    this.outcome.violations.push({ kind, detail, ...(this.step !== undefined && { step: this.step }) });
    if (kind === 'false-absence') this.outcome.absences++;
  }

  /**
   * Runs a store call; a rejection that is not a TidemarkError is an `untyped-error` violation.
   * A typed error other than NOT_FOUND counts as a fault surfaced, unless it is the `expected`
   * answer of a probe (CONFLICT for a conflicting batch).
   */
  async attempt<T>(what: string, call: () => Promise<T>, expected?: string): Promise<Attempt<T>> {
    try {
      return { ok: true, value: await call() };
    } catch (error) {
      if (isTidemarkError(error)) {
        // NOT_FOUND is how true absence answers; the model decides whether it was true.
        if (error.code !== 'NOT_FOUND' && error.code !== expected) {
          this.outcome.errorsSurfaced++;
          this.outcome.firstError ??= {
            call: what,
            ...(this.step !== undefined && { step: this.step }),
            code: error.code,
            ...(error.errno !== undefined && { errno: error.errno }),
            message: error.message.slice(0, 300),
          };
        }
        if (process.env.TIDEMARK_HARNESS_TRACE)
          console.error('[typed]', what, error.code, error.errno, error.message.slice(0, 120));
        return { ok: false, error };
      }
      const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      this.violation('untyped-error', `${what} rejected with a non-TidemarkError: ${text}`);
      return { ok: false, error: undefined };
    }
  }

  /**
   * Judges a rejected open: the store's location exists (the harness made it, or wrote to it), so
   * NOT_FOUND is false absence whatever the damage; any other typed error is a fair answer.
   */
  openAnswer(error: TidemarkError | undefined): void {
    if (error?.code === 'NOT_FOUND')
      this.violation('false-absence', `open said NOT_FOUND for a store that exists: ${error.message}`);
  }

  /** Checks a has() answer against the model. */
  has(session: ModelSession, present: boolean, allowResurrection = false): void {
    if (!present && session.exists === 'yes')
      this.violation('false-absence', `has(${session.id}) = false for an existing session`);
    if (present && session.exists === 'no' && !(allowResurrection && session.deleted === 'yes'))
      this.violation('phantom', `has(${session.id}) = true for a session that does not exist`);
  }

  /** Checks a load() outcome against the model; returns the acknowledged events missing. */
  load(
    session: ModelSession,
    result: Attempt<{ events: SessionEvent[] }>,
    allowInDoubt: boolean,
    allowResurrection = false,
  ): number {
    if (!result.ok) {
      if (result.error?.code === 'NOT_FOUND' && session.exists === 'yes')
        this.violation('false-absence', `load(${session.id}) said NOT_FOUND for an existing session`);
      return 0;
    }
    if (session.exists === 'no' && !(allowResurrection && session.deleted === 'yes')) {
      this.violation('phantom', `load(${session.id}) returned a session that does not exist`);
      return 0;
    }
    const comparison = compareLog(session, result.value.events, allowInDoubt);
    if (comparison.lost > 0) {
      this.outcome.lostEvents += comparison.lost;
      this.violation(
        'lost-event',
        `load(${session.id}): ${comparison.lost} acknowledged event(s) missing or changed`,
      );
    }
    if (comparison.unacknowledged !== undefined)
      this.violation('unacknowledged-visible', `load(${session.id}): ${comparison.unacknowledged}`);
    return comparison.lost;
  }
}

/**
 * Closes the store the workload ran on, as one more step: its storage calls (catalog records,
 * lock and handle release, a last sync) are counted and faulted like the workload's, and what is
 * found then names the step `close()`. It may reject (typed) or succeed; the reopen after the lift
 * then checks that nothing acknowledged was lost and no session is absent.
 */
export async function closeAfterWorkload(check: Checker, store: SessionStore): Promise<void> {
  check.step = CLOSE_STEP;
  await check.attempt('close', () => store.close());
  check.step = undefined;
}

/** The calls of a run's trace (or engine steps) that its `close()` made: `[from, to)`, 0-based. */
export interface CloseRange {
  from: number;
  to: number;
}

/** ` in close()` when 1-based call `at` is one of `close`'s, for fault labels. */
export function inClose(at: number, close: CloseRange | undefined): string {
  return close !== undefined && at - 1 >= close.from && at - 1 < close.to ? ` in ${CLOSE_STEP}` : '';
}

/** Whether a batch's last event is a boundary (default types): relaxed durability syncs such a batch. */
export function endsInBoundary(events: readonly Pick<SessionEvent, 'type'>[]): boolean {
  const last = events[events.length - 1];
  return last !== undefined && DEFAULT_BOUNDARY_TYPES.includes(last.type);
}

function cwdMatches(session: ModelSession, cwd: string | undefined): boolean {
  return cwd === undefined || session.cwd === cwd;
}

/**
 * Runs the agent workload against `store`, updating `model` with what was acknowledged and
 * checking every answer for false absence and untyped errors as it goes.
 */
export async function runWorkload(
  store: SessionStore,
  model: WorkloadModel,
  check: Checker,
  options: WorkloadRunOptions,
): Promise<void> {
  for (const [index, step] of (options.steps ?? AGENT_WORKLOAD).entries()) {
    check.step = describeStep(step, index);
    options.onStep?.(step);
    const surfaced = check.outcome.errorsSurfaced;
    if (step.kind === 'appendTogether') await appendTogether(store, model, check, options, step.appends);
    else await runStep(store, model, check, options, step);
    if (check.outcome.errorsSurfaced > surfaced) check.failedOps.add(step.kind);
  }
  if (options.extension !== undefined) {
    check.step = 'after the last step';
    await options.extension.finish(check);
  }
  check.step = undefined;
  options.onStep?.(undefined);
}

/** Appends to different sessions issued at once, each checked as its own `append` step. */
async function appendTogether(
  store: SessionStore,
  model: WorkloadModel,
  check: Checker,
  options: WorkloadRunOptions,
  appends: readonly { key: string; types: readonly string[] }[],
): Promise<void> {
  await Promise.all(
    appends.map(({ key, types }) =>
      appendWithRetry(store, model.session(key, WORKLOAD_CWDS[key]), types, check, options),
    ),
  );
}

async function runStep(
  store: SessionStore,
  model: WorkloadModel,
  check: Checker,
  options: WorkloadRunOptions,
  step: Exclude<WorkloadStep, { kind: 'appendTogether' }>,
): Promise<void> {
  {
    if (step.kind === 'list') {
      const query = step.cwd === undefined ? {} : { cwd: step.cwd };
      if (step.limit !== undefined) {
        // Under a fault a page may fail (typed); then the walk proves nothing about absence.
        const walked = await walkList(store, check, query, step.limit, model.sessions.size + 2);
        if (walked !== undefined) checkList(check, model, walked, step.cwd, false);
        return;
      }
      const page = await check.attempt('list', () => store.list(query));
      if (page.ok) checkList(check, model, page.value, step.cwd, false);
      return;
    }
    const session = model.session(step.key, WORKLOAD_CWDS[step.key]);
    switch (step.kind) {
      case 'create': {
        const created = await check.attempt(`create(${session.id})`, () =>
          store.create({ id: session.id, ...step.init }),
        );
        if (created.ok) {
          session.created = true;
          session.fieldStates = [
            {
              ...(step.init.title !== undefined && { title: step.init.title }),
              ...(step.init.tags !== undefined && { tags: [...step.init.tags] }),
            },
          ];
        }
        break;
      }
      case 'append':
        await appendWithRetry(store, session, step.types, check, options, step.clockAt);
        break;
      case 'update':
        await runUpdate(store, session, check, options, step.patch);
        break;
      case 'has': {
        const has = await check.attempt(`has(${session.id})`, () => store.has(session.id));
        if (has.ok) check.has(session, has.value);
        break;
      }
      case 'load': {
        const loaded = await check.attempt(`load(${session.id})`, () => store.load(session.id));
        check.load(session, loaded, true);
        break;
      }
      case 'delete':
        await runDelete(store, session, check);
        break;
      case 'write':
      case 'resume':
      case 'fork':
        if (options.extension === undefined)
          throw new Error(`workload step ${step.kind} needs a write-path extension (write-path.ts)`);
        await options.extension.runStep(store, step, check, options);
        break;
    }
  }
}

async function runUpdate(
  store: SessionStore,
  session: ModelSession,
  check: Checker,
  options: WorkloadRunOptions,
  stepPatch: Extract<WorkloadStep, { kind: 'update' }>['patch'],
): Promise<void> {
  const updated = await check.attempt(`update(${session.id})`, () => store.update(session.id, stepPatch));
  const patch = {
    ...(stepPatch.title !== undefined && { title: stepPatch.title }),
    ...(stepPatch.tags !== undefined && { tags: stepPatch.tags }),
  };
  if (updated.ok) session.ackFields(patch);
  else if (updated.error?.code === 'NOT_FOUND') {
    if (session.exists === 'yes')
      check.violation('false-absence', `update(${session.id}) said NOT_FOUND for an existing session`);
  } else if (!options.checkFailedAppend) {
    // A persistent fault may have stopped the store half way: the update may have landed.
    // After a once fault, a rejected update must have changed nothing (as a rejected append).
    session.doubtFields(patch);
  }
}

async function runDelete(store: SessionStore, session: ModelSession, check: Checker): Promise<void> {
  const existed = session.exists;
  const deleted = await check.attempt(`delete(${session.id})`, () => store.delete(session.id));
  if (deleted.ok) {
    session.deleted = 'yes';
    session.created = false;
  } else if (deleted.error?.code === 'NOT_FOUND') {
    if (existed === 'yes')
      check.violation('false-absence', `delete(${session.id}) said NOT_FOUND for an existing session`);
  } else if (existed !== 'no' || session.created) {
    session.deleted = 'maybe';
  }
}

async function appendWithRetry(
  store: SessionStore,
  session: ModelSession,
  types: readonly string[],
  check: Checker,
  options: WorkloadRunOptions,
  clockAt?: string,
): Promise<void> {
  if (session.deleted !== 'no') return; // the workload does not write to a deleted session
  const events = types.map((type, i) => workloadEvent(session.key, session.acked.length + i, type));
  const batch = events.map(canonicalEvent);
  for (let attempt = 0; attempt < 2; attempt++) {
    options.onInflight?.({ session, batch });
    const append = () => store.append(session.id, events);
    const result = await check.attempt(`append(${session.id})`, () =>
      clockAt === undefined ? append() : holdClock(clockAt, append),
    );
    options.onInflight?.(undefined);
    if (result.ok) {
      session.ack(batch, endsInBoundary(events));
      return;
    }
    if (result.error?.code === 'NOT_FOUND') {
      if (session.exists === 'yes')
        check.violation('false-absence', `append(${session.id}) said NOT_FOUND for an existing session`);
      if (!session.created) return; // neither created nor stored: NOT_FOUND is the truth
    }
    if (!session.inDoubt.some((b) => b.length === batch.length && b.every((e, i) => e === batch[i])))
      session.inDoubt.push(batch);
    if (options.checkFailedAppend && attempt === 0) {
      // contract §4: a failed append leaves the log as it was. The fault is spent, so look now.
      const loaded = await check.attempt(`load(${session.id}) after a failed append`, () =>
        store.load(session.id),
      );
      check.load(session, loaded, false);
    }
  }
}

/** Every session of a listing walked page by page, in page order, and the problems of its pages. */
export interface WalkedList {
  sessions: { id: string }[];
  problems: { id: string }[];
}

/**
 * Walks `list(query)` page by page with `limit`, following each `nextCursor` to the end. A
 * session on two pages, a page longer than `limit` or more than `maxPages` pages is a
 * `list-paging` violation (the walk stops there). Resolves `undefined` when a page rejected (the
 * attempt has judged the error) or the walk broke off; `what` names the calls.
 */
export async function walkList(
  store: SessionStore,
  check: Checker,
  query: { cwd?: string },
  limit: number,
  maxPages: number,
  what = 'list',
): Promise<WalkedList | undefined> {
  const walked: WalkedList = { sessions: [], problems: [] };
  const pageOf = new Map<string, number>();
  const problems = new Set<string>();
  let cursor: string | undefined;
  for (let n = 1; ; n++) {
    const call = `${what}({ limit: ${limit} }) page ${n}`;
    if (n > maxPages) {
      check.violation('list-paging', `${call}: the cursors have not ended after ${maxPages} pages`);
      return undefined;
    }
    const page = await check.attempt(call, () => store.list({ ...query, limit, ...(cursor && { cursor }) }));
    if (!page.ok) return undefined;
    if (page.value.sessions.length > limit)
      check.violation('list-paging', `${call} holds ${page.value.sessions.length} sessions`);
    for (const { id } of page.value.sessions) {
      const seen = pageOf.get(id);
      if (seen !== undefined) {
        check.violation('list-paging', `${call} shows ${id} again, already on page ${seen}`);
        return undefined;
      }
      pageOf.set(id, n);
      walked.sessions.push({ id });
    }
    // A problem may be reported on every page (SessionStore.list): collected once.
    for (const { id } of page.value.problems) if (!problems.has(id)) problems.add(id);
    cursor = page.value.nextCursor;
    if (cursor === undefined) break;
  }
  walked.problems = [...problems].map((id) => ({ id }));
  return walked;
}

/** Checks a list page: every existing session of the filter is listed or reported as a problem. */
export function checkList(
  check: Checker,
  model: WorkloadModel,
  page: { sessions: { id: string }[]; problems: { id: string }[] },
  cwd: string | undefined,
  afterLift: boolean,
  allowResurrection = false,
): void {
  const listed = new Set(page.sessions.map((s) => s.id));
  const problems = new Set(page.problems.map((p) => p.id));
  for (const session of model.sessions.values()) {
    if (!cwdMatches(session, cwd)) continue;
    if (session.exists === 'yes' && !listed.has(session.id)) {
      if (!problems.has(session.id))
        check.violation('false-absence', `list(${cwd ?? ''}) left out existing session ${session.id}`);
      else if (afterLift) {
        check.outcome.lostEvents += session.acked.length;
        check.violation('lost-event', `list() reports ${session.id} as a problem after the fault was lifted`);
      }
    }
  }
  const known = new Map([...model.sessions.values()].map((s) => [s.id, s]));
  for (const id of listed) {
    const session = known.get(id);
    if (session !== undefined && session.exists === 'no' && !(allowResurrection && session.deleted === 'yes'))
      check.violation('phantom', `list() shows ${id}, which does not exist`);
  }
}
