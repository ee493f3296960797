// Two processes on one session, on the real disk and engine: two child processes (child.ts,
// `racer`) append to the same session at once, each where it believes the log ends; in every
// other run one of them is killed with SIGKILL after a few acknowledgements, mid-append. Their
// `try`/`ack`/`refused` lines are folded into the two-writer model, and the parent then checks the
// log as the in-process probe does (concurrent.ts): two instances read the same history holding
// every acknowledged batch, race for the next seq, and a fresh reopen reads it all again.
import { existsSync, promises as fsp } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { HarnessDriver, RealFaultSupport } from '../drivers/driver.js';
import type { ReportBuilder } from '../report/report.js';
import type { Progress } from '../sweeps/sweeps.js';
import { RaceModel, type RaceSession, raceEvents } from '../verdicts/concurrent-model.js';
import { CONCURRENT_CELL, checkRacersAfter } from '../workload/concurrent.js';
import { Checker } from '../workload/runner.js';
import { canonicalEvent } from '../workload/workload.js';
import type { ChildRequest } from './child-protocol.js';
import { childScriptPath, newLocation, openReal, startChild } from './real.js';

/** The report row. */
export const CONCURRENT_PROCESSES_CELL = `${CONCURRENT_CELL} (two processes, real disk)`;

/** Batches each racer gets acknowledged before it closes. */
const BATCHES = 4;

/** The session key both racers write. */
const KEY = 'race';

/**
 * Folds one racer's report lines into the model; an `error` or `stderr` line of a racer that was
 * not killed is a violation (it could not open, or met an untyped error).
 */
export function foldRacerLines(
  session: RaceSession,
  writer: string,
  lines: readonly string[],
  killed: boolean,
  check: Checker,
): void {
  for (const line of lines) {
    const [word, from, count] = line.split(' ');
    const at = Number(from);
    const batch = () =>
      session.tried(writer, at, raceEvents(writer, KEY, at, Number(count)).map(canonicalEvent));
    if (word === 'try') batch();
    else if (word === 'ack') {
      const double = session.acked(batch());
      if (double !== undefined) check.violation('concurrent-writers', double);
    } else if (word === 'refused') session.refused(batch());
    else if ((word === 'error' || word === 'stderr') && !killed)
      check.violation('not-writable', `racer ${writer} failed: ${line.slice(0, 300)}`);
  }
}

/** What racer `index` is asked to do. */
function racerRequest(real: RealFaultSupport, location: string, index: number): ChildRequest {
  return {
    mode: 'racer',
    module: real.module,
    factory: real.factory,
    options: real.options(location),
    writer: `proc${index}`,
    index,
    key: KEY,
    batches: BATCHES,
  };
}

/**
 * One run: both racers start, wait until both are ready, go together; with `kill`, racer 1 is
 * killed after 1 to 3 acknowledgements and a random instant more. Returns the outcome's checker.
 */
async function raceProcesses(
  real: RealFaultSupport,
  location: string,
  kill: boolean,
): Promise<{ check: Checker; killed: boolean }> {
  const check = new Checker();
  const runs = [0, 1].map((i) => startChild(racerRequest(real, location, i)));
  const ready = await Promise.all(runs.map((run) => run.waitFor('ready')));
  for (const run of runs) run.child.stdin?.write('go\n');
  let killed = false;
  if (kill && ready.every(Boolean)) {
    const victim = runs[1]!;
    if (await victim.waitFor('ack', 1 + Math.floor(Math.random() * 3))) {
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
      killed = victim.child.kill('SIGKILL');
    }
  }
  await Promise.all(runs.map((run) => run.exited));
  const model = new RaceModel();
  const session = model.session(KEY);
  for (const [i, run] of runs.entries()) {
    foldRacerLines(session, `proc${i}`, run.lines, killed && i === 1, check);
    if (!ready[i])
      check.violation(
        'not-writable',
        `racer ${i} never became ready: ${run.lines.join(' | ').slice(0, 300)}`,
      );
  }
  const open = () => openReal(real, location);
  const stores = [];
  for (let i = 0; i < 2; i++) {
    const opened = await check.attempt(`open instance ${i} after the racers`, open);
    if (opened.ok) stores.push(opened.value);
    else
      check.violation(
        'not-writable',
        `instance ${i} cannot be opened after the racers: ${opened.error?.message ?? ''}`,
      );
  }
  if (stores.length === 2) await checkRacersAfter(stores, model, check, open, killed);
  else for (const store of stores) await check.attempt('close', () => store.close());
  return { check, killed };
}

/** Options of {@link concurrentProcesses}. */
export interface ConcurrentProcessOptions {
  /** Runs, each on a fresh store (the harness: 4 quick, 16 full). */
  runs: number;
  /** Scratch directory (default: a fresh one under the OS temp dir, removed afterwards). */
  scratchDir?: string;
  progress?: Progress;
}

/**
 * Runs of two racing processes on a fresh store each, every other one with a SIGKILL, in the
 * real-fault phase of drivers with real-disk support (others: `n/a`). Returns the runs made.
 */
export async function concurrentProcesses(
  driver: HarnessDriver,
  report: ReportBuilder,
  options: ConcurrentProcessOptions,
): Promise<number> {
  const real = driver.real;
  if (real === undefined || !existsSync(childScriptPath())) {
    const why =
      real === undefined ? 'driver has no real-disk support' : 'child script not built: run pnpm build';
    report.notApplicable(driver.name, CONCURRENT_PROCESSES_CELL, why);
    return 0;
  }
  const scratch = options.scratchDir ?? (await fsp.mkdtemp(join(tmpdir(), 'tidemark-racers-')));
  try {
    return await racerRuns(driver, real, join(scratch, `${driver.name}-race`), report, options);
  } finally {
    if (options.scratchDir === undefined) await fsp.rm(scratch, { recursive: true, force: true });
  }
}

async function racerRuns(
  driver: HarnessDriver,
  real: RealFaultSupport,
  dir: string,
  report: ReportBuilder,
  options: ConcurrentProcessOptions,
): Promise<number> {
  for (let k = 0; k < options.runs; k++) {
    const location = await newLocation(real, `${dir}-${k}`);
    const kill = k % 2 === 1;
    const { check, killed } = await raceProcesses(real, location, kill);
    const label = `run ${k}: two processes on one session${kill ? (killed ? ', one SIGKILLed mid-append' : ', the kill came too late') : ''}`;
    report.add(driver.name, CONCURRENT_PROCESSES_CELL, label, check.outcome, killed);
    options.progress?.(`${driver.name} concurrent processes`, k + 1, options.runs);
  }
  return options.runs;
}
