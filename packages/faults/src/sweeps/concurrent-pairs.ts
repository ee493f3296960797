// The pair probe: two store instances on one root or database race every pair of the calls that
// change a session (create, first append, append, update, delete), and each of those against has
// and load, with no fault injected. The race probe (concurrent.ts) has both instances append; a
// call that decides "absent" or "damaged" from two looks at storage passes it, and answers
// CORRUPT, or leaves real damage, when the other instance's write lands between its two looks
// (PostgreSQL before issue 22: an update racing another host's first append said CORRUPT, and a
// delete racing it could leave the new session's events without their row).
import type { LoadedSession, SessionStore } from '@tidemark/core';
import type { HarnessDriver } from '../drivers/driver.js';
import { memfsFileSystem } from '../fs/memfs-fs.js';
import type { ReportBuilder } from '../report/report.js';
import { type RaceBatch, RaceSession, raceEvents } from '../verdicts/concurrent-model.js';
import { CONCURRENT_CELL, judgeLog } from '../workload/concurrent.js';
import { type Attempt, Checker } from '../workload/runner.js';
import { canonicalEvent } from '../workload/workload.js';
import type { SweepMode } from './mode.js';
import { type Progress, SWEEP_ROOT } from './sweeps.js';

/** The calls that change a session. `firstAppend` follows the instance's own create (pending). */
export const PAIR_WRITES = ['create', 'firstAppend', 'append', 'update', 'delete'] as const;
/** The calls that only look, raced against every write. */
export const PAIR_READS = ['has', 'load'] as const;
export type PairCall = (typeof PAIR_WRITES)[number] | (typeof PAIR_READS)[number];

/** The report row of the probe. */
export const PAIRS_CELL = `${CONCURRENT_CELL} (every pair of calls)`;
/** Rounds of every pair in a quick run (a race that is lost about half the time shows in 4). */
export const QUICK_PAIR_ROUNDS = 4;
/** Rounds of every pair in a full run. */
export const FULL_PAIR_ROUNDS = 40;

/** Every pair raced: each write with itself and each other write (15), each write with each read (10). Pure. */
export function racedPairs(): [PairCall, PairCall][] {
  const pairs: [PairCall, PairCall][] = [];
  PAIR_WRITES.forEach((x, i) => {
    for (const y of PAIR_WRITES.slice(i)) pairs.push([x, y]);
  });
  for (const x of PAIR_WRITES) for (const y of PAIR_READS) pairs.push([x, y]);
  return pairs;
}

/** What each call may answer when it races another instance without a fault: anything else is wrong. */
const RACE_ANSWERS: Record<PairCall, readonly string[]> = {
  create: ['ok', 'ALREADY_EXISTS'],
  firstAppend: ['ok', 'CONFLICT'],
  append: ['ok', 'CONFLICT', 'NOT_FOUND'],
  update: ['ok', 'CONFLICT', 'NOT_FOUND'],
  delete: ['ok', 'CONFLICT', 'NOT_FOUND'],
  has: ['ok'],
  load: ['ok', 'NOT_FOUND'],
};

/** One side of a race: its call, its instance, and what became of it. */
interface Side {
  call: PairCall;
  writer: string;
  store: SessionStore;
  answer: string;
  /** `has`'s answer. */
  present?: boolean;
  /** The batch of an append. */
  batch?: RaceBatch;
}

/** The answer of a settled call: `ok`, a TidemarkError's code, or `untyped`. */
function answerOf(attempt: Attempt<unknown>): string {
  return attempt.ok ? 'ok' : (attempt.error?.code ?? 'untyped');
}

