// Read-only verification of one session, for `verify()`: the log is scanned once (bounded memory),
// judged against its sidecar as load judges it, and what it finds is reported in core's shape.
import {
  advanceCommitState,
  type CommitState,
  errors,
  type HealthKind,
  type MaintenanceProblem,
  type SessionHealth,
} from '@tidemark/core';
import { locate } from './catalog.js';
import type { StoreContext } from './context.js';
import { ioOrAbsent, quietly } from './errors.js';
import { scanHandle } from './files.js';
import type { ScanEnd } from './scan.js';
import { settledAgainstSidecar } from './summary.js';

/**
 * Checks the log of `id` without changing anything (no repair, no lock, no sidecar write). The
 * status is the worst finding: a problem (`corrupt`, `unsupported-format`, also a log holding
 * another session's header) before a torn tail before an interrupted turn; each finding is a
 * problem of its own, naming the log file and its byte offset or seq.
 */
export async function verifyLog(ctx: StoreContext, id: string): Promise<SessionHealth> {
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
    const problems = findingsOf(id, paths.log, end, state);
    const status: HealthKind = problems[0]?.kind ?? 'ok';
    return { sessionId: id, status, eventCount: end.eventCount, committedSeq: state.committedSeq, problems };
  } finally {
    await quietly(() => handle.close());
  }
}

/** What a settled scan of the log `file` says, worst first. */
function findingsOf(id: string, file: string, end: ScanEnd, state: CommitState): MaintenanceProblem[] {
  const found: MaintenanceProblem[] = [];
  const foreign = end.problem === undefined && end.header !== undefined && end.header.meta.id !== id;
  if (foreign) {
    const message = `the log holds the header of session ${end.header!.meta.id}`;
    found.push({ kind: 'corrupt', sessionId: id, message, offset: 0, file });
  } else if (end.problem !== undefined) {
    const { kind, message, offset, seq } = end.problem;
    found.push({ kind, sessionId: id, message, offset, file, ...(seq !== undefined && { seq }) });
  }
  if (found.length === 0 && end.torn !== undefined) {
    const { offset, length, reason } = end.torn;
    found.push({
      kind: 'torn',
      sessionId: id,
      message: `torn tail of ${length} byte(s) (${reason}) at byte ${offset} of a ${end.totalBytes}-byte log: an unfinished write, which repair (or the next load) quarantines`,
      seq: end.nextSeq,
      offset,
      bytes: length,
      file,
    });
  }
  if (state.interrupted) {
    const after = end.eventCount - 1 - state.committedSeq;
    found.push({
      kind: 'interrupted',
      sessionId: id,
      message: `interrupted turn: ${after} event(s) after the last boundary (seq ${state.committedSeq})`,
      seq: state.committedSeq + 1,
      file,
    });
  }
  return found;
}
