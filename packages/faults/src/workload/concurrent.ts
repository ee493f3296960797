// The concurrent-writer probe: two store instances on one root or database append to the same
// session at once, interleaved with appends to a second session, while the sweeps inject their
// faults (concurrent-sweeps.ts). A single-writer workload never contends for a session's lock, so
// a lock that excludes nobody, or a next seq read before the lock is taken, passes every other
// cell; here it makes two appends win one seq, and the log shows it.
import { isTidemarkError, type SessionEvent, type SessionStore } from '@tidemark/core';
import { type RaceModel, type RaceSession, raceBatchSize, raceEvents } from '../verdicts/concurrent-model.js';
import { WorkloadModel } from '../verdicts/model.js';
import { reopenAndVerify } from '../verdicts/reread.js';
import type { Attempt, Checker } from './runner.js';
import { canonicalEvent } from './workload.js';

/** The report row of the probe (with the phase it runs in). */
export const CONCURRENT_CELL = 'concurrent writers';

/** The sessions of the probe: `x` is written by both instances every round, `y` by each in turn. */
export const RACE_SESSIONS: readonly { key: string; cwd?: string }[] = [
  { key: 'x', cwd: '/work/proj-a' },
  { key: 'y' },
];

/** Rounds of the probe's workload. */
export const RACE_ROUNDS = 3;

/** One store instance of the probe and where it believes each session ends. */
interface Racer {
  name: string;
  index: number;
  store: SessionStore;
  next: Map<string, number>;
}

/** Attempts per batch: a CONFLICT (lost seq, or the lock busy) or an error is retried, as an agent would. */
const ATTEMPTS = 3;

/** What {@link runRace} says about each append: before it, and once it was acknowledged or refused. */
export type RaceAnnouncer = (
  word: 'try' | 'ack' | 'refused',
  key: string,
  writer: string,
  from: number,
  count: number,
) => void;

/**
 * The workload: each instance creates both sessions (a pending create each, so that the first
 * batches race too), then every round both append to `x` at the seq each believes is next while
 * one of them appends to `y`. A CONFLICT makes the loser reload and try again at the new end.
 */
export async function runRace(
  stores: readonly SessionStore[],
  model: RaceModel,
  check: Checker,
  /** Announces every append (a traced child prints them among its system calls). */
  announce?: RaceAnnouncer,
): Promise<void> {
  const racers: Racer[] = stores.map((store, index) => ({
    name: `w${index}`,
    index,
    store,
    next: new Map(),
  }));
  check.step = 'create';
  for (const racer of racers)
    for (const { key, cwd } of RACE_SESSIONS) {
      const session = model.session(key, cwd);
      await check.attempt(`create(${session.id}) by ${racer.name}`, () =>
        racer.store.create({ id: session.id, ...(cwd !== undefined && { cwd }) }),
      );
    }
  for (let round = 0; round < RACE_ROUNDS; round++) {
    check.step = `round ${round + 1}`;
    const y = racers[round % racers.length]!;
    await Promise.all([
      ...racers.map((racer) => appendAsRacer(racer, model.session('x'), check, announce)),
      appendAsRacer(y, model.session('y'), check, announce),
    ]);
  }
  check.step = undefined;
}

/** One writer's append: at the seq it believes is next; after a CONFLICT it reloads and moves on. */
async function appendAsRacer(
  racer: Racer,
  session: RaceSession,
  check: Checker,
  announce: RaceAnnouncer | undefined,
): Promise<void> {
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const from = racer.next.get(session.key) ?? 0;
    const events = raceEvents(racer.name, session.key, from, raceBatchSize(racer.index, from));
    const batch = session.tried(racer.name, from, events.map(canonicalEvent));
    announce?.('try', session.key, racer.name, from, events.length);
    const result = await check.attempt(
      `append(${session.id}) by ${racer.name} at seq ${from}`,
      () => racer.store.append(session.id, events),
      'CONFLICT',
    );
    if (result.ok) {
      announce?.('ack', session.key, racer.name, from, events.length);
      const double = session.acked(batch);
      if (double !== undefined) check.violation('concurrent-writers', double);
      racer.next.set(session.key, result.value.nextSeq);
      return;
    }
    const code = result.error?.code;
    if (code === 'CONFLICT') {
      announce?.('refused', session.key, racer.name, from, events.length);
      session.refused(batch);
      await reloadAsRacer(racer, session, check);
    } else if (code === 'NOT_FOUND') {
      // Only before any batch landed, when this instance's create failed: true absence.
      if (session.exists)
        check.violation('false-absence', `append(${session.id}) by ${racer.name} said NOT_FOUND`);
      return;
    }
    // Any other typed error: the batch is in doubt, and is tried again as it was.
  }
}

