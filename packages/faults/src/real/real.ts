import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, promises as fsp } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { JsonObject, SessionStore } from '@tidemark/core';
import type { HarnessDriver, RealFaultCase, RealFaultSupport } from '../drivers/driver.js';
import { builtFile } from '../drivers/loader.js';
import type { ReportBuilder } from '../report/report.js';
import type { Progress } from '../sweeps/sweeps.js';
import { WorkloadModel } from '../verdicts/model.js';
import { probeStore } from '../verdicts/probe.js';
import { rereadAfterRecovery } from '../verdicts/reread.js';
import { verifyAfterLift } from '../verdicts/verify.js';
import { Checker, type RunOutcome, runWorkload } from '../workload/runner.js';
import { canonicalEvent, sessionId, workloadEvent } from '../workload/workload.js';
import { type ChildRequest, killEventType, type SerializedSession } from './child-protocol.js';

/** Options of {@link runRealFaults}. */
export interface RealFaultOptions {
  /** SIGKILLs of a child writer. */
  kills: number;
  /** Scratch directory (default: a fresh directory under the OS temp dir, removed afterwards). */
  scratchDir?: string;
  progress?: Progress;
}

/** The unprivileged uid/gid of permission faults (nobody/nogroup). */
export const UNPRIVILEGED = { uid: 65534, gid: 65534 };

/** Path of the built child script (`dist/real/child.js`); real faults need `pnpm build` first. */
export function childScriptPath(): string {
  return builtFile(import.meta.url, 'real/child.js');
}

/**
 * Path of the built power-loss child (`dist/real/powerloss-child.js`), the workload a power-loss
 * sweep runs under strace (a `PowerLossRequest` as JSON in argv[2]).
 */
export function powerLossChildPath(): string {
  return builtFile(import.meta.url, 'real/powerloss-child.js');
}

/** Path of the built race child (`dist/real/race-trace-child.js`): two racers in one traced process. */
export function raceTraceChildPath(): string {
  return builtFile(import.meta.url, 'real/race-trace-child.js');
}

/** Starts a child process of the harness (child.ts) with `request`, collecting its stdout lines. */
export function startChild(
  request: ChildRequest,
  asUser?: { uid: number; gid: number },
): {
  child: ChildProcess;
  lines: string[];
  exited: Promise<number | null>;
  /** Resolves true once `count` lines (default 1) start with `prefix`; false if the child exits first. */
  waitFor(prefix: string, count?: number): Promise<boolean>;
} {
  const child = spawn(process.execPath, [childScriptPath(), JSON.stringify(request)], {
    stdio: ['pipe', 'pipe', 'pipe'],
    ...(asUser ?? {}),
  });
  const lines: string[] = [];
  const waiters: { prefix: string; left: number; resolve: (ok: boolean) => void }[] = [];
  let buffered = '';
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => {
    buffered += chunk;
    let nl = buffered.indexOf('\n');
    while (nl >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      lines.push(line);
      for (const w of waiters.splice(0))
        if (line.startsWith(w.prefix) && --w.left === 0) w.resolve(true);
        else waiters.push(w);
      nl = buffered.indexOf('\n');
    }
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) =>
    child.on('close', (code) => {
      if (buffered !== '') lines.push(buffered);
      if (code !== 0 && code !== null && stderr !== '') lines.push(`stderr ${stderr.slice(0, 500)}`);
      for (const w of waiters.splice(0)) w.resolve(false);
      resolve(code);
    }),
  );
  return {
    child,
    lines,
    exited,
    waitFor: (prefix, count = 1) => {
      const left = count - lines.filter((l) => l.startsWith(prefix)).length;
      return left <= 0
        ? Promise.resolve(true)
        : new Promise<boolean>((resolve) => waiters.push({ prefix, left, resolve }));
    },
  };
}

/** Opens the backend on the real disk at `location`, as a child process would. */
export async function openReal(
  real: RealFaultSupport,
  location: string,
  extra: JsonObject = {},
): Promise<SessionStore> {
  const mod = (await import(real.module)) as Record<string, (o: JsonObject) => Promise<SessionStore>>;
  const open = mod[real.factory];
  if (typeof open !== 'function') throw new Error(`${real.module} has no export ${real.factory}`);
  return open({ ...real.options(location), ...extra });
}

