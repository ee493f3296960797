// Recovery is read twice. A repair can look right to the reads that follow it and still leave the
// log unfit for the next append (a fragment cut short by a byte, a writer positioned past the end):
// the damage shows only once that append is read back. So after every recovery the harness
// appends (verify.ts), closes, reopens and reads everything again, and compares with the model.
import type { SessionStore } from '@tidemark/core';
import { type Checker, checkList } from '../workload/runner.js';
import { shownFields, type WorkloadModel } from './model.js';
import { verifyAfterLift } from './verify.js';

/**
 * Reopens the store after a fault was lifted (or on a crash state), checks the invariants
 * ({@link verifyAfterLift}), appends, closes, and reads everything once more through a second
 * reopen ({@link rereadAfterRecovery}).
 */
export async function reopenAndVerify(
  open: () => Promise<SessionStore>,
  model: WorkloadModel,
  check: Checker,
  crash: boolean,
): Promise<void> {
  const reopened = await check.attempt('reopen after lift', open);
  if (!reopened.ok) {
    check.outcome.lostEvents += model.ackedEvents;
    check.violation(
      'not-writable',
      `the store cannot be reopened after the fault was lifted: ${reopened.error?.message ?? ''}`,
    );
    return;
  }
  await verifyAfterLift(reopened.value, model, check, { crash });
  await check.attempt('close', () => reopened.value.close());
  await rereadAfterRecovery(open, model, check);
}

/**
 * The second reading after a recovery: the store reopened once more must show exactly what the
 * first reading showed plus the appends made since (the model was settled on both), nothing
 * absent, nothing more, and list() must agree with the logs.
 */
export async function rereadAfterRecovery(
  open: () => Promise<SessionStore>,
  model: WorkloadModel,
  check: Checker,
): Promise<void> {
  const step = check.step;
  check.step = 'second reopen after recovery';
  try {
    const reopened = await check.attempt('second reopen after recovery', open);
    if (!reopened.ok) {
      check.outcome.lostEvents += model.ackedEvents;
      check.violation('not-writable', `the store cannot be reopened again: ${reopened.error?.message ?? ''}`);
      return;
    }
    const store = reopened.value;
    const lengths = new Map<string, number>();
    for (const session of model.sessions.values()) {
      const loaded = await check.attempt(`load(${session.id}) again`, () => store.load(session.id));
      if (!loaded.ok && loaded.error?.code !== 'NOT_FOUND' && session.exists === 'yes') {
        check.outcome.lostEvents += session.acked.length;
        check.violation(
          'lost-event',
          `load(${session.id}) fails on the second reopen after recovery: ${loaded.error?.code} ${loaded.error?.message ?? ''}`,
        );
        continue;
      }
      if (!loaded.ok && session.exists === 'yes') check.outcome.lostEvents += session.acked.length;
      check.load(session, loaded, true);
      if (loaded.ok) lengths.set(session.id, loaded.value.events.length);
    }
    await rereadList(store, model, check, lengths);
    await check.attempt('close', () => store.close());
  } finally {
    check.step = step;
  }
}

async function rereadList(
  store: SessionStore,
  model: WorkloadModel,
  check: Checker,
  lengths: ReadonlyMap<string, number>,
): Promise<void> {
  const page = await check.attempt('list again', () => store.list());
  if (!page.ok) {
    check.violation('not-writable', `list() fails on the second reopen: ${page.error?.message ?? ''}`);
    return;
  }
  checkList(check, model, page.value, undefined, true);
  const known = new Map([...model.sessions.values()].map((s) => [s.id, s]));
  for (const summary of page.value.sessions) {
    const session = known.get(summary.id);
    if (session !== undefined && session.exists !== 'no' && !session.fieldsMatch(shownFields(summary)))
      check.violation(
        'lost-update',
        `on the second reopen list() shows ${summary.id} with title/tags ${JSON.stringify([summary.title ?? null, summary.tags ?? null])}, first shown: ${session.describeFields()}`,
      );
    const length = lengths.get(summary.id);
    if (length !== undefined && summary.eventCount !== length)
      check.violation(
        'stale-summary',
        `on the second reopen list() says ${summary.id} has ${summary.eventCount} events, load returns ${length}`,
      );
  }
}
