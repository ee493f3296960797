// The power-loss sweep of SQLite (ALICE over a system-call trace). better-sqlite3 has no custom VFS,
// so the harness cannot put SQLite on CrashFs; instead a child process runs a small workload under
// strace, every write, truncation, sync and directory operation of the store's files (database,
// -wal, -shm, -journal) is recorded in order with the child's acknowledgements among them, and the
// disk states a power loss could leave at each point are rebuilt (powerloss-disk.ts), reopened
// with the store and checked: every batch acknowledged by then is there byte for byte, nothing
// else but a whole in-flight batch, and the store takes the next append.
import { existsSync, promises as fsp } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import type { SessionStore } from '@tidemark/core';
import type {
  EngineCheckSuite,
  PowerLossRequest,
  ReportBuilder,
  ServerFaultContext,
  WorkloadModel,
} from '@tidemark/faults';
import {
  AckLedger,
  Checker,
  type DiskSnapshot,
  enumerateCrashChoices,
  killEventType,
  materializeTraced,
  powerLossChildPath,
  type RunOutcome,
  sessionId,
  stateSignature,
  straceWorks,
  TracedDisk,
  type TraceOp,
  traceChild,
  workloadEvent,
} from '@tidemark/faults';
import {
  type DurabilityMode,
  openFromSpec,
  SQLITE_OPEN_SPEC,
  type SqliteOpenSpec,
  scratchDir,
} from './settings.js';

/** The report row of the sweep. */
export const POWER_LOSS_CELL = 'power loss (syscall trace)';

/** Options of {@link sqlitePowerLoss}. */
export interface PowerLossOptions {
  /** How the store is opened (default `@tidemark/sqlite`); a broken variant replaces it. */
  spec?: SqliteOpenSpec;
  /** Append to all sessions at once (group commit); default true. */
  together?: boolean;
  /** Rounds of appends (default 3 quick, 6 full), each one batch per session of 3. */
  rounds?: number;
  /** Stop after this many violating states (default: never). */
  stopAfterFailures?: number;
  /** Durability modes swept (default both), each against what it promises. */
  modes?: readonly DurabilityMode[];
}

/** The workload's sessions. */
const SESSION_KEYS = ['p0', 'p1', 'p2'];

/** Whether the disk state after `ops[i]` is checked: full runs check after every change and ack. */
export function isCrashPoint(ops: readonly TraceOp[], i: number, quick: boolean): boolean {
  const op = ops[i]!;
  const ack = op.kind === 'say' && op.line.startsWith('ack ');
  if (!quick) return ack || op.kind !== 'say';
  // Quick: where the most is pending (right before a sync), each acknowledgement, and the end.
  const beforeSync = op.kind !== 'sync' && op.kind !== 'say' && ops[i + 1]?.kind === 'sync';
  return ack || beforeSync || i === ops.length - 1;
}

function describeOp(op: TraceOp): string {
  const base = (path: string) => path.slice(path.lastIndexOf('/') + 1);
  switch (op.kind) {
    case 'say':
      return op.line.trim();
    case 'write':
      return `write ${op.data.length} B at ${op.offset} of ${base(op.path)}`;
    case 'truncate':
      return `truncate ${base(op.path)} to ${op.size}`;
    case 'rename':
      return `rename ${base(op.from)} → ${base(op.to)}`;
    default:
      return `${op.kind} ${base(op.path)}`;
  }
}

/** Writes a crash state's files under `dir`, at their places relative to the traced root. */
export async function writeState(
  files: ReadonlyMap<string, Buffer>,
  root: string,
  dir: string,
): Promise<void> {
  await fsp.mkdir(dir, { recursive: true });
  for (const [path, data] of files) {
    const target = join(dir, relative(root, path));
    await fsp.mkdir(dirname(target), { recursive: true });
    await fsp.writeFile(target, data);
  }
}

/**
 * Appends the next batch to every readable session (and to a new one): a reopened store must take
 * it. A session that could not be loaded is skipped: that is a violation already, and its next
 * seq is unknown.
 */
