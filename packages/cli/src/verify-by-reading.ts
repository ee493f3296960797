// The portable read-only check of any store: what `verify` finds through the store contract
// alone, for a backend without a check of its own (and beside the database check of SQLite).
import {
  boundaryPredicate,
  commitStateOf,
  type SessionEvent,
  type SessionStore,
  toIoError,
} from '@tidemark/core';
import type { VerifyFinding } from './maintenance-types.js';

/**
 * The portable check: streams every event through `read` (which writes nothing), checking that
 * seqs are contiguous from 0 and that the summary's count matches; reports read errors with their
 * location and interrupted turns.
 */
export async function verifyByReading(store: SessionStore, id?: string): Promise<VerifyFinding[]> {
  const findings: VerifyFinding[] = [];
  const targets: { id: string; eventCount?: number }[] =
    id !== undefined ? [{ id }] : await listTargets(store, findings);
  for (const target of targets) findings.push(...(await readOne(store, target, id !== undefined)));
  return findings;
}

/** Every session `list` describes; the ones it cannot are added to `findings`. */
async function listTargets(
  store: SessionStore,
  findings: VerifyFinding[],
): Promise<{ id: string; eventCount: number }[]> {
  const targets: { id: string; eventCount: number }[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.list({ limit: 1000, ...(cursor !== undefined && { cursor }) });
    targets.push(...page.sessions.map((s) => ({ id: s.id, eventCount: s.eventCount })));
    for (const problem of page.problems) {
      findings.push({
        kind: problem.error.code === 'CORRUPT' ? 'corrupt' : 'problem',
        sessionId: problem.id,
        message: `${problem.error.code}: ${problem.error.message}`,
        ...(problem.error.location !== undefined && { location: problem.error.location }),
      });
    }
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return targets;
}

/** The findings of reading one session; with `single`, a session that is not there is thrown. */
async function readOne(
  store: SessionStore,
  target: { id: string; eventCount?: number },
  single: boolean,
): Promise<VerifyFinding[]> {
  const findings: VerifyFinding[] = [];
  const seqTypes: Pick<SessionEvent, 'seq' | 'type'>[] = [];
  try {
    for await (const event of store.read(target.id)) {
      if (event.seq !== seqTypes.length) {
        findings.push({
          kind: 'corrupt',
          sessionId: target.id,
          message: `seq gap: expected ${seqTypes.length}, found ${event.seq}`,
          location: { seq: seqTypes.length },
        });
        break;
      }
      seqTypes.push({ seq: event.seq, type: event.type });
    }
  } catch (error) {
    const typed = toIoError(error, `reading ${target.id}`, target.id);
    if (typed.code === 'NOT_FOUND' && single) throw typed;
    findings.push({
      kind:
        typed.code === 'CORRUPT'
          ? 'corrupt'
          : typed.code === 'UNSUPPORTED_FORMAT'
            ? 'unsupported-format'
            : 'problem',
      sessionId: target.id,
      message: `${typed.code}: ${typed.message}`,
      ...(typed.location !== undefined && { location: typed.location }),
    });
    return findings;
  }
  if (target.eventCount !== undefined && target.eventCount !== seqTypes.length) {
    findings.push({
      kind: 'problem',
      sessionId: target.id,
      message: `summary says ${target.eventCount} events, the log holds ${seqTypes.length}`,
    });
  }
  const state = commitStateOf(seqTypes, boundaryPredicate());
  if (state.interrupted) {
    findings.push({
      kind: 'interrupted',
      sessionId: target.id,
      message: `interrupted turn: ${seqTypes.length - 1 - state.committedSeq} event(s) after the last boundary (seq ${state.committedSeq})`,
      location: { seq: state.committedSeq + 1 },
    });
  }
  return findings;
}
