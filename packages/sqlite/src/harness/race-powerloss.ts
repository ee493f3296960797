// The concurrent-writer probe at a power loss, for SQLite. SQLite cannot run on CrashFs, so the
// race runs in a child process under strace (race-trace-child.ts): two store instances (two
// connections to one database) race for one session, announcing each append among their system
// calls. The trace is replayed as in the single-writer power-loss check (sqlite-powerloss.ts); at
// each sampled crash point the disk states are rebuilt, and two instances reopen each at once and
// are checked as after any recovery of the race (concurrent.ts's checkRacersAfter).
import { existsSync, promises as fsp } from 'node:fs';
import { join } from 'node:path';
import type { EngineCheckSuite, RaceTraceRequest, ServerFaultContext } from '@tidemark/faults';
import {
  Checker,
  CONCURRENT_CELL,
  canonicalEvent,
  checkRacersAfter,
  enumerateCrashChoices,
  materializeTraced,
  modeClass,
  RACE_SESSIONS,
  RaceModel,
  raceEvents,
  raceTraceChildPath,
  spread,
  stateSignature,
  straceWorks,
  TracedDisk,
  traceChild,
} from '@tidemark/faults';
import { isCrashPoint, writeState } from './powerloss.js';
import {
  type DurabilityMode,
  openFromSpec,
  SQLITE_OPEN_SPEC,
  type SqliteOpenSpec,
  scratchDir,
} from './settings.js';

/** The report row (with `[relaxed]` in that mode). */
export const RACE_POWER_LOSS_CELL = `${CONCURRENT_CELL} (power loss, syscall trace)`;

/** Crash points of a quick run, spread evenly over those of the trace. */
export const QUICK_RACE_POWER_LOSS_POINTS = 4;

/**
 * Folds one line of the traced child into the model (`try|ack|refused KEY WRITER FROM COUNT`);
 * other lines are ignored. Two acknowledgements over one seq are a violation.
 */
export function foldRaceLine(model: RaceModel, line: string, check: Checker): void {
  const [word, key, writer, from, count] = line.trim().split(' ');
  if ((word !== 'try' && word !== 'ack' && word !== 'refused') || key === undefined || writer === undefined)
    return;
  const session = model.session(key, RACE_SESSIONS.find((s) => s.key === key)?.cwd);
  const at = Number(from);
  const batch = session.tried(writer, at, raceEvents(writer, key, at, Number(count)).map(canonicalEvent));
  if (word === 'ack') {
    const double = session.acked(batch);
    if (double !== undefined) check.violation('concurrent-writers', double);
  } else if (word === 'refused') session.refused(batch);
}

/** Options of {@link sqliteRacePowerLoss}. */
export interface RacePowerLossOptions {
  /** How the store is opened (default `@tidemark/sqlite`). */
  spec?: SqliteOpenSpec;
  /** Durability modes (default: strict when quick, both in the full run). */
  modes?: readonly DurabilityMode[];
}

