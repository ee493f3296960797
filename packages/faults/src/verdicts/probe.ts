import type { SessionStore } from '@tidemark/core';
import { type Checker, checkList } from '../workload/runner.js';
import { canonicalEvent, workloadEvent } from '../workload/workload.js';
import type { WorkloadModel } from './model.js';

/**
 * Checks a store while a real fault is in place: every call succeeds or rejects with a
 * TidemarkError, no acknowledged session is reported absent, and no load returns a shortened
 * history. With `destructive` damage (corruption), a typed error is the right answer for data the
 * damage destroyed; without it, successful answers must hold every acknowledged event.
 */
export async function probeStore(
  open: () => Promise<SessionStore>,
  model: WorkloadModel,
  check: Checker,
  destructive: boolean,
  /** After a crash, a whole batch that was in flight may be present. */
  allowInDoubt = false,
): Promise<void> {
  const opened = await check.attempt('open under fault', open);
  if (!opened.ok) {
    check.openAnswer(opened.error);
    return;
  }
  const store = opened.value;
  for (const session of model.sessions.values()) {
    const has = await check.attempt(`has(${session.id})`, () => store.has(session.id));
    if (has.ok) check.has(session, has.value);
    const loaded = await check.attempt(`load(${session.id})`, () => store.load(session.id));
    check.load(session, loaded, allowInDoubt);
  }
  const page = await check.attempt('list', () => store.list());
  if (page.ok) checkList(check, model, page.value, undefined, false);
  // A write under the fault: typed error or success (then it is acknowledged and must survive).
  for (const session of model.sessions.values()) {
    if (session.exists !== 'yes') continue;
    const seq = session.acked.length;
    // Large enough to need new pages or blocks: a full disk or database must refuse it.
    const big = {
      ...workloadEvent(session.key, seq, 'user/message'),
      data: { role: 'user', text: 'y'.repeat(64 * 1024) },
    };
    const events = [big, workloadEvent(session.key, seq + 1, 'turn/end')];
    const appended = await check.attempt(`append(${session.id}) under fault`, () =>
      store.append(session.id, events),
    );
    if (appended.ok && !destructive) session.ack(events.map(canonicalEvent), true);
    break;
  }
  await check.attempt('close', () => store.close());
}