/** `<dir>/guarded/store[.db]`: faults act on `guarded`, the store's parent. */
export async function newLocation(real: RealFaultSupport, dir: string): Promise<string> {
  const guarded = join(dir, 'guarded');
  await fsp.mkdir(guarded, { recursive: true, mode: 0o755 });
  await fsp.chmod(dir, 0o755);
  return real.location === 'dir' ? join(guarded, 'store') : join(guarded, 'store.db');
}

/** Runs the agent workload on the real disk, without faults, and returns the model of what it acknowledged. */
async function populate(real: RealFaultSupport, location: string, check: Checker): Promise<WorkloadModel> {
  const model = new WorkloadModel();
  const opened = await check.attempt('open for populate', () => openReal(real, location));
  if (!opened.ok) return model;
  await runWorkload(opened.value, model, check, { checkFailedAppend: false });
  await check.attempt('close', () => opened.value.close());
  for (const s of model.sessions.values()) s.created = false;
  return model;
}

async function reopenAndVerify(
  real: RealFaultSupport,
  location: string,
  model: WorkloadModel,
  check: Checker,
): Promise<void> {
  const reopened = await check.attempt('reopen after lift', () => openReal(real, location));
  if (!reopened.ok) {
    check.outcome.lostEvents += model.ackedEvents;
    check.violation(
      'not-writable',
      `cannot reopen after the fault was lifted: ${reopened.error?.message ?? ''}`,
    );
    return;
  }
  await verifyAfterLift(reopened.value, model, check, { crash: false });
  await check.attempt('close', () => reopened.value.close());
  await rereadAfterRecovery(() => openReal(real, location), model, check);
}

function serialize(model: WorkloadModel): SerializedSession[] {
  return [...model.sessions.values()].map((s) => ({
    key: s.key,
    ...(s.cwd !== undefined && { cwd: s.cwd }),
    acked: s.exists === 'yes' ? s.acked : [],
  }));
}

/** A damaged-storage case run by the generic flow: populate, inflict, probe, release, verify. */
interface InflictedCase extends RealFaultCase {
  /** Run the probe in a child with this uid/gid (permission faults). */
  probeAs?: { uid: number; gid: number };
}

/** ENOTDIR: the store's parent directory is replaced by a regular file, then restored. */
function enotdirCase(): InflictedCase {
  return {
    name: 'ENOTDIR (file as parent, real disk)',
    async inflict(location) {
      const parent = dirname(location);
      await fsp.rename(parent, `${parent}.moved`);
      await fsp.writeFile(parent, 'not a directory\n');
      return {
        destructive: false,
        async release() {
          await fsp.unlink(parent);
          await fsp.rename(`${parent}.moved`, parent);
        },
      };
    },
  };
}

/** EACCES: a child running as uid 65534 opens a store whose directory only root may enter. */
function eaccesCase(): InflictedCase {
  return {
    name: 'EACCES (unprivileged uid, real disk)',
    probeAs: UNPRIVILEGED,
    async inflict(location) {
      // The scratch tree must be traversable by the child down to this directory, which it is not.
      await fsp.chmod(dirname(location), 0o700);
      return { destructive: false };
    },
  };
}

async function runChildProbe(
  real: RealFaultSupport,
  location: string,
  model: WorkloadModel,
  destructive: boolean,
  asUser: { uid: number; gid: number },
): Promise<RunOutcome> {
  const { lines, exited } = startChild(
    {
      mode: 'probe',
      module: real.module,
      factory: real.factory,
      options: real.options(location),
      model: serialize(model),
      destructive,
    },
    asUser,
  );
  await exited;
  const last = lines.find((line) => line.startsWith('{'));
  if (last === undefined) {
    return {
      violations: [
        { kind: 'untyped-error', detail: `probe child gave no outcome: ${lines.join(' | ').slice(0, 300)}` },
      ],
      errorsSurfaced: 0,
      lostEvents: 0,
      absences: 0,
    };
  }
  return JSON.parse(last) as RunOutcome;
}