/**
 * A writer that lost a seq reads where the log ends now. What it reads is checked too: every
 * batch acknowledged before the load began must be in it, whatever the fault.
 */
async function reloadAsRacer(racer: Racer, session: RaceSession, check: Checker): Promise<void> {
  const before = session.clone();
  const loaded = await check.attempt(`load(${session.id}) by ${racer.name}`, () =>
    racer.store.load(session.id),
  );
  if (!loaded.ok) {
    if (loaded.error?.code === 'NOT_FOUND' && before.exists)
      check.violation('false-absence', `load(${session.id}) by ${racer.name} said NOT_FOUND`);
    return;
  }
  judgeLog(before, loaded.value.events, check, `load(${session.id}) by ${racer.name}`);
  racer.next.set(session.key, loaded.value.events.length);
}

/** Checks a loaded log against the tried batches; returns false when it broke an invariant. */
export function judgeLog(
  session: RaceSession,
  events: readonly SessionEvent[],
  check: Checker,
  what: string,
): boolean {
  const comparison = session.compare(events);
  if (comparison.misplaced !== undefined)
    check.violation('concurrent-writers', `${what}: ${comparison.misplaced}`);
  if (comparison.lost > 0) {
    check.outcome.lostEvents += comparison.lost;
    check.violation('lost-event', `${what}: ${comparison.lost} acknowledged event(s) missing or changed`);
  }
  if (comparison.unacknowledged !== undefined)
    check.violation('unacknowledged-visible', `${what}: ${comparison.unacknowledged}`);
  return (
    comparison.misplaced === undefined && comparison.lost === 0 && comparison.unacknowledged === undefined
  );
}

/** What every instance showed of one session after the lift: its events, or absence. */
type Shown = SessionEvent[] | undefined;

/**
 * After the fault is lifted (or on a crash state, with two fresh instances): every instance
 * reads the same history, which holds every acknowledged batch; then both append at the same
 * next seq at once, and exactly one may win it; the losers reload and append after it; and a
 * fresh reopen reads the result and takes the next append ({@link reopenAndVerify}).
 */
export async function checkRacersAfter(
  stores: readonly SessionStore[],
  model: RaceModel,
  check: Checker,
  openFresh: () => Promise<SessionStore>,
  crash: boolean,
): Promise<void> {
  const step = check.step;
  check.step = crash ? 'after the crash' : 'after lift';
  const shown = new Map<RaceSession, Shown>();
  let readable = true;
  for (const session of model.sessions.values()) {
    const views = await Promise.all(
      stores.map((store, i) =>
        check.attempt(`load(${session.id}) by instance ${i} ${check.step}`, () => store.load(session.id)),
      ),
    );
    const one = judgeViews(session, views, check);
    if (one === 'failed') readable = false;
    else shown.set(session, one);
  }
  if (readable && check.outcome.violations.length === 0) {
    for (const [session, events] of shown) session.settle(events?.map(canonicalEvent) ?? []);
    for (const [session, events] of shown)
      if (events !== undefined) await raceOnce(stores, session, events.length, check);
  }
  for (const [i, store] of stores.entries()) await check.attempt(`close instance ${i}`, () => store.close());
  check.step = step;
  if (check.outcome.violations.length > 0) return;
  // The settled history in the single-writer model: a fresh reopen must show exactly it, list
  // it, refuse a different batch at a stored seq, take the next append, and read it all again.
  const settled = new WorkloadModel();
  for (const session of model.sessions.values()) {
    const single = settled.session(session.key, session.cwd);
    single.acked = session.settledLog();
    single.inDoubt = session.inDoubtAt(single.acked.length);
  }
  await reopenAndVerify(openFresh, settled, check, crash);
}

