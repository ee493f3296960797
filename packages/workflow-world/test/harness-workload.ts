// The World's workload for the fault harness: one run driven through every kind of event a
// workflow makes (steps, a lazily started step, a hook with a token, a wait, stream chunks, the
// run's end), a ledger of which calls were acknowledged, and the checks made after a fault: every
// acknowledged event is in the run's log, once, in the order it was acknowledged, followed at most
// by the events of the one call in doubt; an acknowledged run is never reported missing; the
// stream holds every acknowledged chunk in order; and the run goes on from its log to the end.
import { isTidemarkError, type SessionStore } from '@tidemark/core';
import type { AnyEventRequest, World } from '@workflow/world';
import { SPEC_VERSION_CURRENT } from '@workflow/world';
import { bytes, create, req, worldOn } from './world-fixtures.js';

type Call =
  | { kind: 'create'; request: AnyEventRequest; types: string[] }
  | { kind: 'write'; chunk: string }
  | { kind: 'close' };

const lazyStart = {
  eventType: 'step_started',
  specVersion: SPEC_VERSION_CURRENT,
  correlationId: 's2',
  eventData: { stepName: 'add', input: bytes('s2-in') },
} as AnyEventRequest;
const c = (request: AnyEventRequest, types = [request.eventType]): Call => ({
  kind: 'create',
  request,
  types,
});

/** The workload's calls, in order. */
export const CALLS: readonly Call[] = [
  c(req.runCreated()),
  c(req.runStarted()),
  c(req.stepCreated('s1')),
  c(req.stepStarted('s1')),
  c(req.stepCompleted('s1')),
  c(req.hookCreated('h1', 'token-1')),
  { kind: 'write', chunk: 'c1' },
  c(req.waitCreated('w1')),
  c(req.waitCompleted('w1')),
  c(req.hookReceived('h1')),
  c(req.hookDisposed('h1')),
  c(lazyStart, ['step_created', 'step_started']),
  c(req.stepCompleted('s2')),
  { kind: 'write', chunk: 'c2' },
  { kind: 'close' },
  c(req.runCompleted()),
];

/** What was acknowledged: the events of each acknowledged create, the acknowledged chunks. */
export class Ledger {
  /** Each acknowledged event as `type correlationId eventId` (the id known only for a call's last event). */
  events: string[] = [];
  chunks: string[] = [];
  closed = false;
  /** Calls acknowledged, in order (the next call is CALLS[acked]). */
  acked = 0;
  snapshot(): LedgerSnapshot {
    return { events: [...this.events], chunks: [...this.chunks], closed: this.closed, acked: this.acked };
  }
}
export type LedgerSnapshot = Pick<Ledger, 'events' | 'chunks' | 'closed' | 'acked'>;

const entry = (type: string, correlationId: string | undefined, eventId: string | undefined) =>
  `${type} ${correlationId ?? '-'} ${eventId ?? '?'}`;

async function perform(w: World, runId: string, call: Call): Promise<string | undefined> {
  if (call.kind === 'write') await w.streams.write(runId, `${runId}-out`, call.chunk);
  else if (call.kind === 'close') await w.streams.close(runId, `${runId}-out`);
  else return (await create(w, runId, call.request)).event?.eventId;
  return undefined;
}

/** Runs the calls from `ledger.acked` on; stops at the first rejection, which must be a TidemarkError. */
export async function runWorkload(
  store: SessionStore,
  runId: string,
  ledger: Ledger,
): Promise<{ rejected?: unknown; violations: string[] }> {
  const w = worldOn(store);
  while (ledger.acked < CALLS.length) {
    const call = CALLS[ledger.acked] as Call;
    let eventId: string | undefined;
    try {
      eventId = await perform(w, runId, call);
    } catch (error) {
      const violations = isTidemarkError(error)
        ? []
        : [`call ${ledger.acked} rejected untyped: ${String(error)}`];
      return { rejected: error, violations };
    }
    if (call.kind === 'create' && eventId !== undefined) {
      const last = call.types.length - 1;
      for (const [i, type] of call.types.entries())
        ledger.events.push(entry(type, call.request.correlationId, i === last ? eventId : undefined));
    }
    if (call.kind === 'write') ledger.chunks.push(call.chunk);
    if (call.kind === 'close') ledger.closed = true;
    ledger.acked++;
  }
  return { violations: [] };
}