/** `ticks` turns of the event loop: the rounds start the two calls at slightly different instants. */
async function after(ticks: number): Promise<void> {
  for (let i = 0; i < ticks; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Runs one side's call and records its answer in the model. */
async function play(side: Side, session: RaceSession, stored: boolean, check: Checker): Promise<void> {
  const { store, writer, call } = side;
  const id = session.id;
  const what = `${call}(${id}) by ${writer}`;
  let attempt: Attempt<unknown>;
  if (call === 'firstAppend' || call === 'append') {
    const from = call === 'append' && stored ? 1 : 0;
    const events = raceEvents(writer, session.key, from, 1);
    side.batch = session.tried(writer, from, events.map(canonicalEvent));
    attempt = await check.attempt(what, () => store.append(id, events), 'CONFLICT');
    if (attempt.ok) {
      const double = session.acked(side.batch);
      if (double !== undefined) check.violation('concurrent-writers', double);
    } else if (attempt.error?.code === 'CONFLICT' || attempt.error?.code === 'NOT_FOUND')
      session.refused(side.batch);
  } else if (call === 'create')
    attempt = await check.attempt(what, () => store.create({ id }), 'ALREADY_EXISTS');
  else if (call === 'update')
    attempt = await check.attempt(what, () => store.update(id, { title: `by ${writer}` }), 'CONFLICT');
  else if (call === 'delete') attempt = await check.attempt(what, () => store.delete(id), 'CONFLICT');
  else if (call === 'has') {
    attempt = await check.attempt(what, () => store.has(id));
    if (attempt.ok) side.present = attempt.value as boolean;
  } else attempt = await check.attempt(what, () => store.load(id));
  side.answer = answerOf(attempt);
}

/**
 * One race of `x` (instance 0) and `y` (instance 1) on a fresh session, then its checks: typed
 * answers a race allows, no absence of a session stored throughout, no phantom, both instances
 * reading the same history with every acknowledged batch and update, and the next append taken.
 */
async function racePair(
  stores: readonly [SessionStore, SessionStore],
  [x, y]: [PairCall, PairCall],
  round: number,
  check: Checker,
): Promise<void> {
  const session = new RaceSession(`pair-${round}-${x}-${y}`, undefined);
  const id = session.id;
  // The first append and create need a session that is not stored yet; the others a stored one.
  const stored = ![x, y].some((c) => c === 'create' || c === 'firstAppend');
  if (stored) {
    await check.attempt(`create(${id}) before the race`, () => stores[0].create({ id }));
    const events = raceEvents('setup', session.key, 0, 1);
    const setup = session.tried('setup', 0, events.map(canonicalEvent));
    if ((await check.attempt(`append(${id}) before the race`, () => stores[0].append(id, events))).ok)
      session.acked(setup);
  }
  const sides: Side[] = [x, y].map((call, i) => ({ call, writer: `w${i}`, store: stores[i]!, answer: '' }));
  for (const side of sides)
    if (side.call === 'firstAppend')
      await check.attempt(`create(${id}) by ${side.writer}`, () => side.store.create({ id }));
  const late = round % 2; // which side starts late this round, and by how many turns
  await Promise.all(
    sides.map(async (side, i) => {
      if (i === late) await after(round % 3);
      await play(side, session, stored, check);
    }),
  );
  const race = `${x} × ${y}`;
  let answered = true;
  for (const side of sides) {
    if (RACE_ANSWERS[side.call].includes(side.answer)) continue;
    answered = false;
    if (side.answer !== 'untyped')
      check.violation('race-error', `${race}: ${side.call}(${id}) by ${side.writer} answered ${side.answer}`);
  }
  const deletes = sides.some((s) => s.call === 'delete');
  for (const side of sides) {
    const absent = side.answer === 'NOT_FOUND' || side.present === false;
    if (stored && !deletes && absent)
      check.violation('false-absence', `${race}: ${side.call}(${id}) by ${side.writer} found no session`);
    const present = side.present === true || (side.call === 'load' && side.answer === 'ok');
    if (!stored && !sides.some((s) => s.call === 'firstAppend') && present)
      check.violation(
        'phantom',
        `${race}: ${side.call}(${id}) by ${side.writer} found a session never stored`,
      );
  }
  if (answered) await checkAfterRace(stores, sides, session, stored, race, check);
}

/** After the race: both instances load the session; what they show must follow from the answers. */
async function checkAfterRace(
  stores: readonly [SessionStore, SessionStore],
  sides: readonly Side[],
  session: RaceSession,
  stored: boolean,
  race: string,
  check: Checker,
): Promise<void> {
  const id = session.id;
  const deleted = sides.some((s) => s.call === 'delete' && s.answer === 'ok');
  const exists = !deleted && (stored || sides.some((s) => s.call === 'firstAppend' && s.answer === 'ok'));
  let shown: LoadedSession | undefined;
  const texts: string[] = [];
  for (const [i, store] of stores.entries()) {
    const what = `load(${id}) by instance ${i} after ${race}`;
    const loaded = await check.attempt(what, () => store.load(id));
    const answer = answerOf(loaded);
    if (answer !== 'ok' && answer !== 'NOT_FOUND') {
      if (answer !== 'untyped') check.violation('race-error', `${what} answered ${answer}`);
      return;
    }
    if (exists && !loaded.ok) check.violation('false-absence', `${what}: NOT_FOUND`);
    if (!exists && loaded.ok)
      check.violation(
        'phantom',
        `${what}: the session is there${deleted ? ' after an acknowledged delete' : ''}`,
      );
    if (loaded.ok && exists) {
      judgeLog(session, loaded.value.events, check, what);
      shown = loaded.value;
    }
    texts.push(loaded.ok ? loaded.value.events.map(canonicalEvent).join('\n') : '(absent)');
  }
  if (texts[0] !== texts[1])
    check.violation('concurrent-writers', `${id} after ${race}: the two instances read different histories`);
  if (shown === undefined) return;
  const titles = sides.filter((s) => s.call === 'update' && s.answer === 'ok').map((s) => `by ${s.writer}`);
  const title = shown.summary.title;
  if (titles.length > 0 ? !titles.includes(title ?? '') : title !== undefined)
    check.violation(
      'lost-update',
      `${id} after ${race}: title ${JSON.stringify(title)}, acknowledged updates ${JSON.stringify(titles)}`,
    );
  const at = shown.events.length;
  const next = raceEvents('after', session.key, at, 1);
  const appended = await check.attempt(`append(${id}) at seq ${at} after ${race}`, () =>
    stores[0].append(id, next),
  );
  if (!appended.ok)
    check.violation(
      'not-writable',
      `${id} after ${race}: the next append answered ${answerOf(appended)} ${appended.error?.message ?? ''}`,
    );
}

/** Two instances of fresh, empty storage of `driver`, and how to free it. */
async function openTwo(
  driver: HarnessDriver,
  mode: SweepMode,
): Promise<{ stores: [SessionStore, SessionStore]; destroy: () => Promise<void> }> {
  const { durability } = mode;
  if (driver.kind === 'fs') {
    const fs = memfsFileSystem();
    await fs.mkdir(SWEEP_ROOT, { recursive: true });
    const first = await driver.open({ fs, root: SWEEP_ROOT, durability });
    try {
      const second = await driver.open({ fs, root: SWEEP_ROOT, durability });
      return { stores: [first, second], destroy: async () => undefined };
    } catch (error) {
      await first.close().catch(() => undefined);
      throw error;
    }
  }
  const storage = await driver.create({ durability });
  const stores: SessionStore[] = [];
  try {
    for (let i = 0; i < 2; i++) stores.push(await storage.open());
    return { stores: stores as [SessionStore, SessionStore], destroy: () => storage.destroy() };
  } catch (error) {
    for (const store of stores) await store.close().catch(() => undefined);
    await storage.destroy().catch(() => undefined); // the open's error says more
    throw error;
  }
}

/** Options of {@link concurrentPairs}. */
export interface PairProbeOptions {
  quick: boolean;
  mode: SweepMode;
  /** Rounds of every pair (default {@link QUICK_PAIR_ROUNDS} or {@link FULL_PAIR_ROUNDS}). */
  rounds?: number;
  progress?: Progress;
}

/**
 * Races every pair of {@link racedPairs} for `rounds` rounds across two instances of one storage,
 * each round on a fresh session; one report run per pair. Storage that cannot be opened (no
 * server) makes the row `n/a`: the driver's own cells say why. Returns the runs made.
 */
export async function concurrentPairs(
  driver: HarnessDriver,
  report: ReportBuilder,
  options: PairProbeOptions,
): Promise<number> {
  const rounds = options.rounds ?? (options.quick ? QUICK_PAIR_ROUNDS : FULL_PAIR_ROUNDS);
  let opened: Awaited<ReturnType<typeof openTwo>>;
  try {
    opened = await openTwo(driver, options.mode);
  } catch (error) {
    report.notApplicable(driver.name, PAIRS_CELL, `cannot open two instances: ${(error as Error).message}`);
    return 0;
  }
  const pairs = racedPairs();
  try {
    for (const [done, pair] of pairs.entries()) {
      if (report.enough) break;
      const check = new Checker();
      for (let round = 0; round < rounds; round++) await racePair(opened.stores, pair, round, check);
      report.add(driver.name, PAIRS_CELL, `${pair[0]} × ${pair[1]}, ${rounds} rounds`, check.outcome, false);
      options.progress?.(`${driver.name} concurrent pairs`, done + 1, pairs.length);
    }
  } finally {
    for (const store of opened.stores) await store.close().catch(() => undefined);
    await opened.destroy();
  }
  return pairs.length;
}
