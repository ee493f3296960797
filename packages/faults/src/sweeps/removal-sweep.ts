// Tail cuts and explicit repairs (contract §4): `load(id, { tail: 'cut' })` and
// `repair(id, { tail: 'cut', dropCorrupt: true })` are the two calls that take events out of a
// log on purpose. Whatever they take out must be in quarantine, byte for byte; what they leave
// must be a prefix of what was written (after a cut: ending at a boundary, every boundary the
// crash had to keep still there); and the store goes on: a reopen reads what they left, and the
// next append lands after it.
import {
  DEFAULT_BOUNDARY_TYPES,
  type LoadedSession,
  type MaintainedStore,
  type SessionEvent,
  type SessionStore,
} from '@tidemark/core';
import type { Volume } from 'memfs';
import type { FsHarnessDriver, FsLayout } from '../drivers/driver.js';
import { materialize } from '../fs/crash-fs.js';
import type { ReportBuilder } from '../report/report.js';
import type { ModelSession, WorkloadModel } from '../verdicts/model.js';
import { checkQuarantine, filesUnder, layoutGap, quarantineCheckApplies } from '../verdicts/quarantine.js';
import { Checker } from '../workload/runner.js';
import { canonicalEvent, workloadEvent } from '../workload/workload.js';
import { modeClass, STRICT_MODE, type SweepMode } from './mode.js';
import { type RemovalState, SWEEP_ROOT } from './sweeps.js';

/** The two calls that remove events on purpose. */
export type RemovingCall = 'tail cut' | 'repair';

function isMaintained(store: SessionStore): store is MaintainedStore {
  return typeof (store as Partial<MaintainedStore>).repair === 'function';
}

const BOUNDARY = new Set(DEFAULT_BOUNDARY_TYPES);

function isBoundaryText(canonical: string): boolean {
  return BOUNDARY.has((JSON.parse(canonical) as SessionEvent).type);
}

/**
 * Judges what a removing call left of one session, against the model. `damaged`: a byte of some
 * file was flipped, so the events from the damage on may go (dropCorrupt); otherwise every
 * boundary the model requires must still be there. Pure apart from recording violations.
 */
export function judgeRemoval(
  session: ModelSession,
  left: readonly string[],
  call: RemovingCall,
  damaged: boolean,
  check: Checker,
): void {
  const candidates = [session.acked, ...session.inDoubt.map((batch) => [...session.acked, ...batch])];
  const prefixOf = candidates.some(
    (full) => left.length <= full.length && left.every((e, i) => e === full[i]),
  );
  if (!prefixOf) {
    check.violation(
      'unacknowledged-visible',
      `${call} of ${session.id} left ${left.length} event(s) that are not a prefix of what was written`,
    );
    return;
  }
  if (left.length > 0 && !isBoundaryText(left[left.length - 1]!)) {
    check.violation('unacknowledged-visible', `${call} of ${session.id} left an interrupted tail in place`);
  }
  if (damaged) return;
  // Every event up to the last boundary among those the model requires must survive the cut.
  let keep = 0;
  for (let i = 0; i < session.requiredEvents; i++) if (isBoundaryText(session.acked[i]!)) keep = i + 1;
  if (left.length < keep) {
    check.outcome.lostEvents += keep - left.length;
    check.violation(
      'lost-event',
      `${call} of ${session.id} left ${left.length} event(s); the ${keep} up to its last boundary must stay`,
    );
  }
}

/** Runs the removing call on one session; the events left, or undefined when it failed (typed). */
async function removeTail(
  store: SessionStore,
  session: ModelSession,
  call: RemovingCall,
  check: Checker,
): Promise<LoadedSession | undefined> {
  const { id } = session;
  if (call === 'repair') {
    if (!isMaintained(store)) return undefined;
    const repaired = await check.attempt(`repair(${id}, { tail: 'cut', dropCorrupt: true })`, () =>
      store.repair(id, { tail: 'cut', dropCorrupt: true }),
    );
    if (!repaired.ok) {
      if (repaired.error?.code === 'NOT_FOUND' && session.exists === 'yes')
        check.violation('false-absence', `repair(${id}) said NOT_FOUND for an existing session`);
      return undefined;
    }
  }
  const loaded = await check.attempt(`load(${id}, { tail: 'cut' })`, () => store.load(id, { tail: 'cut' }));
  if (loaded.ok) return loaded.value;
  if (loaded.error?.code === 'NOT_FOUND' && session.exists === 'yes')
    check.violation('false-absence', `load(${id}, { tail: 'cut' }) said NOT_FOUND for an existing session`);
  return undefined;
}

