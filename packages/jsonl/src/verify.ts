// Read-only verification and explicit repair of one session, for `tidemark verify` / `repair`,
// and the tail cut that `load({ tail: 'cut' })` shares with repair.
import { advanceCommitState, type CommitState, errors, type RecoveryReport } from '@tidemark/core';
import { assertRealBucket, locate } from './catalog.js';
import type { StoreContext, Writer } from './context.js';
import { io, ioOrAbsent, quietly } from './errors.js';
import { scanHandle } from './files.js';
import type { SessionPaths } from './layout.js';
import { applyCut, dropCorruptEnd, prepareCut } from './recovery.js';
import type { ScanProblem, TornTail } from './scan.js';
import { settledAgainstSidecar } from './summary.js';
import { ensureWriter, lockSession, retireWriter } from './writers.js';

/** What {@link verifySession} found. */
export interface VerifyReport {
  id: string;
  /** The log file. */
  path: string;
  /**
   * `ok`: every byte belongs to a committed batch and the last event is a boundary;
   * `interrupted`: complete events follow the last boundary (a turn cut short);
   * `torn`: the log ends in a torn fragment (see {@link VerifyReport.torn});
   * `corrupt` / `unsupported-format`: see {@link VerifyReport.problem}.
   */
  status: 'ok' | 'interrupted' | 'torn' | 'corrupt' | 'unsupported-format';
  /** Committed events before any torn tail or problem. */
  eventCount: number;
  committedSeq: number;
  interrupted: boolean;
  /** Log length in bytes. */
  bytes: number;
  torn?: TornTail;
  problem?: ScanProblem;
}

/** What {@link JsonlStore.repair} may remove. */
export interface RepairOptions {
  /** `cut` also moves the interrupted tail to quarantine. Default `keep`. */
  tail?: 'keep' | 'cut';
  /**
   * Also repair a CORRUPT log: everything from the first damaged byte on (including later valid
   * events, which can no longer be trusted to be contiguous) goes to quarantine. Default false.
   */
  dropCorrupt?: boolean;
}

/** The outcome of {@link JsonlStore.repair}. */
export interface RepairReport extends RecoveryReport {
  /** Bytes taken out of a corrupt log (with `dropCorrupt`). */
  corruptBytes?: number;
  /** Every quarantine file written by this repair. */
  quarantined: string[];
  /** Events in the log after the repair. */
  eventCount: number;
}

/** Checks the log of `id` without changing anything (no repair, no lock, no sidecar write). Bounded memory. */
export async function verifyLog(ctx: StoreContext, id: string): Promise<VerifyReport> {
  const paths = await locate(ctx, id);
  if (paths === undefined) throw errors.notFound(id);
  const handle = await ioOrAbsent(`opening ${paths.log}`, id, () => ctx.fs.open(paths.log, 'r'));
  if (handle === undefined) throw errors.notFound(id);
  try {
    let state: CommitState = { committedSeq: -1, interrupted: false };
    const scanned = await scanHandle(handle, `reading ${paths.log}`, id, {
      onBatch: (batch) => {
        state = advanceCommitState(state, batch.events, ctx.isBoundary);
        return true;
      },
    });
    const end = await settledAgainstSidecar(ctx, scanned, paths, id);
    const report: VerifyReport = {
      id,
      path: paths.log,
      status: 'ok',
      eventCount: end.eventCount,
      committedSeq: state.committedSeq,
      interrupted: state.interrupted,
      bytes: end.totalBytes,
    };
    if (end.problem === undefined && end.header !== undefined && end.header.meta.id !== id) {
      report.problem = {
        kind: 'corrupt',
        offset: 0,
        message: `the log holds the header of session ${end.header.meta.id}`,
      };
      report.status = 'corrupt';
    } else if (end.problem !== undefined) {
      report.problem = end.problem;
      report.status = end.problem.kind;
    } else if (end.torn !== undefined) {
      report.torn = end.torn;
      report.status = 'torn';
    } else if (state.interrupted) {
      report.status = 'interrupted';
    }
    return report;
  } finally {
    await quietly(() => handle.close());
  }
}

/**
 * Explicit repair of `id` (in its queue): sets torn bytes aside, with `tail: 'cut'` the
 * interrupted tail, and with `dropCorrupt` everything from the first damaged byte of a corrupt
 * log. Every removed byte goes to `<root>/.quarantine/` first.
 */
export async function repairLog(
  ctx: StoreContext,
  id: string,
  options: RepairOptions,
): Promise<RepairReport> {
  const quarantined: string[] = [];
  const report: RepairReport = { quarantined, eventCount: 0 };
  const paths = await locate(ctx, id);
  if (paths === undefined) throw errors.notFound(id);
  if (options.dropCorrupt === true) {
    const dropped = await dropCorrupt(ctx, id, paths);
    if (dropped !== undefined) {
      report.corruptBytes = dropped.bytes;
      quarantined.push(dropped.path);
    }
  }
  const writer = await ensureWriter(ctx, id);
  if (writer === undefined) throw errors.notFound(id);
  if (writer.repaired !== undefined) {
    Object.assign(report, writer.repaired);
    if (writer.repaired.quarantinedAt !== undefined) quarantined.push(writer.repaired.quarantinedAt);
    writer.repaired = undefined;
  }
  if (options.tail === 'cut') {
    const cut = await cutTail(ctx, writer);
    if (cut !== undefined) {
      report.cutEvents = cut.cutEvents;
      report.quarantinedAt = cut.quarantinedAt;
      quarantined.push(cut.quarantinedAt);
    }
  }
  report.eventCount = writer.nextSeq;
  return report;
}

/**
 * `tail: 'cut'`: moves the events after the last boundary to quarantine (see prepareCut and
 * applyCut). Undefined when the log is not interrupted.
 */
export async function cutTail(
  ctx: StoreContext,
  writer: Writer,
): Promise<{ cutEvents: number; quarantinedAt: string } | undefined> {
  const plan = await prepareCut(ctx, writer);
  if (plan === undefined) return undefined;
  try {
    await applyCut(ctx, writer, plan);
  } catch (error) {
    // The log may be shortened or replaced by now: this writer's descriptor, size and next seq
    // no longer describe it. Drop it, so that the next use rescans the log.
    await quietly(() => retireWriter(ctx, writer.id, false));
    throw error;
  }
  writer.size = plan.newSize;
  writer.nextSeq = plan.firstCut;
  writer.sidecarSize = plan.newSize;
  return { cutEvents: plan.cutEvents, quarantinedAt: plan.quarantinedAt };
}

/** `repair({ dropCorrupt })`: retires this instance's writer, takes the lock, drops the corrupt end. */
async function dropCorrupt(
  ctx: StoreContext,
  id: string,
  paths: SessionPaths,
): Promise<{ bytes: number; path: string } | undefined> {
  await quietly(() => retireWriter(ctx, id, false));
  await assertRealBucket(ctx, paths, id);
  const lock = await lockSession(ctx, paths, id);
  try {
    const handle = await io(`opening ${paths.log}`, id, () => ctx.fs.open(paths.log, 'r+'));
    try {
      return await dropCorruptEnd(ctx, handle, paths, id);
    } finally {
      await quietly(() => handle.close());
    }
  } finally {
    if (lock !== undefined) await quietly(() => lock.release());
  }
}