/** The checks after a fault or a crash, on a World over `store`. */
export async function checkRun(
  store: SessionStore,
  runId: string,
  seen: LedgerSnapshot,
  where: string,
): Promise<string[]> {
  const w = worldOn(store);
  const out: string[] = [];
  let log: { eventId: string; eventType: string; correlationId?: string }[] = [];
  try {
    log = (await w.events.list({ runId, pagination: { limit: 1000 } })).data;
    if (seen.events.length > 0) await w.runs.get(runId);
  } catch (error) {
    return [`${where}: reading the run failed: ${String(error)}`];
  }
  const ids = log.map((e) => e.eventId);
  if (new Set(ids).size !== ids.length) out.push(`${where}: an event is in the log twice`);
  const prefix = log
    .slice(0, seen.events.length)
    .map((e, i) =>
      entry(e.eventType, e.correlationId, seen.events[i]?.endsWith(' ?') ? undefined : e.eventId),
    );
  if (JSON.stringify(prefix) !== JSON.stringify(seen.events))
    out.push(`${where}: the log does not start with the ${seen.events.length} acknowledged events in order`);
  const next = CALLS[seen.acked];
  const extra = log.slice(seen.events.length).map((e) => e.eventType);
  const allowed = next?.kind === 'create' ? next.types : [];
  // A create is one atomic append: its events are all in the log after the acknowledged ones, or none.
  if (extra.length > 0 && JSON.stringify(extra) !== JSON.stringify(allowed))
    out.push(
      `${where}: events beyond the acknowledged ones that the call in doubt does not make: ${extra.join(', ')}`,
    );
  try {
    const page = await w.streams.getChunks(runId, `${runId}-out`, { limit: 1000 });
    const chunks = page.data.map((ch) => new TextDecoder().decode(ch.data));
    const inDoubt = next?.kind === 'write' ? [next.chunk] : [];
    if (
      JSON.stringify(chunks) !== JSON.stringify(seen.chunks) &&
      JSON.stringify(chunks) !== JSON.stringify([...seen.chunks, ...inDoubt])
    )
      out.push(`${where}: stream holds ${chunks.join(',')} where ${seen.chunks.join(',')} were acknowledged`);
    if (seen.closed && !page.done) out.push(`${where}: an acknowledged close is lost`);
  } catch (error) {
    out.push(`${where}: reading the stream failed: ${String(error)}`);
  }
  return out;
}

/**
 * Runs the workload on to the end from what the store holds: the call in doubt may have landed,
 * and then the World's rules refuse it the second time (the caller's retry), which is accepted once.
 */
export async function continueRun(
  store: SessionStore,
  runId: string,
  seen: LedgerSnapshot,
  where: string,
): Promise<string[]> {
  const w = worldOn(store);
  for (let i = seen.acked; i < CALLS.length; i++) {
    try {
      await perform(w, runId, CALLS[i] as Call);
    } catch (error) {
      const refusedRetry = i === seen.acked && !isTidemarkError(error);
      const closedAgain = i === seen.acked && isTidemarkError(error, 'INVALID') && CALLS[i]?.kind === 'write';
      if (!refusedRetry && !closedAgain) return [`${where}: continuing, call ${i} failed: ${String(error)}`];
    }
  }
  const run = await w.runs.get(runId);
  const events = (await w.events.list({ runId, pagination: { limit: 1000 } })).data;
  const out: string[] = [];
  if (run.status !== 'completed') out.push(`${where}: run ends ${run.status}`);
  const count = (type: string, id?: string) =>
    events.filter((e) => e.eventType === type && (id === undefined || e.correlationId === id)).length;
  for (const [type, id] of [
    ['run_completed'],
    ['step_completed', 's1'],
    ['step_completed', 's2'],
    ['hook_created', 'h1'],
    ['wait_completed', 'w1'],
  ] as const)
    if (count(type, id) !== 1) out.push(`${where}: ${count(type, id)} × ${type} ${id ?? ''}`);
  return out;
}
