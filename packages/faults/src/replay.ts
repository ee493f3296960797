// One run of the harness again, from the replay id the report gives it (`--replay ID`): the error
// and crash sweeps are deterministic, so the same id gives the same fault at the same operation,
// or the same crash state, and the same outcome.

import type { HarnessDriver } from './drivers/driver.js';
import { crashStatesAt } from './fs/crash-fs.js';
import { ENGINE_ERRNOS, type ErrnoName, SWEEP_ERRNOS } from './fs/errno.js';
import { FULL_CRASH_LIMITS, QUICK_CRASH_LIMITS } from './harness.js';
import type { SweepMode } from './sweeps/mode.js';
import {
  checkCrashState,
  type ErrorFault,
  recordCrashPoints,
  runEngineOnce,
  runFsOnce,
} from './sweeps/sweeps.js';
import type { RunOutcome } from './workload/runner.js';
import { WRITE_PATH } from './workload/write-path.js';

/** What {@link replayRun} found. */
export interface ReplayResult {
  /** The fault, described as the report describes it. */
  fault: string;
  /** Whether the fault was really injected. */
  injected: boolean;
  outcome: RunOutcome;
}

const ERRNOS: readonly string[] = [...SWEEP_ERRNOS, ...ENGINE_ERRNOS];

/** A parsed replay id. */
export type ReplayTarget =
  | { kind: 'error'; fault: ErrorFault }
  | { kind: 'crash'; afterOp: number; stateIndex: number };

function wholeNumber(text: string | undefined, what: string, id: string): number {
  const n = Number(text);
  if (text === undefined || text === '' || !Number.isSafeInteger(n) || n < 0)
    throw new Error(`replay id ${JSON.stringify(id)}: ${what} must be a whole number`);
  return n;
}

/** Parses `error:<op>:<ERRNO>:once|persistent`, `error:<op>:short` or `crash:<op>:<state>`. Pure. */
export function parseReplayId(id: string): ReplayTarget {
  const [kind, a, b, c, ...rest] = id.split(':');
  if (kind === 'error' && rest.length === 0) {
    const at = wholeNumber(a, 'the operation', id);
    if (b === 'short' && c === undefined)
      return { kind: 'error', fault: { at, errno: 'ENOSPC', mode: 'once', shortWrite: true } };
    if (b !== undefined && ERRNOS.includes(b) && (c === 'once' || c === 'persistent'))
      return { kind: 'error', fault: { at, errno: b as ErrnoName, mode: c } };
  }
  if (kind === 'crash' && c === undefined && rest.length === 0)
    return {
      kind: 'crash',
      afterOp: wholeNumber(a, 'the operation', id),
      stateIndex: wholeNumber(b, 'the state index', id),
    };
  throw new Error(
    `unknown replay id ${JSON.stringify(id)} (expected error:OP:ERRNO:once|persistent, error:OP:short or crash:OP:STATE, as the report gives them)`,
  );
}

/**
 * Runs one run of a sweep again on `driver`. `quick` must be what the reported run used: it
 * decides which crash points are recorded and which states each one has.
 */
export async function replayRun(driver: HarnessDriver, id: string, quick: boolean): Promise<ReplayResult> {
  // A run of a durability mode other than strict carries it as a prefix: `relaxed/crash:44:0`;
  // one of a store opened with no options `default/crash:44:0` (held to the promised default).
  const relaxed = id.startsWith('relaxed/');
  const opensDefault = id.startsWith('default/');
  let rest = relaxed ? id.slice('relaxed/'.length) : opensDefault ? id.slice('default/'.length) : id;
  // A run of the write-path workload carries its prefix next: `write-path/error:17:EIO:once`.
  const writePath = rest.startsWith(`${WRITE_PATH.id}/`);
  if (writePath) rest = rest.slice(WRITE_PATH.id.length + 1);
  const mode: SweepMode = {
    durability: relaxed ? 'relaxed' : opensDefault ? (driver.defaultDurability ?? 'strict') : 'strict',
    ...(opensDefault && { opensDefault }),
    sample: 1,
    ...(writePath && { workload: WRITE_PATH }),
  };
  const target = parseReplayId(rest);
  if (target.kind === 'error') {
    const { fault } = target;
    const described = `${fault.shortWrite ? 'short write' : `${fault.errno} ${fault.mode}`} at op ${fault.at}`;
    if (driver.kind === 'fs') {
      const run = await runFsOnce(
        driver,
        [
          {
            at: fault.at,
            errno: fault.errno,
            mode: fault.mode,
            ...(fault.shortWrite && { kind: 'short-write' as const }),
          },
        ],
        undefined,
        undefined,
        mode,
      );
      const entry = run.trace[fault.at - 1];
      const where = entry === undefined ? '' : ` (${entry.op} ${entry.path ?? ''})`;
      return { fault: `${described}${where}`, injected: run.injected > 0, outcome: run.check.outcome };
    }
    const run = await runEngineOnce(driver, fault, mode);
    return { fault: described, injected: run.injected > 0, outcome: run.check.outcome };
  }
  if (driver.kind !== 'fs') throw new Error(`${driver.name} has no crash sweep to replay`);
  const { recorded } = await recordCrashPoints(driver, quick, mode);
  // The last: the point after a relaxed close() shares its op with the last one during it, and
  // holds the stricter model.
  const at = recorded.findLastIndex((r) => r.point.afterOp === target.afterOp);
  const crash = recorded[at];
  if (crash === undefined)
    throw new Error(
      `no crash point after op ${target.afterOp}${quick ? ' in a quick run' : ''} (replay with the same --quick as the report)`,
    );
  const states = crashStatesAt(recorded, at, quick ? QUICK_CRASH_LIMITS : FULL_CRASH_LIMITS);
  const state = states[target.stateIndex];
  if (state === undefined)
    throw new Error(
      `crash point after op ${target.afterOp} has ${states.length} states, not ${target.stateIndex + 1}`,
    );
  const check = await checkCrashState(driver, state, crash.model, mode);
  return {
    fault: `crash after op ${crash.point.afterOp} (${crash.point.op}), ${state.label}`,
    injected: true,
    outcome: check.outcome,
  };
}
