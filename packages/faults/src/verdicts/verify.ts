// The invariants after a fault is lifted and the store reopened (contract §7.4). Each check also
// settles the model on what the store showed, so that a second reopen (reread.ts) must show the
// same again, plus what was appended since.
import type { SessionStore } from '@tidemark/core';
import { type Checker, checkList, walkList } from '../workload/runner.js';
import { canonicalEvent, holdClock, workloadEvent } from '../workload/workload.js';
import { type ModelSession, shownFields, type WorkloadModel } from './model.js';

/** Options of {@link verifyAfterLift}. */
export interface VerifyOptions {
  /** After a crash, the in-flight batch may be whole or absent, and an unsynced delete may be undone. */
  crash: boolean;
}

/** What a load after the lift showed: the events, absence, or a failure (then nothing is settled). */
type Shown = readonly string[] | undefined | 'failed';

/**
 * The invariants after the fault is lifted and the store reopened (contract §7.4): every acknowledged
 * batch present byte for byte, nothing unacknowledged presented, no false absence, and the store
 * takes the next append. The model is then settled on what the store showed (an in-doubt batch
 * present or not, a relaxed crash's lost batches) and on the appends made here.
 */
export async function verifyAfterLift(
  store: SessionStore,
  model: WorkloadModel,
  check: Checker,
  options: VerifyOptions,
): Promise<void> {
  let writableKey: { session: ModelSession; nextSeq: number } | undefined;
  const shown = new Map<ModelSession, Shown>();
  for (const session of model.sessions.values()) {
    const events = await verifySessionAfterLift(store, session, check, options);
    shown.set(session, events);
    if (events === 'failed' || events === undefined) continue;
    if (session.exists !== 'no' && writableKey === undefined)
      writableKey = { session, nextSeq: events.length };
  }
  await verifyListAfterLift(store, model, check, options, shown);
  for (const [session, events] of shown) if (events !== 'failed') session.settle(events);
  await verifyWritableAfterLift(store, model, check, writableKey);
  await verifyPagingAfterLift(store, check);
}

/** `has` and `load` of one session after the lift; the events loaded, `undefined` for NOT_FOUND. */
async function verifySessionAfterLift(
  store: SessionStore,
  session: ModelSession,
  check: Checker,
  options: VerifyOptions,
): Promise<Shown> {
  session.created = false; // a reopened store has no pending sessions
  const has = await check.attempt(`has(${session.id}) after lift`, () => store.has(session.id));
  if (has.ok) check.has(session, has.value, options.crash);
  else if (session.exists === 'yes') {
    check.outcome.lostEvents += session.acked.length;
    check.violation(
      'lost-event',
      `has(${session.id}) still fails after the fault was lifted: ${has.error?.message ?? ''}`,
    );
  }
  const loaded = await check.attempt(`load(${session.id}) after lift`, () => store.load(session.id));
  if (!loaded.ok && loaded.error?.code !== 'NOT_FOUND' && session.exists === 'yes') {
    check.outcome.lostEvents += session.acked.length;
    check.violation(
      'lost-event',
      `load(${session.id}) fails after the fault was lifted: ${loaded.error?.code} ${loaded.error?.message ?? ''}`,
    );
    return 'failed';
  }
  // A session whose first batch (or delete) was in doubt may come back absent or whole, never
  // unreadable: an id left CORRUPT by an unacknowledged write can be neither created again nor
  // written (a first batch published without temp file and link/rename, torn by the crash).
  if (
    !loaded.ok &&
    loaded.error !== undefined &&
    loaded.error.code !== 'NOT_FOUND' &&
    session.exists === 'maybe'
  ) {
    check.violation(
      'not-writable',
      `load(${session.id}) fails after the fault was lifted (${loaded.error.code}), though nothing acknowledged it: an unacknowledged write left the id unusable: ${loaded.error.message}`,
    );
    return 'failed';
  }
  // After the fault is lifted, an existing session that reads as absent has lost every event.
  if (!loaded.ok && session.exists === 'yes') check.outcome.lostEvents += session.acked.length;
  check.load(session, loaded, true, options.crash);
  if (loaded.ok) return loaded.value.events.map(canonicalEvent);
  return loaded.error?.code === 'NOT_FOUND' ? undefined : 'failed';
}

/** `list` after the lift: nobody missing, acknowledged fields shown, counts matching what load returned. */
async function verifyListAfterLift(
  store: SessionStore,
  model: WorkloadModel,
  check: Checker,
  options: VerifyOptions,
  shown: ReadonlyMap<ModelSession, Shown>,
): Promise<void> {
  const page = await check.attempt('list after lift', () => store.list());
  if (!page.ok) {
    check.violation('not-writable', `list() fails after the fault was lifted: ${page.error?.message ?? ''}`);
    return;
  }
  checkList(check, model, page.value, undefined, true, options.crash);
  // contract §4: a stale summary is rebuilt from the log, so a listed count matches what load returns.
  const known = new Map([...model.sessions.values()].map((s) => [s.id, s]));
  for (const summary of page.value.sessions) {
    // An acknowledged update is a write like an append: it must survive the fault (and a failed
    // one must not show), so title and tags are one of the states the model allows.
    const session = known.get(summary.id);
    if (session === undefined) continue;
    const fields = shownFields(summary);
    if (session.exists !== 'no' && !session.fieldsMatch(fields))
      check.violation(
        'lost-update',
        `list() shows ${summary.id} with title/tags ${JSON.stringify([summary.title ?? null, summary.tags ?? null])}, acknowledged: ${session.describeFields()}`,
      );
    else session.fieldStates = [fields]; // settled: a second reopen must show the same
    const events = shown.get(session);
    if (Array.isArray(events) && summary.eventCount !== events.length)
      check.violation(
        'stale-summary',
        `list() says ${summary.id} has ${summary.eventCount} events, load returns ${events.length}`,
      );
  }
}

