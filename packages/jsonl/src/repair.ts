// Explicit repair of one session, for `repair()`, and the tail cut that `load({ tail: 'cut' })`
// shares with it. Every removed byte goes to `<root>/.quarantine/` first (recovery.ts); the report
// is core's, one removed problem per thing set aside.
import { errors, type MaintenanceProblem, type RepairOptions, type RepairReport } from '@tidemark/core';
import { assertRealBucket, locate } from './catalog.js';
import { recordBeforeUnlock } from './catalog-record.js';
import type { StoreContext, TornRepair, Writer } from './context.js';
import { io, quietly } from './errors.js';
import type { SessionPaths } from './layout.js';
import { applyCut, type CutPlan, type DroppedEnd, dropCorruptEnd, prepareCut } from './recovery.js';
import { ensureWriter, lockSession, retireWriter } from './writers.js';

/**
 * Explicit repair of `id` (in its queue): sets torn bytes aside, with `tail: 'cut'` the
 * interrupted tail, and with `dropCorrupt` everything from the first damaged byte of a corrupt
 * log. NOT_FOUND when the session has no log.
 */
export async function repairLog(
  ctx: StoreContext,
  id: string,
  options: Required<RepairOptions>,
): Promise<RepairReport> {
  const report: RepairReport = { sessionId: id, eventCount: 0, removed: [], quarantined: [] };
  const paths = await locate(ctx, id);
  if (paths === undefined) throw errors.notFound(id);
  if (options.dropCorrupt) {
    const dropped = await dropCorrupt(ctx, id, paths);
    if (dropped !== undefined) {
      report.corruptBytes = dropped.bytes;
      noteRemoved(report, droppedProblem(id, paths.log, dropped));
    }
  }
  const writer = await ensureWriter(ctx, id);
  if (writer === undefined) throw errors.notFound(id);
  const torn = writer.repaired;
  writer.repaired = undefined;
  if (torn !== undefined) {
    report.tornBytes = torn.tornBytes;
    noteRemoved(report, tornProblem(id, writer.paths.log, torn));
  }
  if (options.tail === 'cut') {
    const cut = await cutTail(ctx, writer);
    if (cut !== undefined) {
      report.cutEvents = cut.cutEvents;
      noteRemoved(report, cutProblem(id, writer.paths.log, cut));
    }
  }
  report.eventCount = writer.nextSeq;
  return report;
}

function noteRemoved(report: RepairReport, problem: MaintenanceProblem & { quarantinedAt: string }): void {
  report.removed.push(problem);
  report.quarantined.push(problem.quarantinedAt);
}

function droppedProblem(
  id: string,
  file: string,
  dropped: DroppedEnd,
): MaintenanceProblem & { quarantinedAt: string } {
  return {
    kind: 'corrupt',
    sessionId: id,
    message: `corrupt end of ${dropped.bytes} byte(s) from byte ${dropped.offset} set aside (${dropped.damage})`,
    seq: dropped.seq,
    offset: dropped.offset,
    bytes: dropped.bytes,
    file,
    quarantinedAt: dropped.path,
  };
}

function tornProblem(
  id: string,
  file: string,
  torn: TornRepair,
): MaintenanceProblem & { quarantinedAt: string } {
  return {
    kind: 'torn',
    sessionId: id,
    message: `torn tail of ${torn.tornBytes} byte(s) (${torn.reason}) at byte ${torn.offset} set aside`,
    seq: torn.seq,
    offset: torn.offset,
    bytes: torn.tornBytes,
    file,
    quarantinedAt: torn.quarantinedAt,
  };
}

function cutProblem(id: string, file: string, cut: CutPlan): MaintenanceProblem & { quarantinedAt: string } {
  return {
    kind: 'interrupted',
    sessionId: id,
    message: `interrupted turn: ${cut.cutEvents} event(s) from seq ${cut.firstCut} cut (the ${cut.quarantinedBytes} byte(s) from byte ${cut.offset} set aside)`,
    seq: cut.firstCut,
    offset: cut.offset,
    bytes: cut.quarantinedBytes,
    file,
    quarantinedAt: cut.quarantinedAt,
  };
}

/**
 * `tail: 'cut'`: moves the events after the last boundary to quarantine (see prepareCut and
 * applyCut). Undefined when the log is not interrupted.
 */
export async function cutTail(ctx: StoreContext, writer: Writer): Promise<CutPlan | undefined> {
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
  writer.last = undefined; // another event ends the log now; read if an append asks for it
  writer.sidecarSize = plan.newSize;
  return plan;
}

/** `repair({ dropCorrupt })`: retires this instance's writer, takes the lock, drops the corrupt end. */
async function dropCorrupt(
  ctx: StoreContext,
  id: string,
  paths: SessionPaths,
): Promise<DroppedEnd | undefined> {
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
    if (lock !== undefined) {
      await recordBeforeUnlock(ctx, paths, id);
      await quietly(() => lock.release());
    }
  }
}