async function nextAppends(store: SessionStore, state: LoadedState, check: Checker): Promise<void> {
  for (const key of [...state.keys, 'fresh']) {
    if (state.unreadable.has(key)) continue;
    const id = sessionId(key);
    const at = state.loaded.get(key);
    if (at === undefined) {
      const created = await check.attempt(`create(${id})`, () => store.create({ id }));
      if (!created.ok) continue; // a typed refusal; the model checks decided whether it was right
    }
    const from = at ?? 0;
    const events = [workloadEvent(key, from, killEventType(from))];
    const done = await check.attempt(`append(${id}) after power loss`, () => store.append(id, events));
    if (!done.ok)
      check.violation(
        'not-writable',
        `${id}: the next append after the power loss failed: ${done.error?.code ?? 'untyped'} ${done.error?.message ?? ''}`,
      );
  }
}

/** What the reopened store holds: events per loaded session, and the sessions it could not load. */
interface LoadedState {
  keys: readonly string[];
  loaded: Map<string, number>;
  unreadable: Set<string>;
}

/** has() and load() of every session, checked against the model. */
async function loadAll(store: SessionStore, model: WorkloadModel, check: Checker): Promise<LoadedState> {
  const state: LoadedState = { keys: [...model.sessions.keys()], loaded: new Map(), unreadable: new Set() };
  for (const session of model.sessions.values()) {
    const has = await check.attempt(`has(${session.id})`, () => store.has(session.id));
    if (has.ok) check.has(session, has.value);
    const load = await check.attempt(`load(${session.id})`, () => store.load(session.id));
    check.load(session, load, true);
    if (load.ok) {
      state.loaded.set(session.key, load.value.events.length);
      continue;
    }
    if (load.error?.code !== 'NOT_FOUND') state.unreadable.add(session.key);
    if (session.acked.length === 0) continue;
    // Absent (a false absence, counted by check.load) or unreadable: either way the events are gone.
    check.outcome.lostEvents += session.acked.length;
    if (load.error?.code !== 'NOT_FOUND')
      check.violation(
        'lost-event',
        `load(${session.id}) failed after the power loss: ${load.error?.code ?? 'untyped'}`,
      );
  }
  return state;
}

/** Reopens one crash state and checks it against what was acknowledged at its point. */
async function checkState(context: SweepContext, path: string, model: WorkloadModel): Promise<RunOutcome> {
  const check = new Checker();
  const opened = await check.attempt('reopen after power loss', () =>
    openFromSpec(context.spec, path, context.mode),
  );
  if (!opened.ok) {
    if (opened.error !== undefined) {
      check.outcome.lostEvents += model.ackedEvents;
      check.violation(
        'not-writable',
        `the store did not reopen: ${opened.error.code} ${opened.error.message.slice(0, 200)}`,
      );
    }
    return check.outcome;
  }
  const store = opened.value;
  await nextAppends(store, await loadAll(store, model, check), check);
  await check.attempt('close', () => store.close());
  return check.outcome;
}

/** Counters of one sweep. */
interface SweepCounts {
  points: number;
  states: number;
  enumerated: number;
  violating: number;
}

/** What one mode's sweep works with. */
interface SweepContext {
  name: string;
  spec: SqliteOpenSpec;
  mode: DurabilityMode;
  report: ReportBuilder;
  /** The traced store's directory, and a scratch directory for the states. */
  root: string;
  work: string;
  quick: boolean;
  options: PowerLossOptions;
}