/** A reopen reads exactly what the removing call left, and takes the next turn after it. */
async function goesOn(
  open: () => Promise<SessionStore>,
  left: ReadonlyMap<ModelSession, string[]>,
  call: RemovingCall,
  check: Checker,
): Promise<void> {
  const reopened = await check.attempt(`reopen after ${call}`, open);
  if (!reopened.ok) {
    check.violation('not-writable', `the store cannot be reopened after ${call}`);
    return;
  }
  const store = reopened.value;
  for (const [session, events] of left) {
    const loaded = await check.attempt(`load(${session.id}) after ${call}`, () => store.load(session.id));
    const again = loaded.ok ? loaded.value.events.map(canonicalEvent) : undefined;
    if (again === undefined || again.length !== events.length || again.some((e, i) => e !== events[i])) {
      check.violation(
        again === undefined ? 'lost-event' : 'unacknowledged-visible',
        `a reopen after ${call} of ${session.id} reads ${again?.length ?? 'nothing'} event(s), not the ${events.length} left`,
      );
      continue;
    }
    const seq = events.length;
    const turn = [
      workloadEvent(session.key, seq, 'user/message'),
      workloadEvent(session.key, seq + 1, 'turn/end'),
    ];
    const appended = await check.attempt(`append(${session.id}) after ${call}`, () =>
      store.append(session.id, turn),
    );
    if (!appended.ok) check.violation('not-writable', `append(${session.id}) after ${call} failed`);
  }
  await check.attempt('close', () => store.close());
}

/**
 * Reopens the store on `disk`, runs the removing call on every session that may exist, and checks
 * what it left ({@link judgeRemoval}), that every removed byte is in quarantine, and that the store
 * goes on ({@link goesOn}).
 */
export async function removalProbe(
  driver: FsHarnessDriver & { layout: FsLayout },
  disk: ReturnType<typeof materialize>,
  model: WorkloadModel,
  call: RemovingCall,
  options: { damaged: boolean; durability: SweepMode['durability'] },
): Promise<Checker> {
  const check = new Checker();
  const open = () => driver.open({ fs: disk, root: SWEEP_ROOT, durability: options.durability });
  const before = filesUnder(disk.volume as Volume, '/');
  const opened = await check.attempt(`open before ${call}`, open);
  if (!opened.ok) {
    check.openAnswer(opened.error);
    return check;
  }
  const left = new Map<ModelSession, string[]>();
  for (const session of model.sessions.values()) {
    if (session.exists === 'no') continue;
    const loaded = await removeTail(opened.value, session, call, check);
    if (loaded === undefined) continue;
    const events = loaded.events.map(canonicalEvent);
    judgeRemoval(session, events, call, options.damaged, check);
    left.set(session, events);
  }
  await check.attempt('close', () => opened.value.close());
  if (quarantineCheckApplies(driver.layout))
    checkQuarantine(driver.layout, before, filesUnder(disk.volume as Volume, '/'), check);
  await goesOn(open, left, call, check);
  return check;
}

/**
 * The removal sweep over crash states (a sample of torn, zero-filled or garbage tails and the
 * state after the whole workload, whose last turn is interrupted): each state reopened once for a
 * tail cut and once for a repair. Returns the runs made.
 */
export async function removalSweepFs(
  driver: FsHarnessDriver,
  report: ReportBuilder,
  states: readonly RemovalState[],
  mode: SweepMode = STRICT_MODE,
): Promise<number> {
  const { layout } = driver;
  if (layout === undefined) {
    const reason = layoutGap(layout, 'removal')!;
    for (const call of ['tail cut', 'repair'] as const)
      report.notApplicable(driver.name, modeClass(`crash + ${call}`, mode), reason);
    return 0;
  }
  let runs = 0;
  for (const { state, model, label } of states) {
    for (const call of ['tail cut', 'repair'] as const) {
      if (report.enough) return runs;
      const check = await removalProbe({ ...driver, layout }, materialize(state), model.afterCrash(), call, {
        damaged: false,
        durability: mode.durability,
      });
      report.add(
        driver.name,
        modeClass(`crash + ${call}`, mode),
        `${label}; then ${call}`,
        check.outcome,
        false,
      );
      runs++;
    }
  }
  return runs;
}