/** One mode: trace the race, then check the states of the chosen crash points. */
async function sweepRace(
  name: string,
  spec: SqliteOpenSpec,
  mode: DurabilityMode,
  dir: string,
  context: ServerFaultContext,
): Promise<{ points: number; states: number }> {
  const { report, quick } = context;
  const row = modeClass(RACE_POWER_LOSS_CELL, { durability: mode, sample: 1 });
  const root = join(dir, 'disk');
  await fsp.mkdir(root, { recursive: true });
  const path = join(root, 'store.db');
  const request: RaceTraceRequest = {
    module: spec.module,
    factory: spec.factory,
    options: spec.options(path, mode),
  };
  const run = await traceChild(raceTraceChildPath(), JSON.stringify(request), root, join(dir, 'trace.log'));
  const recording = new Checker();
  if (run.exitCode !== 0 || !run.stdout.includes('closed'))
    recording.violation(
      'not-run',
      `the traced race failed (status ${run.exitCode}): ${(run.stdout + run.stderr).slice(-300)}`,
    );
  for (const line of run.stdout.split('\n'))
    if (line.startsWith('violations ')) recording.violation('concurrent-writers', line.slice(0, 300));
  report.add(name, row, `${mode}: the traced race`, recording.outcome, false);
  if (recording.outcome.violations.length > 0) return { points: 0, states: 0 };
  const candidates = run.ops.flatMap((_, i) => (isCrashPoint(run.ops, i, quick) ? [i] : []));
  const chosen = new Set(quick ? spread(candidates, QUICK_RACE_POWER_LOSS_POINTS) : candidates);
  const disk = new TracedDisk(root);
  const model = new RaceModel();
  const seen = new Set<string>();
  let states = 0;
  for (const [i, op] of run.ops.entries()) {
    if (op.kind === 'say') foldRaceLine(model, op.line, recording);
    else disk.apply(op);
    if (!chosen.has(i) || report.enough) continue;
    const snapshot = disk.snapshot();
    for (const choice of enumerateCrashChoices(snapshot, { full: !quick })) {
      const files = materializeTraced(snapshot, choice);
      const key = `${stateSignature(files)} ${JSON.stringify([...model.sessions.values()].map((s) => [...s.batches]))}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const state = join(dir, `state-${states++}`);
      await writeState(files, root, state);
      const check = new Checker();
      const open = () => openFromSpec(spec, join(state, 'store.db'), mode);
      const stores = [];
      for (let n = 0; n < 2; n++) {
        const opened = await check.attempt(`open instance ${n} after the power loss`, open);
        if (opened.ok) stores.push(opened.value);
        else
          check.violation(
            'not-writable',
            `instance ${n} cannot be opened after the power loss: ${opened.error?.message ?? ''}`,
          );
      }
      if (stores.length === 2) await checkRacersAfter(stores, model.clone(), check, open, true);
      else for (const store of stores) await check.attempt('close', () => store.close());
      await fsp.rm(state, { recursive: true, force: true });
      const fault = `${mode}, after call ${i + 1}: ${choice.label}`;
      report.add(name, row, fault, check.outcome, true, { operation: i + 1, crashState: fault });
    }
    context.progress?.(`${name} concurrent power loss (${mode})`, i + 1, run.ops.length);
  }
  return { points: chosen.size, states };
}

/**
 * The concurrent power-loss cell of a SQLite driver: two instances race for one session under
 * strace, and at each crash point (quick: 4 of them, strict only) every distinct disk state is
 * reopened by two instances at once and checked. `n/a` without strace or before `pnpm build`.
 */
export function sqliteRacePowerLoss(name: string, options: RacePowerLossOptions = {}): EngineCheckSuite {
  const spec = options.spec ?? SQLITE_OPEN_SPEC;
  return {
    async run(context: ServerFaultContext) {
      const { report, quick } = context;
      if (!existsSync(raceTraceChildPath())) {
        report.notApplicable(name, RACE_POWER_LOSS_CELL, 'child script not built: run pnpm build');
        return { runs: 0 };
      }
      if (!(await straceWorks())) {
        report.notApplicable(name, RACE_POWER_LOSS_CELL, 'strace missing or not permitted (/usr/bin/strace)');
        return { runs: 0 };
      }
      const work = await scratchDir('tidemark-race-powerloss-');
      const total = { points: 0, states: 0 };
      try {
        const modes: readonly DurabilityMode[] =
          options.modes ?? (quick ? ['strict'] : ['strict', 'relaxed']);
        for (const mode of modes) {
          const swept = await sweepRace(name, spec, mode, join(work, mode), context);
          total.points += swept.points;
          total.states += swept.states;
        }
        return { runs: total.states, crashPoints: total.points, crashStates: total.states };
      } finally {
        await fsp.rm(work, { recursive: true, force: true });
      }
    },
  };
}