/** Checks the crash states at one point; `seen` skips a disk already checked with the same expectations. */
async function checkPoint(
  context: SweepContext,
  snapshot: DiskSnapshot,
  ledger: AckLedger,
  where: { index: number; op: TraceOp },
  seen: Set<string>,
  counts: SweepCounts,
): Promise<void> {
  const model = ledger.model(SESSION_KEYS, context.mode);
  for (const choice of enumerateCrashChoices(snapshot, { full: !context.quick })) {
    counts.enumerated++;
    const files = materializeTraced(snapshot, choice);
    const key = `${stateSignature(files)} ${ledger.signature(context.mode)}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const dir = join(context.work, `state-${counts.states++}`);
    await writeState(files, context.root, dir);
    const outcome = await checkState(context, join(dir, 'store.db'), model.clone());
    await fsp.rm(dir, { recursive: true, force: true });
    const fault = `${context.mode}, after call ${where.index + 1} (${describeOp(where.op)}): ${choice.label}`;
    if (outcome.violations.length > 0) counts.violating++;
    context.report.add(context.name, POWER_LOSS_CELL, fault, outcome, true, {
      operation: where.index + 1,
      crashState: fault,
    });
  }
}

/** Runs the child under strace and returns its operations, or says why there are none. */
async function recordWorkload(context: SweepContext): Promise<{ ops: TraceOp[] } | { error: string }> {
  const { spec, root, work, quick, options } = context;
  const request: PowerLossRequest = {
    module: spec.module,
    factory: spec.factory,
    options: spec.options(join(root, 'store.db'), context.mode),
    sessions: SESSION_KEYS.length,
    rounds: options.rounds ?? (quick ? 3 : 6),
    together: options.together ?? true,
  };
  const run = await traceChild(powerLossChildPath(), JSON.stringify(request), root, join(work, 'trace.log'));
  if (run.exitCode !== 0 || !run.stdout.includes('closed'))
    return {
      error: `the traced workload failed (status ${run.exitCode}): ${(run.stdout + run.stderr).slice(-300)}`,
    };
  const acks = run.ops.filter((op) => op.kind === 'say' && op.line.startsWith('ack ')).length;
  if (acks !== request.sessions * request.rounds)
    return { error: `the trace holds ${acks} acknowledgements of ${request.sessions * request.rounds}` };
  return { ops: run.ops };
}

/** One mode: trace the workload, then check every crash point. */
async function sweepMode(
  context: SweepContext,
  progress: ServerFaultContext['progress'],
): Promise<SweepCounts & { ops: number }> {
  await fsp.mkdir(context.root, { recursive: true });
  const recorded = await recordWorkload(context);
  if ('error' in recorded) {
    const check = new Checker();
    check.violation('not-run', recorded.error);
    context.report.add(
      context.name,
      POWER_LOSS_CELL,
      `${context.mode}: traced workload`,
      check.outcome,
      false,
    );
    return { ops: 0, points: 0, states: 1, enumerated: 0, violating: 1 };
  }
  const { ops } = recorded;
  const disk = new TracedDisk(context.root);
  const ledger = new AckLedger();
  const seen = new Set<string>();
  const counts: SweepCounts = { points: 0, states: 0, enumerated: 0, violating: 0 };
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    if (op.kind === 'say') ledger.read(op.line);
    else disk.apply(op);
    if (!isCrashPoint(ops, i, context.quick)) continue;
    counts.points++;
    await checkPoint(context, disk.snapshot(), ledger, { index: i, op }, seen, counts);
    progress?.(`${context.name} power loss (${context.mode})`, i + 1, ops.length);
    if (counts.violating >= (context.options.stopAfterFailures ?? Number.POSITIVE_INFINITY)) break;
  }
  return { ...counts, ops: ops.length };
}

/**
 * The power-loss cell of a SQLite driver (`power loss (syscall trace)`): for each durability mode,
 * a workload (3 sessions, rounds of batches of 1–3 events appended together, then close) is
 * traced; at every crash point (quick: each acknowledgement, right before each sync, the end;
 * full: after every traced operation) the states of {@link enumerateCrashChoices} are rebuilt on
 * tmpfs, reopened and checked against what the mode promises ({@link AckLedger}). `n/a` without
 * strace or before `pnpm build`.
 */
export function sqlitePowerLoss(name: string, options: PowerLossOptions = {}): EngineCheckSuite {
  const spec = options.spec ?? SQLITE_OPEN_SPEC;
  return {
    async run({ report, quick, progress }: ServerFaultContext) {
      if (!existsSync(powerLossChildPath())) {
        report.notApplicable(name, POWER_LOSS_CELL, 'child script not built: run pnpm build');
        return { runs: 0 };
      }
      if (!(await straceWorks())) {
        report.notApplicable(name, POWER_LOSS_CELL, 'strace missing or not permitted (/usr/bin/strace)');
        return { runs: 0 };
      }
      const work = await scratchDir('tidemark-powerloss-');
      const total = { points: 0, states: 0 };
      const notes: string[] = [];
      try {
        for (const mode of options.modes ?? (['strict', 'relaxed'] as const)) {
          const dir = join(work, mode);
          const context = { name, spec, mode, report, root: join(dir, 'disk'), work: dir, quick, options };
          const counts = await sweepMode(context, progress);
          total.points += counts.points;
          total.states += counts.states;
          notes.push(
            `${mode}: ${counts.ops} traced operations, ${counts.points} crash points, ${counts.states} distinct states checked (${counts.enumerated} enumerated)`,
          );
        }
        report.cell(name, POWER_LOSS_CELL).note = notes.join('; ');
        return { runs: total.states, crashPoints: total.points, crashStates: total.states };
      } finally {
        await fsp.rm(work, { recursive: true, force: true });
      }
    },
  };
}