/** The instances' loads of one session: all alike (absent or the same events) and right, or a violation. */
function judgeViews(
  session: RaceSession,
  views: readonly Attempt<{ events: SessionEvent[] }>[],
  check: Checker,
): Shown | 'failed' {
  let first: string | undefined;
  let shown: Shown;
  for (const [i, view] of views.entries()) {
    const what = `load(${session.id}) by instance ${i} ${check.step}`;
    if (!view.ok && !(view.error?.code === 'NOT_FOUND' && !session.exists)) {
      const code = view.error?.code;
      check.outcome.lostEvents += session.ackedEvents;
      check.violation(
        code === 'NOT_FOUND' ? 'false-absence' : session.exists ? 'lost-event' : 'not-writable',
        `${what} fails: ${code ?? 'untyped'} ${view.error?.message ?? ''}`,
      );
      return 'failed';
    }
    if (view.ok && !judgeLog(session, view.value.events, check, what)) return 'failed';
    // Absence is a history too: one instance finding the session and another not is a split.
    const text = view.ok ? view.value.events.map(canonicalEvent).join('\n') : '(absent)';
    if (first !== undefined && text !== first) {
      check.violation(
        'concurrent-writers',
        `${what} shows ${view.ok ? `${view.value.events.length} event(s)` : 'absence'}, instance 0 another history: the instances disagree`,
      );
      return 'failed';
    }
    first ??= text;
    shown = view.ok ? view.value.events : undefined;
  }
  return shown;
}

/**
 * Both instances append a batch of their own at seq `at` at once: at most one may win it, every
 * answer is typed; then each loser reloads and appends after the winner, which must succeed.
 */
async function raceOnce(
  stores: readonly SessionStore[],
  session: RaceSession,
  at: number,
  check: Checker,
): Promise<void> {
  const racers = stores.map((store, index) => ({ store, index, name: `p${index}` }));
  const tries = racers.map((r) => {
    const events = raceEvents(r.name, session.key, at, 1);
    return { ...r, events, batch: session.tried(r.name, at, events.map(canonicalEvent)) };
  });
  const results = await Promise.all(
    tries.map((t) =>
      check.attempt(
        `append(${session.id}) by instance ${t.index} at seq ${at}, raced`,
        () => t.store.append(session.id, t.events),
        'CONFLICT',
      ),
    ),
  );
  let end = at;
  for (const [i, result] of results.entries()) {
    const t = tries[i]!;
    if (result.ok) {
      const double = session.acked(t.batch);
      if (double !== undefined) check.violation('concurrent-writers', double);
      end = Math.max(end, result.value.nextSeq);
    } else if (result.error?.code === 'CONFLICT') session.refused(t.batch);
  }
  for (const [i, result] of results.entries()) {
    if (result.ok || !isTidemarkError(result.error)) continue;
    const t = tries[i]!;
    // Nothing may hold the loser back now: the winner is idle, the fault lifted.
    const events = raceEvents(t.name, session.key, end, 1);
    const batch = session.tried(t.name, end, events.map(canonicalEvent));
    const again = await check.attempt(`append(${session.id}) by instance ${t.index} at seq ${end}`, () =>
      t.store.append(session.id, events),
    );
    if (again.ok) {
      session.acked(batch);
      end = again.value.nextSeq;
    } else
      check.violation(
        'not-writable',
        `instance ${t.index} cannot append to ${session.id} at seq ${end} after the race: ${again.error?.code ?? 'untyped'} ${again.error?.message ?? ''}`,
      );
  }
}