async function runInflictedCase(
  driver: HarnessDriver,
  real: RealFaultSupport,
  testCase: InflictedCase,
  dir: string,
  report: ReportBuilder,
): Promise<void> {
  const location = await newLocation(real, dir);
  const setup = new Checker();
  const model = await populate(real, location, setup);
  if (setup.outcome.violations.length > 0) {
    report.add(driver.name, testCase.name, 'populate without faults', setup.outcome, false);
    return;
  }
  const { destructive, release, storeOptions } = await testCase.inflict(location);
  let outcome: RunOutcome;
  if (testCase.probeAs !== undefined) {
    outcome = await runChildProbe(real, location, model, destructive, testCase.probeAs);
  } else {
    const check = new Checker();
    await probeStore(() => openReal(real, location, storeOptions ?? {}), model, check, destructive);
    outcome = check.outcome;
  }
  await release?.();
  if (!destructive) {
    const after = new Checker();
    await reopenAndVerify(real, location, model, after);
    outcome.violations.push(...after.outcome.violations);
    outcome.lostEvents += after.outcome.lostEvents;
    outcome.absences += after.outcome.absences;
  }
  report.expectErrors(driver.name, testCase.name);
  report.add(driver.name, testCase.name, testCase.name, outcome, true);
}

/** What the SIGKILL writer child is asked to do. */
function writerRequest(real: RealFaultSupport, location: string, sessions: number): ChildRequest {
  return {
    mode: 'writer',
    module: real.module,
    factory: real.factory,
    options: real.options(location),
    sessions,
    ...(real.appendsTogether === true && { together: true }),
  };
}

type ChildRun = ReturnType<typeof startChild>;
/** The writer's last append attempt per session key, and whether it was acknowledged. */
type LastTries = Map<string, { from: number; count: number; acked: boolean }>;

/**
 * Kills writer `k` at a random instant; false when it never became ready though it was meant to.
 * Every fourth kill lands during start-up, every fourth a random time after ready, the rest after
 * a random number of acknowledgements.
 */
async function killWriterAtRandom(run: ChildRun, k: number): Promise<boolean> {
  if (k % 4 === 3) {
    // Start-up: module loading, open, lock takeover, tail repair.
    const early = new Promise<void>((resolve) => setTimeout(resolve, 40 + Math.random() * 120));
    const ready = await Promise.race([early.then(() => false), run.waitFor('ready')]);
    if (ready) await new Promise((resolve) => setTimeout(resolve, Math.random() * 5));
    run.child.kill('SIGKILL');
    return true; // killed on purpose, ready or not
  }
  const ready = await run.waitFor('ready');
  if (ready && k % 4 === 0) {
    // A random instant from start-up on: often inside a session's first append (its publish).
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 40));
    run.child.kill('SIGKILL');
  } else if (ready) {
    // Inside the append loop, counted in acknowledgements rather than milliseconds, so a slow
    // disk (fsync under a loaded CI machine) still gets batches acknowledged before the kill.
    // The short random delay lands the kill anywhere in the next append or two.
    await run.waitFor('ack', 1 + Math.floor(Math.random() * 16));
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 4));
    run.child.kill('SIGKILL');
  }
  return ready;
}

/** Folds the killed writer's report lines into the acknowledged ends; returns its acknowledgements. */
function readWriterLines(
  run: ChildRun,
  k: number,
  check: Checker,
  ackedEnd: Map<string, number>,
  lastTry: LastTries,
): number {
  let acks = 0;
  for (const line of run.lines) {
    const [word, key, from, count] = line.split(' ');
    if (word === 'try') lastTry.set(key!, { from: Number(from), count: Number(count), acked: false });
    else if (word === 'ack') {
      ackedEnd.set(key!, Number(from) + Number(count));
      const t = lastTry.get(key!);
      if (t !== undefined) t.acked = true;
      acks++;
    } else if (word === 'error' || word === 'stderr')
      check.violation('not-writable', `writer ${k} failed after the previous kill: ${line.slice(0, 300)}`);
  }
  return acks;
}