/** The small limits the list after the lift is walked with, page by page (ties across pages). */
const PAGE_LIMITS = [1, 2];

/**
 * The clock the two appends after the lift read (an existing session's and a new one's): one
 * instant, ahead of the workload's, so those two sessions share their `updatedAt` in every
 * recovery and the walk page by page below meets a tie whatever the workload left.
 */
export const AFTER_LIFT_CLOCK = '2100-01-01T00:00:00.000Z';

/**
 * After the lift and the appends, `list` walked page by page with each of {@link PAGE_LIMITS}
 * must give what one page gives ({@link verifyPagesAfterLift}).
 */
async function verifyPagingAfterLift(store: SessionStore, check: Checker): Promise<void> {
  const page = await check.attempt('list after the appends after lift', () => store.list());
  if (!page.ok) {
    check.violation('not-writable', `list() fails after the fault was lifted: ${page.error?.message ?? ''}`);
    return;
  }
  // One page holds the whole listing here (a handful of sessions, far below the default limit).
  if (page.value.nextCursor !== undefined) return;
  const ids = page.value.sessions.map((s) => s.id);
  for (const limit of PAGE_LIMITS) await verifyPagesAfterLift(store, check, ids, limit);
}

/**
 * `list` walked page by page after the lift must show what one page showed (`ids`), in the same
 * order: each session once, none left out (a cursor that breaks an `updatedAt` tie wrongly skips
 * or repeats the sessions of the tie).
 */
async function verifyPagesAfterLift(
  store: SessionStore,
  check: Checker,
  ids: readonly string[],
  limit: number,
): Promise<void> {
  const before = check.outcome.violations.length;
  const walked = await walkList(store, check, {}, limit, ids.length + 2, 'list after lift');
  if (walked === undefined) {
    if (check.outcome.violations.length === before)
      check.violation('not-writable', `list({ limit: ${limit} }) fails after the fault was lifted`);
    return;
  }
  const paged = walked.sessions.map((s) => s.id);
  if (paged.join('\n') === ids.join('\n')) return;
  const missing = ids.filter((id) => !paged.includes(id));
  const extra = paged.filter((id) => !ids.includes(id));
  const parts = [
    ...(missing.length > 0 ? [`leaves out ${missing.join(', ')}`] : []),
    ...(extra.length > 0 ? [`adds ${extra.join(', ')}`] : []),
  ];
  check.violation(
    'list-paging',
    `list({ limit: ${limit} }) walked page by page ${parts.length > 0 ? parts.join(' and ') : `gives another order, [${paged.join(', ')}]`} against one list() page [${ids.join(', ')}]`,
  );
}

/**
 * The store accepts the next append after the lift: on an existing session and on a new one.
 * Both are acknowledged writes from then on, in the model too.
 */
async function verifyWritableAfterLift(
  store: SessionStore,
  model: WorkloadModel,
  check: Checker,
  writableKey: { session: ModelSession; nextSeq: number } | undefined,
): Promise<void> {
  if (writableKey !== undefined) {
    const { session, nextSeq } = writableKey;
    const events = [
      workloadEvent(session.key, nextSeq, 'user/message'),
      workloadEvent(session.key, nextSeq + 1, 'turn/end'),
    ];
    const appended = await check.attempt(`append(${session.id}) after lift`, () =>
      holdClock(AFTER_LIFT_CLOCK, () => store.append(session.id, events)),
    );
    if (appended.ok) {
      session.ack(events.map(canonicalEvent), true);
      await verifyConflictAfterLift(store, session, check, nextSeq);
    } else {
      session.inDoubt.push(events.map(canonicalEvent));
      check.violation(
        'not-writable',
        `append(${session.id}) at seq ${nextSeq} fails after the fault was lifted: ${appended.error?.message ?? ''}`,
      );
    }
  }
  const key = `after-${model.sessions.size}`;
  const fresh = model.session(key);
  const events = [workloadEvent('after', 0, 'user/message'), workloadEvent('after', 1, 'turn/end')];
  const created = await check.attempt('create after lift', () => store.create({ id: fresh.id }));
  const appended = created.ok
    ? await check.attempt('append after lift', () =>
        holdClock(AFTER_LIFT_CLOCK, () => store.append(fresh.id, events)),
      )
    : created;
  if (appended.ok) fresh.ack(events.map(canonicalEvent), true);
  else {
    if (created.ok) fresh.inDoubt.push(events.map(canonicalEvent));
    check.violation(
      'not-writable',
      `a new session cannot be written after the fault was lifted: ${appended.error?.message ?? ''}`,
    );
  }
}

/**
 * A different batch at a seq the log holds (a second writer, or a retry that changed its data)
 * must be CONFLICT and write nothing (contract §3, §4): only a retry of the same batch is
 * idempotent. Nothing written is checked by the second reopen (reread.ts), whose model lacks it.
 */
async function verifyConflictAfterLift(
  store: SessionStore,
  session: ModelSession,
  check: Checker,
  storedSeq: number,
): Promise<void> {
  const different = [workloadEvent(session.key, storedSeq, 'tool/call')];
  const result = await check.attempt(
    `append(${session.id}) of a different batch at stored seq ${storedSeq}`,
    () => store.append(session.id, different),
    'CONFLICT',
  );
  if (result.ok || result.error?.code !== 'CONFLICT')
    check.violation(
      'conflict-accepted',
      `append(${session.id}) of a different batch at stored seq ${storedSeq} ${result.ok ? 'succeeded' : `rejected with ${result.error?.code ?? 'an untyped error'}`}, not CONFLICT`,
    );
}