/** After kill `k`: every acknowledged event of session `key` is there, and at most the in-flight batch more. */
async function checkSessionAfterKill(
  store: SessionStore,
  key: string,
  k: number,
  check: Checker,
  ackedEnd: Map<string, number>,
  lastTry: LastTries,
): Promise<void> {
  const acked = ackedEnd.get(key) ?? 0;
  if (acked === 0) return;
  const id = sessionId(key);
  const has = await check.attempt(`has(${id})`, () => store.has(id));
  if (has.ok && !has.value)
    check.violation('false-absence', `has(${id}) = false after kill ${k}, with ${acked} events acknowledged`);
  const loaded = await check.attempt(`load(${id})`, () => store.load(id));
  if (!loaded.ok) {
    check.outcome.lostEvents += acked;
    check.violation(
      loaded.error?.code === 'NOT_FOUND' ? 'false-absence' : 'lost-event',
      `load(${id}) after kill ${k}: ${loaded.error?.code ?? 'untyped'} ${loaded.error?.message ?? ''}`,
    );
    return;
  }
  const events = loaded.value.events.map(canonicalEvent);
  let good = 0;
  while (good < acked && events[good] === canonicalEvent(workloadEvent(key, good, killEventType(good))))
    good++;
  if (good < acked) {
    check.outcome.lostEvents += acked - good;
    check.violation('lost-event', `${id}: ${acked - good} acknowledged event(s) missing after kill ${k}`);
  }
  const t = lastTry.get(key);
  const allowedExtra = t !== undefined && !t.acked && t.from === acked ? t.count : 0;
  const extra = events.length - acked;
  if (extra !== 0 && extra !== allowedExtra)
    check.violation(
      'unacknowledged-visible',
      `${id}: ${extra} event(s) beyond the ${acked} acknowledged after kill ${k} (a whole in-flight batch is ${allowedExtra})`,
    );
  if (extra > 0) ackedEnd.set(key, events.length); // the next writer continues after it
  if (t !== undefined && extra > 0) t.acked = true;
}

/** SIGKILL of a child writer at random instants; every acknowledged batch must survive each kill. */
async function killLoop(
  driver: HarnessDriver,
  real: RealFaultSupport,
  dir: string,
  kills: number,
  report: ReportBuilder,
  progress?: Progress,
): Promise<{ kills: number; acks: number }> {
  const location = await newLocation(real, dir);
  const sessions = 3;
  const ackedEnd = new Map<string, number>();
  const lastTry: LastTries = new Map();
  let totalAcks = 0;
  for (let k = 0; k < kills; k++) {
    const check = new Checker();
    const run = startChild(writerRequest(real, location, sessions));
    const ready = await killWriterAtRandom(run, k);
    await run.exited;
    totalAcks += readWriterLines(run, k, check, ackedEnd, lastTry);
    if (!ready && check.outcome.violations.length === 0)
      check.violation(
        'not-writable',
        `writer ${k} never became ready: ${run.lines.join(' | ').slice(0, 300)}`,
      );
    const opened = await check.attempt('open after kill', () => openReal(real, location));
    if (opened.ok) {
      for (let i = 0; i < sessions; i++)
        await checkSessionAfterKill(opened.value, `k${i}`, k, check, ackedEnd, lastTry);
      await check.attempt('close', () => opened.value.close());
    }
    report.add(driver.name, 'SIGKILL of a writer (real disk)', `kill ${k}`, check.outcome, ready);
    progress?.(`${driver.name} SIGKILL`, k + 1, kills);
  }
  return { kills, acks: totalAcks };
}

/**
 * Real faults on the real file system and engine (contract §7.3): a file as parent (ENOTDIR), a child
 * with an unprivileged uid (EACCES), SIGKILL of a child writer, and the driver's own cases
 * (corruption, truncation, locks, a full database). Child processes run the built `dist`.
 */
export async function runRealFaults(
  driver: HarnessDriver,
  report: ReportBuilder,
  options: RealFaultOptions,
): Promise<{ kills: number; acks: number }> {
  const real = driver.real;
  if (real === undefined) {
    report.notApplicable(driver.name, 'real faults', 'driver has no real-disk support');
    return { kills: 0, acks: 0 };
  }
  if (!existsSync(childScriptPath())) {
    report.notApplicable(driver.name, 'real faults', 'child script not built: run pnpm build');
    return { kills: 0, acks: 0 };
  }
  const scratch = options.scratchDir ?? (await fsp.mkdtemp(join(tmpdir(), 'tidemark-faults-')));
  // The EACCES child must reach its case directory to be refused there, not above it.
  await fsp.chmod(scratch, 0o755);
  try {
    const cases: InflictedCase[] = [
      enotdirCase(),
      ...(process.getuid?.() === 0 ? [eaccesCase()] : []),
      ...(driver.realFaults ?? []),
    ];
    let n = 0;
    for (const testCase of cases) {
      await runInflictedCase(driver, real, testCase, join(scratch, `${driver.name}-case-${n++}`), report);
      options.progress?.(`${driver.name} real faults`, n, cases.length);
    }
    return await killLoop(
      driver,
      real,
      join(scratch, `${driver.name}-kill`),
      options.kills,
      report,
      options.progress,
    );
  } finally {
    if (options.scratchDir === undefined) await fsp.rm(scratch, { recursive: true, force: true });
  }
}
